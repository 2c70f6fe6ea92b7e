//! The actors of hearth and the typed messages they exchange.
//!
//! Each actor owns a folder; its messages live in `messages.rs` beside it, but for those that
//! modules below the actors send too: running a turn and what a turn asks or tells its member
//! (`crate::turn`), a chat completion (`crate::llm::GenerateChat`).
//! Requests are imperative (`GenerateChat`), notifications past tense.
//! Actors are wired explicitly in `app/`; addresses travel through constructors.

pub mod channels;
pub mod delegation;
pub mod llm_broker;
pub mod processing;
pub mod request_queue;
pub mod scheduler;
