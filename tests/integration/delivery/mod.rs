//! What a turn does once and keeps: durable delivery, exactly-once tool calls, confirmations
//! and approvals, retention, the actors' threads.

mod actor_thread;
mod approvals;
mod confirmations;
mod durable_delivery;
mod exactly_once;
mod retention;
