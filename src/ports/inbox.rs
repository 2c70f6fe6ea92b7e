//! The durable inbox: every accepted inbound message is a row before any work
//! starts, and its reply is written in the same transaction as the history.
//!
use async_trait::async_trait;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Fence, HistoryEntry, OutgoingMessage, StorageError, WakeUp};
use crate::ids::{ConversationKey, MemberId};

/// A message from a family member, normalised by a channel actor.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// Assigned by the channel (a UUID) so it can wait for the reply before submitting.
    pub id: String,
    /// Where it was written (`http`, `console`, `telegram`, `matrix`, and the channel's own
    /// chat, room or session), or a delegated turn's sub-conversation: what history and
    /// ordering are kept under.
    pub conversation: ConversationKey,
    /// The family member's id from config `family[].id`.
    pub member_id: MemberId,
    pub text: String,
    /// The platform's id for the event (Telegram update, Matrix event id, HTTP `message_id`):
    /// unique per channel so a redelivered event is processed once.
    pub platform_event_id: Option<String>,
    pub received_at_ms: i64,
    /// What came with the text: the message it replies to, attachments.
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
    /// A voice note or an audio file: transcribed before its turn runs.
    Audio,
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
    /// How long an audio attachment plays, as the platform said or the file tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<u32>,
    /// What an audio attachment says, once transcribed (stored before its turn runs, so a
    /// retry never transcribes it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

impl Inbound {
    /// A fresh id for a channel to give its next message: a UUIDv7, which grows with
    /// time, so the inbox's id index is appended to instead of written all over.
    pub fn new_id() -> String {
        uuid::Uuid::now_v7().to_string()
    }
}

/// `Inbound` as stored turns hold it (a suspended delegation keeps its sub-turn's message):
/// the conversation written as its channel and conversation id, as it always was.
#[derive(Serialize)]
struct InboundWritten<'a> {
    id: &'a str,
    channel: &'a str,
    conversation_id: &'a str,
    member_id: &'a MemberId,
    text: &'a str,
    platform_event_id: &'a Option<String>,
    received_at_ms: i64,
    extras: &'a InboundExtras,
}

#[derive(Deserialize)]
struct InboundRead {
    id: String,
    channel: String,
    conversation_id: String,
    member_id: MemberId,
    text: String,
    platform_event_id: Option<String>,
    received_at_ms: i64,
    #[serde(default)]
    extras: InboundExtras,
}

impl Serialize for Inbound {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        InboundWritten {
            id: &self.id,
            channel: self.conversation.channel(),
            conversation_id: self.conversation.conversation_id(),
            member_id: &self.member_id,
            text: &self.text,
            platform_event_id: &self.platform_event_id,
            received_at_ms: self.received_at_ms,
            extras: &self.extras,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Inbound {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = InboundRead::deserialize(deserializer)?;
        Ok(Inbound {
            id: read.id,
            conversation: ConversationKey::new(&read.channel, &read.conversation_id)
                .map_err(serde::de::Error::custom)?,
            member_id: read.member_id,
            text: read.text,
            platform_event_id: read.platform_event_id,
            received_at_ms: read.received_at_ms,
            extras: read.extras,
        })
    }
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
    /// Whether the turn journal held a run of it when it was read (`TurnJournal`): a
    /// message read without one, while the reader held its conversation's lease, has none
    /// for its first run under that lease (every other run's writes are fenced).
    pub journaled: bool,
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
    pub conversation_key: ConversationKey,
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
    /// `accept`, and when the message was stored, the messages of its conversation
    /// accepted and not yet answered or failed as stored with it (`unanswered_in`, this
    /// message among them), oldest first: what a worker already holding the conversation
    /// queues. One round trip where the database allows (PostgreSQL); a duplicate reads
    /// nothing more.
    async fn accept_reading(
        &self,
        inbound: &Inbound,
    ) -> Result<(Acceptance, Vec<InboxRecord>), StorageError> {
        let acceptance = self.accept(inbound).await?;
        let unanswered = match acceptance {
            Acceptance::New => self.unanswered_in(&inbound.conversation).await?,
            Acceptance::Duplicate(_) => Vec::new(),
        };
        Ok((acceptance, unanswered))
    }
    /// Every message accepted and not yet answered or failed, oldest first. Every read of
    /// records says whether each had a journal (`InboxRecord::journaled`), in its snapshot.
    async fn unanswered(&self) -> Result<Vec<InboxRecord>, StorageError>;
    /// The messages of `conversation` accepted and not yet answered or failed, oldest
    /// first: what the worker taking the conversation over runs.
    async fn unanswered_in(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Vec<InboxRecord>, StorageError>;
    /// `complete_fenced` for a turn that holds no lease (alone on its database).
    async fn complete(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
    ) -> Result<Option<i64>, StorageError> {
        self.complete_fenced(inbox_id, turn, None).await
    }
    /// Store the turn's history and reply, mark the message (accepted or suspended)
    /// answered and queue `turn.outgoing` for delivery, in one transaction; the outbox id.
    /// With a `fence`, only while it is its lease's current generation (else
    /// `StorageError::Fenced`, and nothing is written).
    async fn complete_fenced(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
        fence: Option<&Fence>,
    ) -> Result<Option<i64>, StorageError>;
    /// `complete_fenced`, and `wake_ups` sent to every worker with the turn's end where
    /// the store can (PostgreSQL: `NOTIFY` in the statement that stores it, so they go
    /// out at its commit, and only when it ended the turn); the outbox id, and whether
    /// they were sent. Not sent (SQLite, in memory): the caller sends them after the
    /// commit.
    async fn complete_waking(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
        fence: Option<&Fence>,
        wake_ups: &[WakeUp],
    ) -> Result<(Option<i64>, bool), StorageError> {
        let _ = wake_ups;
        let outbox_id = self.complete_fenced(inbox_id, turn, fence).await?;
        Ok((outbox_id, false))
    }
    /// Count a failed attempt and when to try again; returns the attempts so far.
    async fn record_failure(
        &self,
        inbox_id: &str,
        error: &str,
        next_attempt_at_ms: i64,
    ) -> Result<u32, StorageError>;
    /// Keep what a message's voice note said: its text and extras (the attachment with its
    /// transcript) replaced while it waits, so a retry or a restart reads the transcript
    /// instead of transcribing again.
    async fn store_transcript(
        &self,
        inbox_id: &str,
        text: &str,
        extras: &InboundExtras,
    ) -> Result<(), StorageError>;
    /// `give_up_fenced` for a turn that holds no lease (alone on its database).
    async fn give_up(
        &self,
        inbox_id: &str,
        error: &str,
        reply: &str,
        outgoing: Option<&OutgoingMessage>,
    ) -> Result<Option<i64>, StorageError> {
        self.give_up_fenced(inbox_id, error, reply, outgoing, None)
            .await
    }
    /// Give up on a message (it is not resumed again) and queue `outgoing`, telling the
    /// member, in one transaction; the outbox id. With a `fence`, only while it is current
    /// (else `StorageError::Fenced`, and nothing is written).
    async fn give_up_fenced(
        &self,
        inbox_id: &str,
        error: &str,
        reply: &str,
        outgoing: Option<&OutgoingMessage>,
        fence: Option<&Fence>,
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
