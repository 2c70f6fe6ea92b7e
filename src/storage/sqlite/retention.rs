//! `Retention` on SQLite: one small `DELETE` per batch on the writer, the oldest rows
//! first; a finished inbox message takes its settled confirmations with it (they refer to
//! it). A schedule that ended goes only once none of its occurrences is left, since they
//! refer to it; settled occurrences go first in a round (`Prunable::ALL`).

use async_trait::async_trait;

use super::{SqliteStore, database_error};
use crate::ports::{Prunable, Retention, StorageError};

/// The statements deleting one batch of `what`: each binds the cut-off time and the batch
/// size.
fn statements(what: Prunable) -> &'static [&'static str] {
    match what {
        Prunable::History => &["DELETE FROM messages WHERE id IN \
            (SELECT id FROM messages WHERE created_at_ms < ? ORDER BY id LIMIT ?)"],
        Prunable::Telemetry => &["DELETE FROM telemetry_events WHERE id IN \
            (SELECT id FROM telemetry_events WHERE at_ms < ? ORDER BY id LIMIT ?)"],
        Prunable::LlmCalls => &["DELETE FROM llm_calls WHERE id IN \
            (SELECT id FROM llm_calls WHERE at_ms < ? ORDER BY id LIMIT ?)"],
        Prunable::FinishedInbox => &[
            "DELETE FROM pending_actions WHERE inbox_id IN (SELECT id FROM inbox \
             WHERE status IN ('answered', 'failed') AND updated_at_ms < ? ORDER BY seq LIMIT ?)",
            "DELETE FROM inbox WHERE seq IN (SELECT seq FROM inbox \
             WHERE status IN ('answered', 'failed') AND updated_at_ms < ? ORDER BY seq LIMIT ?)",
        ],
        Prunable::DeliveredOutbox => &["DELETE FROM outbox WHERE id IN (SELECT id FROM outbox \
            WHERE status IN ('delivered', 'abandoned') AND updated_at_ms < ? ORDER BY id LIMIT ?)"],
        Prunable::FinishedPlans => &["DELETE FROM plan_executions WHERE plan_id IN \
            (SELECT plan_id FROM plan_executions WHERE status IN ('completed', 'failed', \
            'canceled') AND updated_at_ms < ? ORDER BY updated_at_ms LIMIT ?)"],
        // A settled occurrence's last change is its settling; one closed when it fired
        // (a task's turn, a missed one) was never settled.
        Prunable::SettledFirings => &["DELETE FROM schedule_firings WHERE rowid IN \
            (SELECT rowid FROM schedule_firings WHERE state <> 'open' \
            AND COALESCE(settled_at_ms, fired_at_ms) < ? \
            ORDER BY COALESCE(settled_at_ms, fired_at_ms) LIMIT ?)"],
        Prunable::EndedSchedules => &["DELETE FROM schedules WHERE id IN (SELECT s.id \
            FROM schedules s WHERE s.status IN ('finished', 'cancelled') AND s.updated_at_ms < ? \
            AND NOT EXISTS (SELECT 1 FROM schedule_firings f WHERE f.schedule_id = s.id) \
            ORDER BY s.id LIMIT ?)"],
        Prunable::ScriptRuns => &["DELETE FROM script_runs WHERE id IN \
            (SELECT id FROM script_runs WHERE at_ms < ? ORDER BY at_ms, id LIMIT ?)"],
    }
}

#[async_trait]
impl Retention for SqliteStore {
    async fn prune(
        &self,
        what: Prunable,
        before_ms: i64,
        batch: usize,
    ) -> Result<usize, StorageError> {
        let limit = i64::try_from(batch).unwrap_or(i64::MAX);
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let mut deleted = 0;
                    for &statement in statements(what) {
                        deleted = sqlx::query(statement)
                            .bind(before_ms)
                            .bind(limit)
                            .execute(&mut *connection)
                            .await
                            .map_err(database_error)?
                            .rows_affected();
                    }
                    // The last statement deletes the rows counted.
                    Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
                })
            })
            .await
    }
}
