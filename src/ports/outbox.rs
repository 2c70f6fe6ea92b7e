//! The durable outbox: every message hearth sends on a chat platform (a reply, a notice, a
//! confirmation prompt or question, the edit that closes a prompt, a member's reminder
//! list and the edit marking one cancelled there) is first a row "to
//! deliver", written in the same transaction as what caused it (a turn's answer, its
//! suspension, its failure), and is marked delivered only once the platform accepted it.
//! After a restart the undelivered rows go out again, in order per conversation.
//!
//! A message carrying a secret (an invite or `/link` code, a sign-in code or link) is
//! stored with `enqueue_secret`: its text stays only until it is delivered or given up,
//! and is replaced by `SECRET_REMOVED` in the same write that says so.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StorageError;
use crate::ids::{ConversationKey, MemberId, PromptId};

/// What an outgoing message is, so the platform can show it fittingly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutgoingKind {
    /// The answer to the member's message, or hearth's notice about it (delayed, failed),
    /// or a question the running turn asks: markdown.
    Reply,
    /// A prompt only `member_id` may answer (a confirmation, a fired reminder), shown with
    /// the platform's buttons or reactions.
    Prompt {
        // Stored under its name from before reminders' prompts existed.
        #[serde(rename = "confirmation_id")]
        prompt: PromptId,
        member_id: MemberId,
    },
    /// The prompt is settled: it is edited to end with the text, its buttons taken away.
    Close {
        #[serde(rename = "confirmation_id")]
        prompt: PromptId,
    },
    /// `member_id`'s reminders (`/reminders`), each entry shown with a way to cancel it
    /// (a button, a numbered reply), followed by the text (plain, what more there is).
    ReminderList {
        member_id: MemberId,
        entries: Vec<ListedReminder>,
    },
    /// The list shown by platform event `list_event` changed (an entry cancelled): it is
    /// edited to show it as the platform noted it last.
    ReminderListChanged { list_event: String },
}

/// One entry of a reminder list: the schedule's number and its line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedReminder {
    pub schedule_id: i64,
    pub line: String,
}

/// A message to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingMessage {
    /// The channel's conversation (chat, room, thread) it goes to.
    pub conversation: ConversationKey,
    /// The inbox message it answers, if any.
    pub inbox_id: Option<String>,
    pub text: String,
    pub kind: OutgoingKind,
    /// The platform id of the member's message it answers, to thread it.
    pub reply_to_event: Option<String>,
}

/// An undelivered message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    /// Grows with every message: the order of delivery within a conversation, and the seed
    /// of the transaction id a platform de-duplicates resends by.
    pub id: i64,
    pub message: OutgoingMessage,
    pub created_at_ms: i64,
    pub attempts: u32,
    /// Parts already accepted by the platform (a long reply is sent in several messages).
    pub parts_delivered: u32,
}

/// What a delivered (or given up) message carrying a secret reads as in the outbox, as a
/// literal for the adapters' statements.
macro_rules! secret_removed_text {
    () => {
        "(a code or sign-in link: removed once delivered)"
    };
}
pub(crate) use secret_removed_text;

/// What a delivered (or given up) message carrying a secret reads as in the outbox.
pub const SECRET_REMOVED: &str = secret_removed_text!();

#[async_trait]
pub trait Outbox: Send + Sync {
    /// Store `message` as to deliver; its id.
    async fn enqueue(&self, message: &OutgoingMessage) -> Result<i64, StorageError>;
    /// `enqueue` for a message carrying a secret: its text is replaced by
    /// `SECRET_REMOVED` by the write marking it delivered or given up.
    async fn enqueue_secret(&self, message: &OutgoingMessage) -> Result<i64, StorageError>;
    /// Store `message` as to deliver unless a message was stored under `once_key` before
    /// (delivered, pending or given up): its id, or `None` when it was. What a retried turn
    /// says again is so said once.
    async fn enqueue_once(
        &self,
        once_key: &str,
        message: &OutgoingMessage,
    ) -> Result<Option<i64>, StorageError>;
    /// Every undelivered message of `channel`, oldest first.
    async fn undelivered(&self, channel: &str) -> Result<Vec<OutboxEntry>, StorageError>;
    /// The platform accepted the first `parts` parts of message `id`.
    async fn part_delivered(&self, id: i64, parts: u32) -> Result<(), StorageError>;
    /// The platform accepted message `id` (its last part), as `platform_id`; a secret's
    /// text is removed in the same write.
    async fn delivered(&self, id: i64, platform_id: Option<&str>) -> Result<(), StorageError>;
    /// An attempt failed; the attempts so far.
    async fn attempt_failed(&self, id: i64, error: &str) -> Result<u32, StorageError>;
    /// Give up on message `id`: it is not delivered again (a secret's text is removed).
    async fn abandon(&self, id: i64, error: &str) -> Result<(), StorageError>;
}
