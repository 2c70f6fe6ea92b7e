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
