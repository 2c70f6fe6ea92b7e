//! What a running turn asks or tells its member in its conversation while it runs: an MCP
//! server's question (`AskMember`), an intents plan's `pre` (`TellMember`). The request queue
//! handles both, since it knows which turn runs where and how its channel delivers; the
//! tools and the intents engine send them through a `Recipient`.

use actix::Message;

use crate::ids::{ConversationKey, MemberId};
use crate::ports::StorageError;

/// Put `question` to `member_id` in the conversation whose turn is running now (a
/// delegated turn's conversation counts as its parent's): the member's next message
/// there is sent to `answer_to` instead of starting a turn. Dropping the receiver
/// withdraws the question.
///
/// Sent by an MCP server's question (`tools/mcp/elicitation_chat.rs`); handled in
/// `request_queue/questions.rs`.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), AskError>")]
pub struct AskMember {
    pub member_id: MemberId,
    pub conversation_key: ConversationKey,
    pub question: String,
    /// The fields the answer fills, for a channel that can show a form (the web page);
    /// the answer still comes back as text, read by the same rules as a typed one.
    pub form: Option<QuestionForm>,
    pub answer_to: tokio::sync::oneshot::Sender<String>,
}

/// A question's form: what is asked, and one field per value.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionForm {
    pub intro: String,
    pub fields: Vec<FormField>,
}

/// One value a question asks for. Its answer is written `name: value` (`FormField::line`).
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    pub name: String,
    pub title: String,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    /// The value shown at first, as it would be typed.
    pub default: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Text; `input` is the HTML input type fitting its format (`text`, `date`, `email`, `url`).
    Text {
        input: &'static str,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of `options` (value, label), or several when `multiple`.
    Choice {
        options: Vec<(String, String)>,
        multiple: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    #[error("no turn of conversation {0:?} is running, so there is nowhere to ask")]
    NoRunningTurn(ConversationKey),
    #[error("member {member:?} is already being asked something in conversation {conversation:?}")]
    AlreadyAsking {
        member: MemberId,
        conversation: ConversationKey,
    },
}

/// Tell the member whose turn of message `inbox_id` runs in `conversation_key` `text`
/// before that turn's answer (what an intents plan is about to do). On a channel that
/// delivers through the outbox it goes out at once, stored under `once_key` so a retry of
/// the turn saying it again is not delivered twice; elsewhere (HTTP, the console, a waiting
/// call) the turn answers once, and says it in its answer.
///
/// Sent by the intents engine (`intents/executor.rs`); handled in
/// `request_queue/telling.rs`.
#[derive(Debug, Message)]
#[rtype(result = "Result<Told, StorageError>")]
pub struct TellMember {
    pub inbox_id: String,
    pub conversation_key: ConversationKey,
    pub text: String,
    pub once_key: String,
}

/// Where what a turn told its member goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// Delivered on its own (or stored to be, or found so stored by an earlier try).
    Separately,
    /// Not sent: the turn says it in its answer.
    WithTheAnswer,
}
