//! A running turn and its conversation: the words shared by whoever runs a turn (a profile's
//! `actors::processing::ProcessingService`, and the intents engine it calls in place of the
//! tool loop) and whoever asks for one (`actors::request_queue`, `actors::delegation`).
//! Nothing here runs anything: the actors that do implement the handlers.
//!
//! - `run.rs`: `ProcessTurn` and `ResumeTurn`, what a turn answers (`TurnOutcome`,
//!   `TurnResult`, `TurnError`), and what a slash command's turn says when its start was
//!   declined or expired.

mod run;

pub use run::{
    ProcessTurn, ResumeTurn, SLASH_COMMAND_DECLINED, SLASH_COMMAND_EXPIRED, TurnError, TurnOutcome,
    TurnResult,
};
