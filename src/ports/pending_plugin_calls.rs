//! Plugin calls waiting for the member's next message (seed 000 §3.6): a required
//! parameter was missing, the member was asked for it, and their answer completes
//! the call without another LLM round.
//!
//! One call at a time per (conversation, member): asking again replaces the earlier
//! question. A call past `expires_at_ms` is never handed out again.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StorageError;
use crate::ids::{ConversationKey, MemberId};

/// A plugin call that lacks parameters, and the question the member was shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingPluginCall {
    /// `Inbound::conversation`.
    pub conversation_key: ConversationKey,
    pub member_id: MemberId,
    pub plugin_id: String,
    pub capability_id: String,
    /// The parameters resolved so far.
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// The names of the parameters still missing.
    pub missing: Vec<String>,
    /// What the member was asked.
    pub question: String,
    pub created_at_ms: i64,
    /// Expired from this moment on (`expires_at_ms <= now_ms`).
    pub expires_at_ms: i64,
}

impl PendingPluginCall {
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

#[async_trait]
pub trait PendingPluginCalls: Send + Sync {
    /// Store `call` for its conversation and member, replacing any earlier one.
    async fn put(&self, call: &PendingPluginCall) -> Result<(), StorageError>;
    /// Remove the call of this conversation and member and return it if it has not
    /// expired at `now_ms`; an expired one is removed and not returned.
    async fn take_valid(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError>;
    /// The call of this conversation and member if it has not expired at `now_ms`,
    /// left in place.
    async fn peek(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError>;
    /// Remove the call of this conversation and member; whether one was stored
    /// (expired or not).
    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError>;
    /// Housekeeping: remove every call expired at `now_ms`; how many.
    async fn expire_due(&self, now_ms: i64) -> Result<u64, StorageError>;
}
