//! The durable inbox: every accepted inbound message is a row before any work
//! starts, and its reply is written in the same transaction as the history.
//!
//! Also what a conversation key is (`channel:conversation id`), and how a delegated turn's
//! key leads back to the member's own conversation it belongs to.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{HistoryEntry, OutgoingMessage, StorageError};

/// A message from a family member, normalised by a channel actor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inbound {
    /// Assigned by the channel (a UUID) so it can wait for the reply before submitting.
    pub id: String,
    /// `http`, `console`, `telegram`, `matrix`.
    pub channel: String,
    /// The channel's own conversation id (chat, room, session).
    pub conversation_id: String,
    /// The family member's id from config `family[].id`.
    pub member_id: String,
    pub text: String,
    /// The platform's id for the event (Telegram update, Matrix event id, HTTP `message_id`):
    /// unique per channel so a redelivered event is processed once.
    pub platform_event_id: Option<String>,
    pub received_at_ms: i64,
    /// What came with the text: the message it replies to, attachments.
    #[serde(default)]
    pub extras: InboundExtras,
}

/// The parts of a message beyond its text; empty for most messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InboundExtras {
    /// The message this one replies to, given to the model as context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quoted: Option<QuotedMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The profile a scheduled task's turn runs on, whatever its text says; only hearth
    /// sets it (a channel never does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_id: Option<String>,
}

impl InboundExtras {
    pub fn is_empty(&self) -> bool {
        self.quoted.is_none() && self.attachments.is_empty() && self.profile_id.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotedMessage {
    /// Who wrote it, as people call them ("Alice", "hearth").
    pub author: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    Image,
    File,
}

/// A file sent with a message, as the channel stored it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    pub kind: AttachmentKind,
    pub file_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    pub size_bytes: u64,
    /// Where hearth keeps the file; `None` when it was not downloaded (see `note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why the file is missing (too large, download failed), for the model to pass on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Inbound {
    /// A fresh id for a channel to give its next message: a UUIDv7, which grows with
    /// time, so the inbox's id index is appended to instead of written all over.
    pub fn new_id() -> String {
        uuid::Uuid::now_v7().to_string()
    }

    /// The key history and ordering are kept under: channel plus its conversation id.
    pub fn conversation_key(&self) -> String {
        format!("{}:{}", self.channel, self.conversation_id)
    }
}

/// The channel name of delegated turns: their conversations belong to no chat.
pub const DELEGATION_CHANNEL: &str = "delegation";

/// The member's own conversation a delegated turn's conversation belongs to: a
/// delegation's conversation key is `delegation:{parent key}/{target profile}/{id}`,
/// nested as deep as delegation goes. Any other key is its own root.
pub fn root_conversation_key(mut key: &str) -> &str {
    while let Some(parent) = key
        .strip_prefix(DELEGATION_CHANNEL)
        .and_then(|rest| rest.strip_prefix(':'))
        .and_then(|rest| rest.rsplitn(3, '/').nth(2))
    {
        key = parent;
    }
    key
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InboxStatus {
    /// Stored, not yet answered: resumed after a restart.
    Accepted,
    /// Waiting for a confirmation (`PendingActions`); its answer resumes the turn.
    Suspended,
    /// The reply is stored (and was handed to the channel).
    Answered,
    /// Given up after repeated failures; the member was told.
    Failed,
}

impl InboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InboxStatus::Accepted => "accepted",
            InboxStatus::Suspended => "suspended",
            InboxStatus::Answered => "answered",
            InboxStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "accepted" => Ok(InboxStatus::Accepted),
            "suspended" => Ok(InboxStatus::Suspended),
            "answered" => Ok(InboxStatus::Answered),
            "failed" => Ok(InboxStatus::Failed),
            other => Err(StorageError::Corrupt(format!("inbox status {other:?}"))),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InboxRecord {
    pub inbound: Inbound,
    pub status: InboxStatus,
    pub attempts: u32,
    pub next_attempt_at_ms: Option<i64>,
    pub reply: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Acceptance {
    /// Stored now; the queue must process it.
    New,
    /// The same id or platform event was accepted before: nothing stored, here is the original.
    Duplicate(Box<InboxRecord>),
}

/// What a finished turn writes, atomically, together with the `answered` status.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    pub conversation_key: String,
    pub messages: Vec<HistoryEntry>,
    pub reply: String,
    /// The reply's delivery, queued in the outbox in the same transaction (channels that
    /// deliver through the outbox).
    pub outgoing: Option<OutgoingMessage>,
}

#[async_trait]
pub trait Inbox: Send + Sync {
    /// Store an inbound message unless its id or platform event id is already known.
    async fn accept(&self, inbound: &Inbound) -> Result<Acceptance, StorageError>;
    /// Every message accepted and not yet answered or failed, oldest first.
    async fn unanswered(&self) -> Result<Vec<InboxRecord>, StorageError>;
    /// Store the turn's history and reply, mark the message (accepted or suspended)
    /// answered and queue `turn.outgoing` for delivery, in one transaction; the outbox id.
    async fn complete(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
    ) -> Result<Option<i64>, StorageError>;
    /// Count a failed attempt and when to try again; returns the attempts so far.
    async fn record_failure(
        &self,
        inbox_id: &str,
        error: &str,
        next_attempt_at_ms: i64,
    ) -> Result<u32, StorageError>;
    /// Give up on a message (it is not resumed again) and queue `outgoing`, telling the
    /// member, in one transaction; the outbox id.
    async fn give_up(
        &self,
        inbox_id: &str,
        error: &str,
        reply: &str,
        outgoing: Option<&OutgoingMessage>,
    ) -> Result<Option<i64>, StorageError>;
    async fn get(&self, inbox_id: &str) -> Result<Option<InboxRecord>, StorageError>;
    /// Whether a message of `channel` with this platform event id was accepted already (a
    /// redelivered event: its attachments are not downloaded again).
    async fn knows_event(
        &self,
        channel: &str,
        platform_event_id: &str,
    ) -> Result<bool, StorageError>;
    /// A cheap round trip, for readiness.
    async fn ping(&self) -> Result<(), StorageError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delegated_conversation_belongs_to_the_one_that_delegated() {
        assert_eq!(root_conversation_key("http:alice"), "http:alice");
        assert_eq!(
            root_conversation_key("delegation:http:alice/helper/0192"),
            "http:alice"
        );
        assert_eq!(
            root_conversation_key("delegation:delegation:telegram:-100/7/helper/01/vault/02"),
            "telegram:-100/7"
        );
    }
}
