//! Retention: what hearth keeps only for a while (history, telemetry, finished inbox rows,
//! delivered outbox rows, finished plans) is deleted once old, in small batches, so pruning never holds
//! the database for long.

use async_trait::async_trait;

use super::StorageError;

/// What can be pruned, and by which time it counts as old.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prunable {
    /// Conversation history, by when it was written.
    History,
    /// Telemetry events, by when they happened.
    Telemetry,
    /// LLM-call records (tokens, latency, cost), by when the call was made.
    LlmCalls,
    /// Answered and failed inbox messages (and their settled confirmations), by their last
    /// change; a redelivered platform event older than this is not recognised any more.
    FinishedInbox,
    /// Delivered and given-up outbox rows, by their last change.
    DeliveredOutbox,
    /// The intents engine's finished plans (completed, failed, canceled), by their last
    /// change; kept as long as history.
    FinishedPlans,
}

impl Prunable {
    pub const ALL: [Prunable; 6] = [
        Prunable::History,
        Prunable::Telemetry,
        Prunable::LlmCalls,
        Prunable::FinishedInbox,
        Prunable::DeliveredOutbox,
        Prunable::FinishedPlans,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Prunable::History => "history",
            Prunable::Telemetry => "telemetry",
            Prunable::LlmCalls => "llm_calls",
            Prunable::FinishedInbox => "inbox",
            Prunable::DeliveredOutbox => "outbox",
            Prunable::FinishedPlans => "plans",
        }
    }
}

#[async_trait]
pub trait Retention: Send + Sync {
    /// Delete at most `batch` of the oldest rows of `what` from before `before_ms`; how many
    /// were deleted (fewer than `batch`: nothing older is left).
    async fn prune(
        &self,
        what: Prunable,
        before_ms: i64,
        batch: usize,
    ) -> Result<usize, StorageError>;
}
