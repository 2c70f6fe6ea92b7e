//! Running one turn: `ProcessTurn` and `ResumeTurn`, which the request queue and delegation
//! send to a profile's `ProcessingService` (the tool loop, or the intents engine it calls),
//! and what a turn answers.

use actix::Message;

use crate::llm::LlmError;
use crate::ports::{Decision, HistoryEntry, Inbound, PendingConfirmation, StorageError};

/// Run one turn: answer `text` (the inbound text without its slash command).
///
/// Sent by the queue (`start_turn` in `request_queue/mod.rs`, through `process_new` in
/// `request_queue/waiting_plans.rs`) and by `Delegation` (`delegation/mod.rs`); handled in
/// `processing/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<TurnOutcome, TurnError>")]
pub struct ProcessTurn {
    pub inbound: Inbound,
    pub text: String,
    /// The slash command that chose this profile, if one did (`confirm_slash_commands`).
    pub slash_command: Option<String>,
    /// The message came here only because an intents plan of this profile waits for the
    /// member's answer: one the profile cannot place is handed back (`TurnResult::NotPlaced`)
    /// for the profile it would otherwise have gone to.
    pub follows_plan: bool,
    /// Who hears the reply's text while the model writes it (the member's web page), in
    /// memory only: a retry or a restart answers without it.
    pub listener: Option<crate::llm::TextListener>,
    /// The conversation's lease among workers (`None` alone on the database, and for a
    /// delegated sub-turn, which its parent's call covers).
    pub lease: Option<super::TurnLease>,
    /// The queue knows no run of this message journaled anything (stored just now, or read
    /// without a journal under the lease it runs under, on its first run under it): the
    /// journal is not read.
    pub unjournaled: bool,
}

/// Resume a turn suspended on `confirmation`, with the member's decision; `None`
/// when the decision was already used once (hearth stopped while acting on it).
///
/// Sent by the queue (`start_turn` in `request_queue/mod.rs`) and by `Delegation`
/// (`delegation/mod.rs`); handled in `processing/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<TurnOutcome, TurnError>")]
pub struct ResumeTurn {
    pub inbound: Inbound,
    pub confirmation: PendingConfirmation,
    pub decision: Option<Decision>,
    /// The conversation's lease among workers, as for `ProcessTurn`.
    pub lease: Option<super::TurnLease>,
}

/// Where a turn got to. Nothing is stored yet: the queue stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub profile_id: String,
    pub result: TurnResult,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TurnResult {
    /// The reply, and the history to write with it in one transaction.
    Answered {
        reply: String,
        messages: Vec<HistoryEntry>,
    },
    /// A tool call needs the member's approval; the turn waits in this confirmation.
    NeedsConfirmation(Box<PendingConfirmation>),
    /// The message is not this profile's (`ProcessTurn::follows_plan`): the plan that
    /// brought it here is canceled, nothing is stored, and it goes where it was routed.
    NotPlaced,
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("actor unavailable: {0}")]
    Mailbox(String),
    #[error("suspended turn state is unreadable: {0}")]
    BadTurnState(String),
    /// The message's voice note could not be transcribed (retried when transient).
    #[error("voice note not transcribed: {0}")]
    Transcription(LlmError),
    /// The message's voice note will not be transcribed; the member is told why.
    #[error("voice note refused: {0:?}")]
    Voice(crate::voice::VoiceRefusal),
    /// This worker no longer trusts the conversation's lease (no heartbeat confirmed it in
    /// time): the turn stopped before its next step, and the worker that takes the
    /// conversation goes on from the journal.
    #[error("the lease {0:?} is no longer surely this worker's; the turn stopped")]
    LeaseLost(String),
}

/// What a slash command's turn answers when the member declined its start
/// (`confirm_slash_commands`).
pub const SLASH_COMMAND_DECLINED: &str = "Cancelled: nothing was done.";
/// What a slash command's turn answers when nobody confirmed its start in time.
pub const SLASH_COMMAND_EXPIRED: &str =
    "That request expired before it was confirmed: nothing was done.";

impl TurnError {
    /// Worth trying the same turn again later.
    pub fn is_transient(&self) -> bool {
        match self {
            TurnError::Llm(error) => error.is_transient(),
            TurnError::Storage(StorageError::Database(_)) => true,
            TurnError::Storage(_) => false,
            TurnError::Mailbox(_) => true,
            TurnError::BadTurnState(_) => false,
            TurnError::Transcription(error) => error.is_transient(),
            TurnError::Voice(_) => false,
            TurnError::LeaseLost(_) => false,
        }
    }

    /// The turn stopped because its conversation's lease is not (surely) this worker's any
    /// more: nothing of it is stored here, and whoever holds the lease runs it.
    pub fn lease_lost(&self) -> bool {
        matches!(
            self,
            TurnError::LeaseLost(_) | TurnError::Storage(StorageError::Fenced { .. })
        )
    }

    pub fn kind(&self) -> &'static str {
        match self {
            TurnError::Llm(error) => error.kind(),
            TurnError::Storage(_) => "storage",
            TurnError::Mailbox(_) => "mailbox",
            TurnError::BadTurnState(_) => "turn_state",
            TurnError::Transcription(_) => "transcription",
            TurnError::Voice(_) => "voice_refused",
            TurnError::LeaseLost(_) => "lease_lost",
        }
    }
}
