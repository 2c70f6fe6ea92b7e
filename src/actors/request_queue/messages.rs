//! Messages of the `RequestQueue`, and the one it sends: `DeliverReply`, which every channel
//! handles (the queue holds only `Recipient`s, and knows no channel). It also handles what a
//! running turn asks or tells its member (`turn::AskMember`, `turn::TellMember`).

use actix::Message;

use crate::ids::{ConfirmationId, ConversationKey, MemberId};
use crate::ports::{Inbound, InboxRecord, OutgoingKind, OutgoingMessage, StorageError};

/// Accept a message from a channel: stored durably before this answers `Accepted`.
///
/// Sent by the channel core (`channels/core/inbound.rs`), `HttpChannel` (`channels/http.rs`)
/// and the console (`channels/console.rs`); handled in `request_queue/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Submitted, SubmitError>")]
pub struct SubmitInbound {
    pub inbound: Inbound,
    /// Who hears the reply's text as the model writes it, kept in memory with the queued
    /// turn; for the answer to a question, who hears the rest of the asking turn.
    pub listener: Option<crate::llm::TextListener>,
    /// The message is only an answer to the question its sender is asked (a form's):
    /// with none open, it is refused (`SubmitError::NoOpenQuestion`), never a new turn.
    pub only_answer: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Submitted {
    /// Stored and queued; the reply comes later as `DeliverReply`.
    Accepted,
    /// Seen before (same id or platform event): not queued again.
    Duplicate(Box<InboxRecord>),
    /// The message answered a question its sender was asked (`AskMember`) and went to
    /// the turn that asked, `inbox_id`; that turn's next reply is delivered as the
    /// reply to this message.
    AnsweredQuestion { inbox_id: String },
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("busy: {backlog} messages are waiting, try again shortly")]
    Busy { backlog: usize },
    #[error("no question is waiting for this member's answer in this conversation")]
    NoOpenQuestion,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A family member's answer to a confirmation, from `place` (a confirmation is answered
/// only where it was asked). The turn it suspended resumes, and its outcome goes where the
/// request came from: its next reply goes to `reply_to` when given and the member answering
/// is the one who asked, else to the channel of the asking member's conversation (an
/// approver answering a child's escalation gets nothing through `reply_to`: it is dropped).
///
/// Sent by the channel core (`channels/core/commands.rs`), the console
/// (`channels/console.rs`), `POST /inbound/confirm` (`http/inbound.rs`) and the web page
/// (`http/page/waiting.rs`); handled in `request_queue/confirmations.rs`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Answered, AnswerError>")]
pub struct AnswerConfirmation {
    pub confirmation_id: ConfirmationId,
    pub member_id: MemberId,
    pub place: crate::ports::AnswerPlace,
    pub approve: bool,
    pub reply_to: Option<tokio::sync::oneshot::Sender<DeliverReply>>,
}

/// An answer that counted: the turn of message `inbox_id`, asked by `asked_by`, resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub inbox_id: String,
    /// The member whose request it is. Another than the one who answered (a parent
    /// approving a child's request): the outcome goes to that member's conversation.
    pub asked_by: MemberId,
}

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Refused(#[from] crate::ports::AnswerRefused),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// `/cancel`: deny every confirmation waiting for `member_id` in the conversation
/// `conversation_key`, and drop the question they are being asked there (at once), their
/// pending plugin call, script workflow and waiting intents plan (in the conversation's
/// lane: after a turn of theirs running there has ended). Answers what was cancelled.
///
/// Sent by the channel core's `/cancel` (`channels/core/commands.rs`); handled in
/// `request_queue/cancelling.rs`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Cancelled, StorageError>")]
pub struct CancelPending {
    pub member_id: MemberId,
    pub conversation_key: ConversationKey,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cancelled {
    /// The confirmations denied, so a channel can update where it showed them.
    pub confirmation_ids: Vec<ConfirmationId>,
    /// Whether a question was withdrawn.
    pub question: bool,
    /// Whether a plugin call waiting for the member's next message was dropped.
    pub plugin_call: bool,
    /// Whether the member's family-script workflow there was dropped.
    pub script_workflow: bool,
    /// Whether an intents plan waiting for the member's answer was canceled.
    pub plan: bool,
}

/// What a cancelled confirmation's message says instead of its buttons or reactions.
pub const CANCELLED_OUTCOME: &str = "❌ Cancelled with /cancel.";
/// The line a prompt ends with once it expired unanswered.
pub const EXPIRED_OUTCOME: &str = "⌛ Expired: nothing was done.";

impl Cancelled {
    pub fn is_empty(&self) -> bool {
        self.confirmation_ids.is_empty()
            && !self.question
            && !self.plugin_call
            && !self.script_workflow
            && !self.plan
    }

    /// What `/cancel` answers in words, on every channel; `None` when the cancelled
    /// confirmations' own messages say it (edited to `CANCELLED_OUTCOME`).
    pub fn reply(&self) -> Option<&'static str> {
        if self.is_empty() {
            Some("Nothing is waiting for you.")
        } else if self.script_workflow
            && self.confirmation_ids.is_empty()
            && !self.question
            && !self.plugin_call
            && !self.plan
        {
            Some("Cancelled: the family script we were preparing is forgotten.")
        } else if self.confirmation_ids.is_empty() {
            Some("Cancelled: I'm no longer waiting for that answer.")
        } else {
            None
        }
    }
}

/// A message stored as accepted elsewhere (a scheduled task's turn, stored with its
/// firing): queue it in its conversation's lane like one submitted.
///
/// Sent by the scheduler (`hand_on`, `scheduler/mod.rs`); handled in
/// `request_queue/scheduled.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct QueueStored {
    pub inbound: Inbound,
}

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
        confirmation_id: ConfirmationId,
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
    ConfirmationExpired { confirmation_id: ConfirmationId },
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
    pub fn outgoing_kind(&self, member_id: &MemberId) -> OutgoingKind {
        match self {
            ReplyKind::Answer
            | ReplyKind::Delayed
            | ReplyKind::Failed
            | ReplyKind::Question
            | ReplyKind::Progress => OutgoingKind::Reply,
            ReplyKind::AskConfirmation {
                confirmation_id, ..
            } => OutgoingKind::Prompt {
                prompt: confirmation_id.clone().into(),
                member_id: member_id.clone(),
            },
            ReplyKind::ConfirmationExpired { confirmation_id } => OutgoingKind::Close {
                prompt: confirmation_id.clone().into(),
            },
        }
    }
}

/// Send a reply for the inbound message `inbox_id` to its conversation.
///
/// Sent by the queue (`deliver_to_channel`, `request_queue/delivery.rs`; a caller waiting
/// for the reply gets it through its oneshot instead); handled by every channel:
/// `channels/core/actor.rs` (Telegram, Matrix), `channels/http.rs`, `channels/console.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct DeliverReply {
    pub inbox_id: String,
    /// The conversation it goes to, on the channel it is handed to.
    pub conversation: ConversationKey,
    pub member_id: MemberId,
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
    /// This reply as the outbox row that delivers it.
    pub fn outgoing(&self) -> OutgoingMessage {
        OutgoingMessage {
            conversation: self.conversation.clone(),
            inbox_id: Some(self.inbox_id.clone()),
            text: self.text.clone(),
            kind: self.kind.outgoing_kind(&self.member_id),
            reply_to_event: self.reply_to_event.clone(),
        }
    }
}
