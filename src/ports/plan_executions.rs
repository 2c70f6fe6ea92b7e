//! Plan executions of the intents engine (seed 003 "Plan Execution & State"): a plan's steps
//! with their status, the step it is at, and each tool call's idempotency key, stored as the
//! plan goes so that a plan waiting for the member's answer resumes at its step on their next
//! message, also after a restart.
//!
//! At most one plan per conversation and member is open (`waiting_user` or `blocked`);
//! starting another cancels it.
//!
//! Every stored plan has a version, and a write names the version it was read at: a write
//! of a plan changed meanwhile (cancelled by `/cancel` while its turn had it loaded) fails
//! with `StorageError::Stale` instead of overwriting the cancel.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StorageError;
use crate::ids::{ConversationKey, MemberId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
    /// Waiting for a parent's approval.
    Blocked,
    WaitingUser,
    Canceled,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Completed => "completed",
            StepStatus::Failed => "failed",
            StepStatus::Blocked => "blocked",
            StepStatus::WaitingUser => "waiting_user",
            StepStatus::Canceled => "canceled",
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanStep {
    /// Ask the member for `param`.
    AskUser { param: String, prompt: String },
    /// Say something: `when` is `pre` (before the call), `post` (its result) or `error`.
    Respond { when: String, message: String },
    ToolCall {
        tool_name: String,
        /// The call's arguments: each parameter as read into its declared type (a JSON
        /// string, number, or `"YYYY-MM-DD"` date).
        params: BTreeMap<String, Value>,
    },
}

impl PlanStep {
    pub fn kind(&self) -> &'static str {
        match self {
            PlanStep::AskUser { .. } => "ask_user",
            PlanStep::Respond { .. } => "respond",
            PlanStep::ToolCall { .. } => "tool_call",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepExecution {
    pub step: PlanStep,
    pub status: StepStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A tool call's key, the same however often the plan is resumed (plan id and step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// A tool call's result (its JSON or text), once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why a `blocked` call waits: the policy's message when a parent must approve it;
    /// `None` while the member confirms it (`confirm_tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
}

impl StepExecution {
    pub fn pending(step: PlanStep) -> Self {
        StepExecution {
            step,
            status: StepStatus::Pending,
            started_at_ms: None,
            ended_at_ms: None,
            error: None,
            idempotency_key: None,
            result: None,
            escalation: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanExecution {
    pub plan_id: String,
    pub intent_id: String,
    /// `Inbound::conversation`.
    pub conversation_key: ConversationKey,
    pub member_id: MemberId,
    pub profile_id: String,
    /// The parameters collected so far, each read into its declared type.
    pub params: BTreeMap<String, Value>,
    pub steps: Vec<StepExecution>,
    pub current_index: usize,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// While `waiting_user`: the member's answer continues the plan until then (the
    /// profile's `confirmation_timeout_seconds` after the question); later messages are new
    /// requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_until_ms: Option<i64>,
    /// What the plan answered when it ended: a retry of its message (hearth stopped before
    /// the answer was stored with it) says this again, and runs and asks nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The stored version this plan was read at (or last saved as); 0 for a plan never
    /// stored. `save_plan` writes only over that version, and moves it on.
    #[serde(default)]
    pub version: u64,
}

impl PlanExecution {
    /// The plan's status as one word: its current step's, `completed` past the last step.
    pub fn status(&self) -> StepStatus {
        match self.steps.get(self.current_index) {
            Some(step) => step.status,
            None => self
                .steps
                .last()
                .map(|step| step.status)
                .unwrap_or(StepStatus::Completed),
        }
    }

    /// Waiting for the member's answer at `now_ms`: their next message continues it.
    pub fn awaits_member(&self, now_ms: i64) -> bool {
        self.status() == StepStatus::WaitingUser
            && self.waiting_until_ms.is_none_or(|until| now_ms < until)
    }

    /// Open: the member (or a parent) still has to answer it.
    pub fn is_open(&self) -> bool {
        matches!(self.status(), StepStatus::WaitingUser | StepStatus::Blocked)
    }
}

#[async_trait]
pub trait PlanExecutions: Send + Sync {
    /// Store `plan`: a new one (`version` 0) is inserted, a stored one replaced only while
    /// it is still at `plan.version`; then `plan.version` is the stored version. A plan
    /// stored under another version (changed meanwhile), or a new one whose id is taken,
    /// is refused with `StorageError::Stale` and left as it is.
    async fn save_plan(&self, plan: &mut PlanExecution) -> Result<(), StorageError>;
    async fn plan(&self, plan_id: &str) -> Result<Option<PlanExecution>, StorageError>;
    /// The newest open plan of this conversation and member.
    async fn open_plan(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<Option<PlanExecution>, StorageError>;
    /// Mark every open plan of this conversation and member `canceled` (each a new
    /// version), together or not at all; how many.
    async fn cancel_open_plans(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<u64, StorageError>;
}

/// The plan with its current step and any later pending steps marked `canceled`.
pub fn canceled_plan(mut plan: PlanExecution, now_ms: i64) -> PlanExecution {
    for step in plan.steps.iter_mut().skip(plan.current_index) {
        if matches!(
            step.status,
            StepStatus::Pending | StepStatus::WaitingUser | StepStatus::Blocked
        ) {
            step.status = StepStatus::Canceled;
            step.ended_at_ms = Some(now_ms);
        }
    }
    plan.updated_at_ms = now_ms;
    plan
}
