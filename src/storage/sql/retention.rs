//! `Retention` on either SQL database: one small `DELETE` per batch, by primary key, the
//! oldest rows first; a finished inbox message takes its settled confirmations with it
//! (they refer to it). A schedule that ended goes only once none of its occurrences is
//! left, since they refer to it; settled occurrences go first in a round
//! (`Prunable::ALL`).

use async_trait::async_trait;

use super::{Dialect, SqlBackend, SqlConnection, limit, sql};
use crate::ports::{Prunable, Retention, StorageError};

/// The statements deleting one batch of `what`: each binds the cut-off time (`$1`) and
/// the batch size (`$2`); the last deletes the rows of `what` counted.
fn statements(what: Prunable, dialect: Dialect) -> &'static [&'static str] {
    match what {
        Prunable::History => &["DELETE FROM messages WHERE id IN \
            (SELECT id FROM messages WHERE created_at_ms < $1 ORDER BY id LIMIT $2)"],
        Prunable::Telemetry => &["DELETE FROM telemetry_events WHERE id IN \
            (SELECT id FROM telemetry_events WHERE at_ms < $1 ORDER BY id LIMIT $2)"],
        Prunable::LlmCalls => &["DELETE FROM llm_calls WHERE id IN \
            (SELECT id FROM llm_calls WHERE at_ms < $1 ORDER BY id LIMIT $2)"],
        // dialect: PostgreSQL deletes both in one statement (its foreign key is checked
        // at the statement's end); SQLite, whose statements change one table, in two.
        Prunable::FinishedInbox if dialect == Dialect::Postgres => {
            &["WITH finished AS (SELECT id FROM inbox \
               WHERE status IN ('answered', 'failed') AND updated_at_ms < $1 \
               ORDER BY seq LIMIT $2), \
             confirmations AS (DELETE FROM pending_actions \
               WHERE inbox_id IN (SELECT id FROM finished)) \
             DELETE FROM inbox WHERE id IN (SELECT id FROM finished)"]
        }
        Prunable::FinishedInbox => &[
            "DELETE FROM pending_actions WHERE inbox_id IN (SELECT id FROM inbox \
             WHERE status IN ('answered', 'failed') AND updated_at_ms < $1 \
             ORDER BY seq LIMIT $2)",
            "DELETE FROM inbox WHERE seq IN (SELECT seq FROM inbox \
             WHERE status IN ('answered', 'failed') AND updated_at_ms < $1 \
             ORDER BY seq LIMIT $2)",
        ],
        Prunable::DeliveredOutbox => &["DELETE FROM outbox WHERE id IN (SELECT id FROM outbox \
            WHERE status IN ('delivered', 'abandoned') AND updated_at_ms < $1 \
            ORDER BY id LIMIT $2)"],
        Prunable::FinishedPlans => &["DELETE FROM plan_executions WHERE plan_id IN \
            (SELECT plan_id FROM plan_executions WHERE status IN ('completed', 'failed', \
            'canceled') AND updated_at_ms < $1 ORDER BY updated_at_ms LIMIT $2)"],
        // A settled occurrence's last change is its settling; one closed when it fired
        // (a task's turn, a missed one) was never settled.
        Prunable::SettledFirings => &["DELETE FROM schedule_firings WHERE \
            (schedule_id, due_ms) IN (SELECT schedule_id, due_ms FROM schedule_firings \
            WHERE state <> 'open' AND COALESCE(settled_at_ms, fired_at_ms) < $1 \
            ORDER BY COALESCE(settled_at_ms, fired_at_ms) LIMIT $2)"],
        Prunable::EndedSchedules => &["DELETE FROM schedules WHERE id IN (SELECT s.id \
            FROM schedules s WHERE s.status IN ('finished', 'cancelled') \
            AND s.updated_at_ms < $1 \
            AND NOT EXISTS (SELECT 1 FROM schedule_firings f WHERE f.schedule_id = s.id) \
            ORDER BY s.id LIMIT $2)"],
        Prunable::ScriptRuns => &["DELETE FROM script_runs WHERE id IN \
            (SELECT id FROM script_runs WHERE at_ms < $1 ORDER BY at_ms, id LIMIT $2)"],
    }
}

#[async_trait]
impl<B: SqlBackend> Retention for B {
    async fn prune(
        &self,
        what: Prunable,
        before_ms: i64,
        batch: usize,
    ) -> Result<usize, StorageError> {
        let batch = limit(batch);
        let deleted = match statements(what, B::DIALECT) {
            [one] => {
                self.write_count(sql(one).bind(before_ms).bind(batch))
                    .await?
            }
            several => {
                self.atomically(move |connection| {
                    Box::pin(async move {
                        let mut deleted = 0;
                        for &statement in several {
                            deleted = connection
                                .execute(sql(statement).bind(before_ms).bind(batch))
                                .await?;
                        }
                        Ok(deleted)
                    })
                })
                .await?
            }
        };
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }
}
