//! Messages of the `LlmBroker`.

use actix::Message;

use crate::llm::{ChatRequest, ChatResponse, LlmError};

/// Where a call comes from, for telemetry and cost attribution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOrigin {
    pub profile_id: Option<String>,
    pub conversation_key: Option<String>,
}

/// Run one chat completion on the model named `llm_name` (a key of config `llms`),
/// falling back to `fallback_llm_name` when the primary fails after its retries.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<ChatResponse, LlmError>")]
pub struct GenerateChat {
    pub llm_name: String,
    pub fallback_llm_name: Option<String>,
    pub request: ChatRequest,
    pub origin: CallOrigin,
}
