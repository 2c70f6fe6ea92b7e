//! Messages of a `ProcessingService`.

use actix::Message;

use crate::llm::LlmError;
use crate::ports::{HistoryEntry, Inbound, StorageError};

/// Run one turn: answer `text` (the inbound text without its slash command).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<TurnOutcome, TurnError>")]
pub struct ProcessTurn {
    pub inbound: Inbound,
    pub text: String,
}

/// A finished turn. Nothing is stored yet: the queue writes `messages` and the
/// reply together with the inbox status, in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub profile_id: String,
    pub reply: String,
    pub messages: Vec<HistoryEntry>,
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("actor unavailable: {0}")]
    Mailbox(String),
}

impl TurnError {
    /// Worth trying the same turn again later.
    pub fn is_transient(&self) -> bool {
        match self {
            TurnError::Llm(error) => error.is_transient(),
            TurnError::Storage(StorageError::Database(_)) => true,
            TurnError::Storage(_) => false,
            TurnError::Mailbox(_) => true,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            TurnError::Llm(error) => error.kind(),
            TurnError::Storage(_) => "storage",
            TurnError::Mailbox(_) => "mailbox",
        }
    }
}
