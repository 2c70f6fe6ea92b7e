//! A running turn and its conversation: the words shared by whoever runs a turn (a profile's
//! `actors::processing::ProcessingService`, and the intents engine it calls in place of the
//! tool loop) and whoever asks for one (`actors::request_queue`, `actors::delegation`), and
//! what a running turn says to its member (through the queue). Nothing here runs anything:
//! the actors that do implement the handlers.
//!
//! - `run.rs`: `ProcessTurn` and `ResumeTurn`, what a turn answers (`TurnOutcome`,
//!   `TurnResult`, `TurnError`), and what a slash command's turn says when its start was
//!   declined or expired;
//! - `lease.rs`: the conversation lease a turn runs under among workers (`TurnLease`), which
//!   fences its writes and stops it when the worker stops trusting its leases;
//! - `member.rs`: what a running turn asks (`AskMember`) or tells (`TellMember`) its member in
//!   its conversation before it answers, handled by the request queue.

mod lease;
mod member;
mod run;

pub use lease::TurnLease;

pub use member::{AskError, AskMember, FieldKind, FormField, QuestionForm, TellMember, Told};
pub use run::{
    ProcessTurn, ResumeTurn, SLASH_COMMAND_DECLINED, SLASH_COMMAND_EXPIRED, TurnError, TurnOutcome,
    TurnResult,
};
