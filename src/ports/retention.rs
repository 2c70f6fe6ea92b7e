//! Retention: what hearth keeps only for a while (history, telemetry, finished inbox rows,
//! delivered outbox rows, finished plans, settled reminder occurrences and schedules that
//! ended, family script runs) is deleted once old, in small batches, so pruning never holds the database for
//! long.

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
    /// Settled occurrences of reminders and tasks (done, snoozed, closed: a task's turn or
    /// one told as missed), by when they were settled, or fired when there was nothing to
    /// answer. An open one stays however old: it still takes Done and Snooze, and its
    /// escalation may still be due. A claim never needs the row: it moves its schedule on
    /// from the occurrence it read, and a schedule never goes back to an earlier one.
    SettledFirings,
    /// Schedules that will never fire again (finished or cancelled), by their last change,
    /// once none of their occurrences is left. A claim of one finds no active schedule, as
    /// before, and an id is never given again. Their once keys go with them: a key names one
    /// tool call of a turn, which the turn journal never runs a second time.
    EndedSchedules,
    /// Family script runs that ended, by when they ended; kept as long as history.
    ScriptRuns,
}

impl Prunable {
    /// Every kind, in the order a round prunes them: a schedule's settled occurrences go
    /// before the schedule they keep.
    pub const ALL: [Prunable; 9] = [
        Prunable::History,
        Prunable::Telemetry,
        Prunable::LlmCalls,
        Prunable::FinishedInbox,
        Prunable::DeliveredOutbox,
        Prunable::FinishedPlans,
        Prunable::SettledFirings,
        Prunable::EndedSchedules,
        Prunable::ScriptRuns,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Prunable::History => "history",
            Prunable::Telemetry => "telemetry",
            Prunable::LlmCalls => "llm_calls",
            Prunable::FinishedInbox => "inbox",
            Prunable::DeliveredOutbox => "outbox",
            Prunable::FinishedPlans => "plans",
            Prunable::SettledFirings => "reminder_firings",
            Prunable::EndedSchedules => "schedules",
            Prunable::ScriptRuns => "script_runs",
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
