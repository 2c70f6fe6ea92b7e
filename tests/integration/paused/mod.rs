//! hearth's timers on tokio's paused clock (`support::paused`): the actors in this process
//! with in-memory stores and a model in this process, the wall clock following tokio's,
//! so what takes minutes or days of hearth's time takes none of the test's and happens
//! the same way every run. Timers inside one module (delivery pauses and give-up, typing,
//! the LLM broker's backoff, retention, forgetting handled commands) are tested beside
//! their code.

mod confirmations;
mod retries;
mod ttls;
