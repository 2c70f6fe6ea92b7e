//! The actors of hearth and the typed messages they exchange.
//!
//! Each actor owns a folder; its messages live beside it (`messages.rs`, or the file of their
//! handler), but for those that modules below the actors send too: running a turn and what a
//! turn asks or tells its member (`crate::turn`), a chat completion and a transcription
//! (`crate::llm::GenerateChat`, `crate::llm::Transcribe`), and what the reminder tools and the
//! channels ask of the scheduler (`crate::reminders`). Each message's doc says who sends it
//! and which file handles it (paths under `src/`, under `src/actors/` for an actor's folder).
//! Requests are imperative (`GenerateChat`), notifications past tense.
//! Actors are wired explicitly in `app/`; addresses travel through constructors.

pub mod channels;
pub mod delegation;
pub mod llm_broker;
pub mod memory_indexer;
pub mod processing;
pub mod request_queue;
pub mod scheduler;
