//! Messages every channel actor handles.

use actix::Message;

use crate::ports::{OutgoingKind, OutgoingMessage};

/// What kind of text a reply is, so a channel can present it fittingly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyKind {
    /// The answer to the message.
    Answer,
    /// The answer is delayed (LLM down or rate-limited); the message is kept and retried.
    Delayed,
    /// hearth gave up on the message after repeated failures.
    Failed,
    /// The text is a question only `member_id` may answer (approve or deny), by
    /// `expires_at_ms`; the channel shows it with its own buttons or instructions.
    AskConfirmation {
        confirmation_id: String,
        expires_at_ms: i64,
    },
    /// The running turn asks `member_id` something (an MCP server's question); their
    /// next message in the conversation is the answer, and the turn goes on.
    Question,
    /// The running turn says what it is about to do (an intents plan's `pre`); it goes on
    /// and answers separately.
    Progress,
    /// Nobody answered confirmation `confirmation_id` in time: a channel that shows it
    /// with buttons takes them away. The turn goes on and answers separately.
    ConfirmationExpired { confirmation_id: String },
}

impl ReplyKind {
    /// Whether a turn stops with this (answered, or waiting for the member): "typing…" ends.
    pub fn ends_a_turn(&self) -> bool {
        !matches!(
            self,
            ReplyKind::ConfirmationExpired { .. } | ReplyKind::Progress
        )
    }

    /// How the outbox names a message of this kind, asked of `member_id`.
    pub fn outgoing_kind(&self, member_id: &str) -> OutgoingKind {
        match self {
            ReplyKind::Answer
            | ReplyKind::Delayed
            | ReplyKind::Failed
            | ReplyKind::Question
            | ReplyKind::Progress => OutgoingKind::Reply,
            ReplyKind::AskConfirmation {
                confirmation_id, ..
            } => OutgoingKind::Prompt {
                confirmation_id: confirmation_id.clone(),
                member_id: member_id.to_string(),
            },
            ReplyKind::ConfirmationExpired { confirmation_id } => OutgoingKind::Close {
                confirmation_id: confirmation_id.clone(),
            },
        }
    }
}

/// Send a reply for the inbound message `inbox_id` to its conversation.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct DeliverReply {
    pub inbox_id: String,
    pub conversation_id: String,
    pub member_id: String,
    pub text: String,
    pub kind: ReplyKind,
    /// The platform id of the member's message this answers (`Inbound::platform_event_id`),
    /// so a channel can thread the reply to it.
    pub reply_to_event: Option<String>,
    /// The outbox row holding this message, for a channel that delivers through the
    /// outbox: marked delivered once the platform accepted it. `None` when the outbox
    /// could not take it (delivered once, without retry) or the channel does not use it.
    pub outbox_id: Option<i64>,
}

impl DeliverReply {
    /// This reply as the outbox row of `channel` that delivers it.
    pub fn outgoing(&self, channel: &str) -> OutgoingMessage {
        OutgoingMessage {
            channel: channel.to_string(),
            conversation_id: self.conversation_id.clone(),
            inbox_id: Some(self.inbox_id.clone()),
            text: self.text.clone(),
            kind: self.kind.outgoing_kind(&self.member_id),
            reply_to_event: self.reply_to_event.clone(),
        }
    }
}

/// Why a channel could not hand a platform event over for good: it must come again.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("the request queue is not running")]
    QueueStopped,
    #[error(transparent)]
    Storage(#[from] crate::ports::StorageError),
}
