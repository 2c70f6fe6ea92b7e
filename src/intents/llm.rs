//! The engine's one way to a model: a chat request through the `LlmBroker` on the profile's
//! model (and its fallback), attributed to the profile and conversation.

use actix::Recipient;

use crate::llm::{CallOrigin, ChatMessage, ChatRequest, GenerateChat, LlmError, ResponseFormat};

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("llm broker unavailable: {0}")]
    Mailbox(String),
}

/// The profile's model, for one conversation.
#[derive(Clone)]
pub struct ModelAccess {
    pub broker: Recipient<GenerateChat>,
    pub llm_name: String,
    pub fallback_llm_name: Option<String>,
    pub origin: CallOrigin,
}

impl ModelAccess {
    /// The model's text answer (with `format`, JSON matching its schema).
    pub async fn ask(
        &self,
        messages: Vec<ChatMessage>,
        format: Option<ResponseFormat>,
    ) -> Result<String, AskError> {
        let response = self
            .broker
            .send(GenerateChat {
                llm_name: self.llm_name.clone(),
                fallback_llm_name: self.fallback_llm_name.clone(),
                request: ChatRequest {
                    messages,
                    response_format: format,
                    ..ChatRequest::default()
                },
                origin: self.origin.clone(),
                listener: None,
            })
            .await
            .map_err(|error| AskError::Mailbox(error.to_string()))??;
        Ok(response.content)
    }
}
