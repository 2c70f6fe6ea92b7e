//! Messages of the `RequestQueue`.

use actix::Message;

use crate::ports::{Inbound, InboxRecord, StorageError};

/// Accept a message from a channel: stored durably before this answers `Accepted`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Submitted, SubmitError>")]
pub struct SubmitInbound {
    pub inbound: Inbound,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Submitted {
    /// Stored and queued; the reply comes later as `DeliverReply`.
    Accepted,
    /// Seen before (same id or platform event): not queued again.
    Duplicate(Box<InboxRecord>),
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("busy: {backlog} messages are waiting, try again shortly")]
    Busy { backlog: usize },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A family member's answer to a confirmation. The turn it suspended resumes;
/// its next reply goes to `reply_to` when given, else to the channel. Answers the
/// id of the inbound message whose turn resumes.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, AnswerError>")]
pub struct AnswerConfirmation {
    pub confirmation_id: String,
    pub member_id: String,
    pub approve: bool,
    pub reply_to: Option<tokio::sync::oneshot::Sender<crate::actors::channels::DeliverReply>>,
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Refused(#[from] crate::ports::AnswerRefused),
    #[error(transparent)]
    Storage(#[from] StorageError),
}
