//! Where a member's family-script workflow stands in one conversation: the scripts
//! offered, the one selected, its parameters, the last run and the next step. The
//! scripts toolset owns the state's shape; the port stores it as a JSON object.
//!
//! One workflow per (conversation, member): each step replaces it. A workflow not
//! updated since a given moment (`scripts.state_ttl_hours`) is never handed out again.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StorageError;
use crate::ids::{ConversationKey, MemberId};

/// One member's workflow in one conversation, as last saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptWorkflow {
    /// `Inbound::conversation`.
    pub conversation_key: ConversationKey,
    pub member_id: MemberId,
    /// The workflow state, a JSON object.
    pub state: serde_json::Value,
    pub updated_at_ms: i64,
}

#[async_trait]
pub trait ScriptWorkflows: Send + Sync {
    /// Store `workflow` for its conversation and member, replacing any earlier one.
    async fn put(&self, workflow: &ScriptWorkflow) -> Result<(), StorageError>;
    /// The workflow of this conversation and member if it was updated at or after
    /// `fresh_since_ms`; an older one is not returned.
    async fn get(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        fresh_since_ms: i64,
    ) -> Result<Option<ScriptWorkflow>, StorageError>;
    /// Remove the workflow of this conversation and member; whether one was stored.
    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError>;
    /// Housekeeping: remove every workflow last updated before `fresh_since_ms`; how many.
    async fn expire_stale(&self, fresh_since_ms: i64) -> Result<u64, StorageError>;
}
