//! The in-memory `Retention`: what each `Prunable` names removed, oldest first, at most a batch.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ports::{StorageError, TelemetryEvent};

#[async_trait]
impl crate::ports::Retention for InMemoryStore {
    async fn prune(
        &self,
        what: crate::ports::Prunable,
        before_ms: i64,
        batch: usize,
    ) -> Result<usize, StorageError> {
        use crate::ports::Prunable;
        let mut state = self.lock();
        let state = &mut *state;
        let mut left = batch;
        let mut take = |old: bool| {
            let pruned = old && left > 0;
            if pruned {
                left -= 1;
            }
            !pruned
        };
        match what {
            Prunable::History => {
                for entries in state.messages.values_mut() {
                    entries.retain(|(_, entry)| take(entry.created_at_ms < before_ms));
                }
            }
            Prunable::Telemetry | Prunable::LlmCalls => state.events.retain(|event| {
                let (at, is_call) = match event {
                    TelemetryEvent::LlmCall(call) => (call.at_ms, true),
                    TelemetryEvent::Stage { at_ms, .. } => (*at_ms, false),
                };
                take(at < before_ms && is_call == (what == Prunable::LlmCalls))
            }),
            Prunable::FinishedInbox => {
                let finished = &state.finished_at_ms;
                let old: Vec<String> = state
                    .inbox
                    .iter()
                    .filter(|record| {
                        finished
                            .get(&record.inbound.id)
                            .is_some_and(|at| *at < before_ms)
                    })
                    .take(batch)
                    .map(|record| record.inbound.id.clone())
                    .collect();
                state
                    .inbox
                    .retain(|record| !old.contains(&record.inbound.id));
                state
                    .confirmations
                    .retain(|stored| !old.contains(&stored.confirmation.inbox_id));
                left = batch - old.len();
            }
            Prunable::DeliveredOutbox => {
                left = batch - state.outbox.prune_settled(before_ms, batch);
            }
            Prunable::FinishedPlans => {
                left = batch - self.prune_finished_plans(before_ms, batch);
            }
            Prunable::SettledFirings => {
                left = batch - state.schedules.prune_settled_firings(before_ms, batch);
            }
            Prunable::EndedSchedules => {
                left = batch - state.schedules.prune_ended_schedules(before_ms, batch);
            }
            Prunable::ScriptRuns => {
                left = batch - self.prune_script_runs(before_ms, batch);
            }
        }
        Ok(batch - left)
    }
}
