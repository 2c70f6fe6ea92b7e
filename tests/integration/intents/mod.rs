//! The intents engine (`engine.rs`): classifier, plans, policy, escalation, restarts, on every
//! channel.

mod engine;
mod intents_cancel;
mod intents_config;
mod intents_escalation;
mod intents_escalation_durable;
mod intents_escalation_matrix;
mod intents_policy;
mod intents_real_llm;
mod intents_restart;
mod intents_retry;
mod intents_routing;
mod intents_stopped;
mod intents_telegram;
