//! The in-memory adapters of the intents engine's ports (`PlanExecutions`, `IntentRecords`):
//! the same behaviour as SQLite, in the `InMemoryStore`'s own mutex for them.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{
    IntentRecords, PlanExecution, PlanExecutions, StepStatus, StorageError, canceled_plan,
};

#[derive(Default)]
pub(super) struct IntentsState {
    plans: BTreeMap<String, PlanExecution>,
    records: BTreeMap<(String, String), serde_json::Value>,
}

impl InMemoryStore {
    fn intents_state(&self) -> MutexGuard<'_, IntentsState> {
        self.intents
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl InMemoryStore {
    /// Remove at most `batch` finished plans last changed before `before_ms`, the oldest
    /// first; how many.
    pub(super) fn prune_finished_plans(&self, before_ms: i64, batch: usize) -> usize {
        let mut state = self.intents_state();
        let mut old: Vec<(i64, String)> = state
            .plans
            .values()
            .filter(|plan| {
                matches!(
                    plan.status(),
                    StepStatus::Completed | StepStatus::Failed | StepStatus::Canceled
                ) && plan.updated_at_ms < before_ms
            })
            .map(|plan| (plan.updated_at_ms, plan.plan_id.clone()))
            .collect();
        old.sort();
        old.truncate(batch);
        for (_, plan_id) in &old {
            state.plans.remove(plan_id);
        }
        old.len()
    }
}

#[async_trait]
impl PlanExecutions for InMemoryStore {
    async fn save_plan(&self, plan: &mut PlanExecution) -> Result<(), StorageError> {
        let mut state = self.intents_state();
        let stored_at = state.plans.get(&plan.plan_id).map(|stored| stored.version);
        // As SQLite's: a new plan only under a free id, a stored one only at its version.
        let current = match stored_at {
            None => plan.version == 0,
            Some(version) => plan.version != 0 && version == plan.version,
        };
        if !current {
            return Err(StorageError::Stale(format!("plan {}", plan.plan_id)));
        }
        plan.version += 1;
        state.plans.insert(plan.plan_id.clone(), plan.clone());
        Ok(())
    }

    async fn plan(&self, plan_id: &str) -> Result<Option<PlanExecution>, StorageError> {
        Ok(self.intents_state().plans.get(plan_id).cloned())
    }

    async fn open_plan(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<Option<PlanExecution>, StorageError> {
        Ok(self
            .intents_state()
            .plans
            .values()
            .filter(|plan| {
                plan.conversation_key == *conversation_key
                    && plan.member_id == *member_id
                    && plan.is_open()
            })
            .max_by(|a, b| (a.created_at_ms, &a.plan_id).cmp(&(b.created_at_ms, &b.plan_id)))
            .cloned())
    }

    async fn cancel_open_plans(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<u64, StorageError> {
        let mut state = self.intents_state();
        let mut count = 0;
        for plan in state.plans.values_mut() {
            if plan.conversation_key == *conversation_key
                && plan.member_id == *member_id
                && plan.is_open()
            {
                let version = plan.version + 1;
                *plan = canceled_plan(plan.clone(), now_ms);
                plan.version = version;
                count += 1;
            }
        }
        Ok(count)
    }
}

#[async_trait]
impl IntentRecords for InMemoryStore {
    async fn get_record(
        &self,
        collection: &str,
        id: &str,
    ) -> Result<Option<serde_json::Value>, StorageError> {
        Ok(self
            .intents_state()
            .records
            .get(&(collection.to_owned(), id.to_owned()))
            .cloned())
    }

    async fn put_record(
        &self,
        collection: &str,
        id: &str,
        record: &serde_json::Value,
    ) -> Result<(), StorageError> {
        self.intents_state()
            .records
            .insert((collection.to_owned(), id.to_owned()), record.clone());
        Ok(())
    }
}
