//! The actors of hearth and the typed messages they exchange.
//!
//! Each actor owns a folder; its messages live in `messages.rs` beside it.
//! Requests are imperative (`GenerateChat`), notifications past tense.
//! Actors are wired explicitly in `app/`; addresses travel through constructors.

pub mod channels;
pub mod delegation;
pub mod llm_broker;
pub mod processing;
pub mod request_queue;
