//! The request every LLM call is made with: `GenerateChat`, one chat completion on a model
//! named in config `llms`, and where it comes from (`CallOrigin`). The `LlmBroker` actor
//! handles it, as the only door to the backends; the tool loop, the intents engine, plugins
//! and the plugin LLM API send it through a `Recipient`, in these wire-neutral terms.

use actix::Message;

use super::{ChatRequest, ChatResponse, LlmError, TextListener};
use crate::ids::ConversationKey;

/// Where a call comes from, for telemetry and cost attribution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOrigin {
    pub profile_id: Option<String>,
    pub conversation_key: Option<ConversationKey>,
    /// The family member whose message the call answers (usage per member).
    pub member_id: Option<crate::ids::MemberId>,
}

/// Run one chat completion on the model named `llm_name` (a key of config `llms`),
/// falling back to `fallback_llm_name` when the primary fails after its retries.
///
/// Sent by the tool loop (`processing/turn.rs`), the intents engine (`intents/llm.rs`), the
/// plugins (`plugins/runtime.rs`) and the plugin LLM API (`http/plugins.rs`); handled in
/// `llm_broker/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<ChatResponse, LlmError>")]
pub struct GenerateChat {
    pub llm_name: String,
    pub fallback_llm_name: Option<String>,
    pub request: ChatRequest,
    pub origin: CallOrigin,
    /// Who hears the answer's text while the model writes it (the member's web page);
    /// `None` asks the model for a whole answer. Only text crosses, never the request.
    pub listener: Option<TextListener>,
}
