//! Invite codes: eight letters and digits from the OS's randomness (about 40 bits), shown
//! as `ABCD-EFGH` and read back whatever its case, spaces or dashes; only its SHA-256 is
//! stored. Wrong codes are counted in the database (`ports::join_locked`), so every worker
//! counts them. The reminder to strangers is said once a day at most, remembered in memory
//! within a bound, so a flood of senders cannot grow it.

use std::collections::HashMap;

/// Letters and digits that cannot be mistaken for one another (no 0/O, 1/I/L).
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
pub const CODE_LENGTH: usize = 8;
const STRANGER_TOLD_EVERY_MS: i64 = 24 * 60 * 60 * 1000;
/// Strangers remembered as told; past it the oldest half is forgotten.
const REMEMBERED: usize = 4096;

pub use crate::secrets::NoRandomness;

/// A new code, as shown: `ABCD-EFGH`.
pub fn new_code() -> Result<String, NoRandomness> {
    let letters = crate::secrets::random_text::<CODE_LENGTH>(ALPHABET)?;
    Ok(format!("{}-{}", &letters[..4], &letters[4..]))
}

/// `text` as a code (`abcd efgh`, `ABCD-EFGH`), if it can be one.
pub fn read_code(text: &str) -> Option<String> {
    let code: String = text
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == CODE_LENGTH && code.bytes().all(|byte| ALPHABET.contains(&byte))).then_some(code)
}

/// What the database keeps of a code read by `read_code`.
pub fn code_hash(code: &str) -> String {
    crate::secrets::sha256_hex(code.as_bytes())
}

/// When each stranger was last told how to join.
#[derive(Debug, Default)]
pub struct StrangersTold {
    told: HashMap<String, i64>,
}

impl StrangersTold {
    /// Whether stranger `user` is to be told how to join now (once a day at most); noted.
    pub fn tell(&mut self, user: &str, now_ms: i64) -> bool {
        if self
            .told
            .get(user)
            .is_some_and(|at| now_ms - at < STRANGER_TOLD_EVERY_MS)
        {
            return false;
        }
        if self.told.len() >= REMEMBERED {
            forget_oldest(&mut self.told, |at| *at);
        }
        self.told.insert(user.to_string(), now_ms);
        true
    }
}

/// Forget the older half of `map` by `at`.
fn forget_oldest<V>(map: &mut HashMap<String, V>, at: impl Fn(&V) -> i64) {
    let mut times: Vec<i64> = map.values().map(&at).collect();
    times.sort_unstable();
    let middle = times[times.len() / 2];
    map.retain(|_, value| at(value) > middle);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_read_back_in_any_case_and_spacing() {
        let code = new_code().unwrap();
        assert_eq!(code.len(), CODE_LENGTH + 1);
        let plain = code.replace('-', "");
        assert_eq!(read_code(&code).as_deref(), Some(plain.as_str()));
        assert_eq!(
            read_code(&code.to_lowercase().replace('-', " ")).as_deref(),
            Some(plain.as_str())
        );
        assert_eq!(read_code("ABCD-EFG"), None);
        assert_eq!(read_code("ABCD-EFG0"), None, "0 is not in the alphabet");
        assert_ne!(new_code().unwrap(), code);
        assert_eq!(code_hash(&plain).len(), 64);
        assert!(!code_hash(&plain).contains(&plain));
    }

    #[test]
    fn a_stranger_is_told_once_a_day_and_the_memory_stays_bounded() {
        let mut told = StrangersTold::default();
        assert!(told.tell("matrix:@x:y", 0));
        assert!(!told.tell("matrix:@x:y", STRANGER_TOLD_EVERY_MS - 1));
        assert!(told.tell("matrix:@x:y", STRANGER_TOLD_EVERY_MS));
        for n in 0..(REMEMBERED * 3) {
            told.tell(&format!("telegram:{n}"), n as i64);
        }
        assert!(told.told.len() <= REMEMBERED);
    }
}
