//! The in-memory adapter of `ScriptWorkflows`: the same behaviour as SQLite, in the
//! `InMemoryStore`'s own mutex for it.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::in_memory::InMemoryStore;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{ScriptWorkflow, ScriptWorkflows, StorageError};

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
}
