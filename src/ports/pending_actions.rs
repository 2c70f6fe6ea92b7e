//! Suspended turns: a tool call that waits for the asking family member's answer.
//!
//! A confirmation is bound to one member, one tool call and its exact arguments, and
//! an expiry; it is answered at most once and used at most once (`consume`).

use async_trait::async_trait;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Fence, Inbound, OutgoingMessage, StorageError};
use crate::ids::{ConfirmationId, ConversationKey, MemberId};

/// A tool call waiting for confirmation, with everything needed to resume its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingConfirmation {
    /// Opaque and unguessable: it travels in buttons and API calls.
    pub id: ConfirmationId,
    pub inbox_id: String,
    pub member_id: MemberId,
    /// Where it was asked: the conversation of the turn it suspended.
    pub conversation: ConversationKey,
    pub profile_id: String,
    pub tool_name: String,
    pub arguments: serde_json::Value,
    /// What the member was shown.
    pub prompt: String,
    /// The suspended turn, as the processing service wrote it.
    pub turn_state: serde_json::Value,
    pub expires_at_ms: i64,
    pub created_at_ms: i64,
    /// Who answers instead of `member_id`, from their own chats (a child's request a policy
    /// escalates to the parents); empty: `member_id`, where it was asked.
    pub approvers: Vec<MemberId>,
}

/// `PendingConfirmation` as stored turns hold it (a suspended delegation keeps its target's
/// confirmation): the conversation written as its channel and conversation id.
#[derive(Serialize)]
struct ConfirmationWritten<'a> {
    id: &'a ConfirmationId,
    inbox_id: &'a str,
    member_id: &'a MemberId,
    channel: &'a str,
    conversation_id: &'a str,
    profile_id: &'a str,
    tool_name: &'a str,
    arguments: &'a serde_json::Value,
    prompt: &'a str,
    turn_state: &'a serde_json::Value,
    expires_at_ms: i64,
    created_at_ms: i64,
    #[serde(skip_serializing_if = "<[MemberId]>::is_empty")]
    approvers: &'a [MemberId],
}

#[derive(Deserialize)]
struct ConfirmationRead {
    id: ConfirmationId,
    inbox_id: String,
    member_id: MemberId,
    channel: String,
    conversation_id: String,
    profile_id: String,
    tool_name: String,
    arguments: serde_json::Value,
    prompt: String,
    turn_state: serde_json::Value,
    expires_at_ms: i64,
    created_at_ms: i64,
    #[serde(default)]
    approvers: Vec<MemberId>,
}

impl Serialize for PendingConfirmation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ConfirmationWritten {
            id: &self.id,
            inbox_id: &self.inbox_id,
            member_id: &self.member_id,
            channel: self.conversation.channel(),
            conversation_id: self.conversation.conversation_id(),
            profile_id: &self.profile_id,
            tool_name: &self.tool_name,
            arguments: &self.arguments,
            prompt: &self.prompt,
            turn_state: &self.turn_state,
            expires_at_ms: self.expires_at_ms,
            created_at_ms: self.created_at_ms,
            approvers: &self.approvers,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PendingConfirmation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = ConfirmationRead::deserialize(deserializer)?;
        Ok(PendingConfirmation {
            id: read.id,
            inbox_id: read.inbox_id,
            member_id: read.member_id,
            conversation: ConversationKey::new(&read.channel, &read.conversation_id)
                .map_err(serde::de::Error::custom)?,
            profile_id: read.profile_id,
            tool_name: read.tool_name,
            arguments: read.arguments,
            prompt: read.prompt,
            turn_state: read.turn_state,
            expires_at_ms: read.expires_at_ms,
            created_at_ms: read.created_at_ms,
            approvers: read.approvers,
        })
    }
}

/// What a suspended turn asks to be approved: a call (a tool's, or a slash command's
/// start) with its arguments, the prompt shown, and the turn as it will resume.
pub struct AskedApproval {
    pub tool_name: String,
    pub arguments: serde_json::Value,
    pub prompt: String,
    pub turn_state: serde_json::Value,
    pub expires_at_ms: i64,
    pub approvers: Vec<MemberId>,
}

impl PendingConfirmation {
    /// A new confirmation of `asked` for the turn of `inbound` on profile `profile_id`,
    /// asked now, with a new unguessable id.
    pub fn new(inbound: &Inbound, profile_id: &str, asked: AskedApproval) -> Self {
        PendingConfirmation {
            id: ConfirmationId::generate(),
            inbox_id: inbound.id.clone(),
            member_id: inbound.member_id.clone(),
            conversation: inbound.conversation.clone(),
            profile_id: profile_id.to_string(),
            tool_name: asked.tool_name,
            arguments: asked.arguments,
            prompt: asked.prompt,
            turn_state: asked.turn_state,
            expires_at_ms: asked.expires_at_ms,
            created_at_ms: super::now_ms(),
            approvers: asked.approvers,
        }
    }

    /// Whether `member_id` may answer it.
    pub fn answerable_by(&self, member_id: &MemberId) -> bool {
        if self.approvers.is_empty() {
            self.member_id == *member_id
        } else {
            self.approvers.contains(member_id)
        }
    }

    /// Whether an answer from `place` counts: where it was asked, or anywhere for an
    /// escalation (its approvers answer from their own chats).
    pub fn admits_place(&self, place: &AnswerPlace) -> bool {
        !self.approvers.is_empty() || place.admits(self)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approved,
    Denied,
    /// Nobody answered before `expires_at_ms`.
    Expired,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Denied => "denied",
            Decision::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "approved" => Ok(Decision::Approved),
            "denied" => Ok(Decision::Denied),
            "expired" => Ok(Decision::Expired),
            other => Err(StorageError::Corrupt(format!(
                "confirmation decision {other:?}"
            ))),
        }
    }
}

/// Where an answer to a confirmation comes from. A confirmation is answered only through
/// the channel it was asked on and, when the channel knows it, from the conversation it was
/// asked in (or a thread or topic within it); an answer from anywhere else is refused as if
/// the confirmation did not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerPlace {
    /// The chat or room the answer came from.
    Conversation(ConversationKey),
    /// Anywhere on this channel, whose answers carry no conversation (the HTTP API: any of
    /// the member's own HTTP conversations).
    Channel(String),
    /// The member themselves, proven by their own credential rather than by a place: signed
    /// in on the web page, or with their own API token. Their confirmations are answerable
    /// from there wherever they were asked.
    OwnCredential,
}

impl AnswerPlace {
    /// Whether `confirmation` may be answered from here.
    pub fn admits(&self, confirmation: &PendingConfirmation) -> bool {
        match self {
            AnswerPlace::Conversation(here) => confirmation.conversation.is_within(here),
            AnswerPlace::Channel(channel) => confirmation.conversation.channel() == channel,
            AnswerPlace::OwnCredential => true,
        }
    }
}

/// Why an answer to a confirmation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefused {
    /// No such confirmation, or none that may be answered from where the answer came.
    #[error("no such confirmation")]
    Unknown,
    #[error("this confirmation is for another family member")]
    NotYours,
    #[error("this confirmation was already answered")]
    AlreadyAnswered,
    /// Answered, and its turn is about to go on with the answer.
    #[error("this confirmation was already answered; its request is being worked on")]
    InProgress,
    #[error("this confirmation has expired")]
    Expired,
}

/// A confirmation whose turn has not finished yet, as found at start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenConfirmation {
    pub confirmation: PendingConfirmation,
    /// `None` while it waits for the member.
    pub decision: Option<Decision>,
}

#[async_trait]
pub trait PendingActions: Send + Sync {
    /// Store the confirmation, mark its inbox message suspended and queue `prompts` (every
    /// message asking about it on a platform: the asking member's, and each approver's in
    /// their own chat), in one transaction, so a suspended turn is never without the
    /// messages asking its question; their outbox ids, in the order of `prompts`.
    async fn suspend(
        &self,
        confirmation: &PendingConfirmation,
        prompts: &[OutgoingMessage],
    ) -> Result<Vec<i64>, StorageError> {
        self.suspend_fenced(confirmation, prompts, None).await
    }
    /// `suspend`, with a `fence` only while it is its lease's current generation (else
    /// `StorageError::Fenced`, and nothing is written).
    async fn suspend_fenced(
        &self,
        confirmation: &PendingConfirmation,
        prompts: &[OutgoingMessage],
        fence: Option<&Fence>,
    ) -> Result<Vec<i64>, StorageError>;
    /// Record `member_id`'s answer from `place`, if the confirmation is theirs
    /// (`PendingConfirmation::answerable_by`), was asked there (`admits_place`, else
    /// `Unknown`), pending and not expired at `now_ms`.
    async fn answer(
        &self,
        confirmation_id: &ConfirmationId,
        member_id: &MemberId,
        place: &AnswerPlace,
        approve: bool,
        now_ms: i64,
    ) -> Result<Result<PendingConfirmation, AnswerRefused>, StorageError>;
    /// Mark every pending confirmation expired at `now_ms` as answered `Expired`, and return them.
    async fn expire_due(&self, now_ms: i64) -> Result<Vec<PendingConfirmation>, StorageError>;
    /// The turn resumes with this confirmation's decision: returns it the first time only.
    async fn consume(
        &self,
        confirmation_id: &ConfirmationId,
    ) -> Result<Option<Decision>, StorageError>;
    /// Confirmations pending or answered and not yet consumed, oldest first.
    async fn open(&self) -> Result<Vec<OpenConfirmation>, StorageError>;
    /// The confirmation the message `inbox_id` waits for: its newest one still pending
    /// (asked and not answered), if any.
    async fn waiting_for(
        &self,
        inbox_id: &str,
    ) -> Result<Option<PendingConfirmation>, StorageError>;
    /// Turns that resumed with a decision and did not finish (hearth stopped meanwhile):
    /// the latest consumed confirmation of each message still suspended, oldest first.
    async fn interrupted(&self) -> Result<Vec<PendingConfirmation>, StorageError>;
}
