//! The in-memory adapter of `ScriptWorkflows`: the same behaviour as SQLite, in the
//! `InMemoryStore`'s own mutex for it.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{ScriptRun, ScriptWorkflow, ScriptWorkflows, StorageError};

/// (conversation key, member id) → that member's workflow there.
pub(super) type WorkflowState = BTreeMap<(String, String), ScriptWorkflow>;

impl InMemoryStore {
    fn workflows(&self) -> MutexGuard<'_, WorkflowState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.script_workflows
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl InMemoryStore {
    fn runs(&self) -> MutexGuard<'_, Vec<ScriptRun>> {
        self.script_runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Retention: at most `batch` of the runs that ended before `before_ms`, oldest first.
    pub(super) fn prune_script_runs(&self, before_ms: i64, batch: usize) -> usize {
        let mut runs = self.runs();
        runs.sort_by_key(|run| run.at_ms);
        let old = runs
            .iter()
            .take(batch)
            .take_while(|run| run.at_ms < before_ms)
            .count();
        runs.drain(..old);
        old
    }
}

fn key(conversation_key: &ConversationKey, member_id: &MemberId) -> (String, String) {
    (conversation_key.to_string(), member_id.to_string())
}

#[async_trait]
impl ScriptWorkflows for InMemoryStore {
    async fn put(&self, workflow: &ScriptWorkflow) -> Result<(), StorageError> {
        if !workflow.state.is_object() {
            return Err(StorageError::Invalid(
                "a script workflow's state must be a json object".into(),
            ));
        }
        self.workflows().insert(
            key(&workflow.conversation_key, &workflow.member_id),
            workflow.clone(),
        );
        Ok(())
    }

    async fn get(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        fresh_since_ms: i64,
    ) -> Result<Option<ScriptWorkflow>, StorageError> {
        Ok(self
            .workflows()
            .get(&key(conversation_key, member_id))
            .filter(|workflow| workflow.updated_at_ms >= fresh_since_ms)
            .cloned())
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        Ok(self
            .workflows()
            .remove(&key(conversation_key, member_id))
            .is_some())
    }

    async fn expire_stale(&self, fresh_since_ms: i64) -> Result<u64, StorageError> {
        let mut workflows = self.workflows();
        let before = workflows.len();
        workflows.retain(|_, workflow| workflow.updated_at_ms >= fresh_since_ms);
        Ok(u64::try_from(before - workflows.len()).unwrap_or(u64::MAX))
    }

    async fn record_run(&self, run: &ScriptRun) -> Result<bool, StorageError> {
        if !run.values.is_object() {
            return Err(StorageError::Invalid(
                "a script run's values must be a json object".into(),
            ));
        }
        let mut runs = self.runs();
        if runs.iter().any(|kept| kept.run_key == run.run_key) {
            return Ok(false);
        }
        runs.push(run.clone());
        Ok(true)
    }

    async fn recent_runs(&self, limit: usize) -> Result<Vec<ScriptRun>, StorageError> {
        let runs = self.runs();
        let mut newest: Vec<(usize, &ScriptRun)> = runs.iter().enumerate().collect();
        newest.sort_by(|(a_at, a), (b_at, b)| b.at_ms.cmp(&a.at_ms).then(b_at.cmp(a_at)));
        Ok(newest
            .into_iter()
            .take(limit)
            .map(|(_, run)| run.clone())
            .collect())
    }
}
