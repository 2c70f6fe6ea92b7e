//! Where a member's family-script workflow stands in one conversation: the scripts
//! offered, the one selected, its parameters, the last run and the next step. The
//! scripts toolset owns the state's shape; the port stores it as a JSON object.
//!
//! One workflow per (conversation, member): each step replaces it. A workflow not
//! updated since a given moment (`scripts.state_ttl_hours`) is never handed out again.
//!
//! Runs that ended are kept too (`ScriptRun`: the script, who, the values, how it ended),
//! once per run, for the parents' family page, until retention prunes them
//! (`Prunable::ScriptRuns`).

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

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScriptRunOutcome {
    /// It ran and exited with 0.
    Done,
    /// It ran and failed (an exit code, a signal, its timeout), or could not start.
    Failed,
    /// The member said no.
    Declined,
    /// Nobody answered in time.
    Expired,
    /// hearth stopped while it ran: whether it completed is unknown.
    Unknown,
}

impl ScriptRunOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ScriptRunOutcome::Done => "done",
            ScriptRunOutcome::Failed => "failed",
            ScriptRunOutcome::Declined => "declined",
            ScriptRunOutcome::Expired => "expired",
            ScriptRunOutcome::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "done" => Ok(ScriptRunOutcome::Done),
            "failed" => Ok(ScriptRunOutcome::Failed),
            "declined" => Ok(ScriptRunOutcome::Declined),
            "expired" => Ok(ScriptRunOutcome::Expired),
            "unknown" => Ok(ScriptRunOutcome::Unknown),
            other => Err(StorageError::Corrupt(format!(
                "script run outcome {other:?}"
            ))),
        }
    }
}

/// One run that ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRun {
    /// The run's tool call (its idempotency key): a run is recorded once.
    pub run_key: String,
    pub conversation_key: ConversationKey,
    /// Who ran it.
    pub member_id: MemberId,
    pub script: String,
    /// The values it was approved with (a JSON object).
    pub values: serde_json::Value,
    pub outcome: ScriptRunOutcome,
    /// A failure's error: the exit code and the end of its error output.
    pub error: Option<String>,
    pub at_ms: i64,
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

    /// Keep `run`; `false` (nothing stored) when a run of its `run_key` is kept already.
    async fn record_run(&self, run: &ScriptRun) -> Result<bool, StorageError>;
    /// At most `limit` kept runs, newest first.
    async fn recent_runs(&self, limit: usize) -> Result<Vec<ScriptRun>, StorageError>;
}
