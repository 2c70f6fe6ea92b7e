//! What hearth's fuzz targets check: reading a target's input written as `key: value`
//! lines ([`fields`]), checking rendered HTML against what Telegram and Matrix accept and
//! reading back the text a reader sees ([`html`]), JSON whose reading is ambiguous
//! ([`json`]), and checking that a refusal names its
//! file and key ([`refusal`]); a scratch folder and a runtime made once per process
//! ([`scratch`]).
//!
//! Every target asserts properties, not only "no panic": a failed assertion is a crash,
//! and libFuzzer keeps the input that made it.

pub mod fields;
pub mod html;
pub mod json;
pub mod refusal;
pub mod scratch;

/// The input as text, when it is UTF-8 (a chat platform and the model only ever hand
/// hearth UTF-8 strings).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
