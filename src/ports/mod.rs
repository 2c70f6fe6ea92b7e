//! The ports of hearth's core (seed 003's primitives): storage-shaped traits the
//! actors depend on, and the plain records that cross them.
//!
//! Each trait has a real adapter (`storage::sqlite`) and an in-memory one
//! (`storage::in_memory`); `tests/integration/storage_ports/` runs one suite
//! against both. `LlmProvider` lives in `llm/` and `ToolsProvider` in `tools/`.

mod channel_state;
mod conversation_memory;
mod coordination;
mod inbox;
mod intent_records;
mod members;
mod notes;
mod outbox;
mod pending_actions;
mod pending_plugin_calls;
mod plan_executions;
mod registered_plugins;
mod retention;
mod schedules;
mod script_workflows;
mod shopping_lists;
mod telemetry;
mod try_limits;
mod turn_journal;
mod user_profiles;
mod web_access;

pub use channel_state::ChannelState;
pub use conversation_memory::{ConversationMemory, HistoryEntry};
pub use coordination::{
    AnsweredWith, Coordination, Fence, LeaseHolder, LiveWorker, Tenure, WAKE_UP_MAX_BYTES,
    WakeTopic, WakeUp, WakeUps, WorkerPresence, wake_ups_of,
};
pub use inbox::{
    Acceptance, Attachment, AttachmentKind, Inbound, InboundExtras, Inbox, InboxRecord,
    InboxStatus, QuotedMessage, TurnRecord,
};
pub use intent_records::IntentRecords;
pub use members::{
    ChangeRefused, ConfiguredMembers, InvitePurpose, JOIN_FAILURES_KEPT_MS, JOIN_LIMITS_OVERALL,
    JOIN_LIMITS_PER_SOURCE, MemberChange, MemberChangeKind, Members, NewInvite, PlatformUser,
    Redeem, RedeemRefused, Redeemed, StoredFamily, StoredMember, check_change, check_invite,
    join_locked, member_id_choices,
};
pub(crate) use notes::note_title_key;
pub use notes::{
    MAX_SEARCH_WORDS, Note, NoteList, NoteRef, NoteVisibility, NoteWrite, Notes, Saved,
    search_words,
};
pub(crate) use outbox::secret_removed_text;
pub use outbox::{
    ListedReminder, Outbox, OutboxEntry, OutgoingKind, OutgoingMessage, SECRET_REMOVED,
};
pub use pending_actions::{
    AnswerPlace, AnswerRefused, AskedApproval, Decision, OpenConfirmation, PendingActions,
    PendingConfirmation,
};
pub use pending_plugin_calls::{PendingPluginCall, PendingPluginCalls};
pub use plan_executions::{
    PlanExecution, PlanExecutions, PlanStep, StepExecution, StepStatus, canceled_plan,
};
pub use registered_plugins::{RegisteredPlugin, RegisteredPlugins};
pub use retention::{Prunable, Retention};
pub use schedules::{
    Claimed, Firing, FiringClaim, FiringState, FiringTiming, NewSchedule, Schedule, ScheduleEdit,
    ScheduleKind, ScheduleStatus, Schedules, Settled, Settlement,
};
pub use script_workflows::{ScriptRun, ScriptRunOutcome, ScriptWorkflow, ScriptWorkflows};
pub use shopping_lists::{ShoppingItem, ShoppingLists};
pub(crate) use shopping_lists::{check_shopping_quantity, shopping_key};
pub use telemetry::{
    DailyUsage, LlmCallRecord, StageEvent, StagedConversation, TelemetryEvent, TelemetrySink,
    TracingTelemetry, UsageReport,
};
pub use try_limits::{Limit, LockScope, Locked, first_lock, locked_until, longest_window};
pub use turn_journal::TurnJournal;
pub use user_profiles::{ProfileFacts, UserProfiles};
pub use web_access::{
    MemberToken, NewSignInCode, SIGN_IN_FAILURES_KEPT_MS, SIGN_IN_LIMITS_OVERALL,
    SIGN_IN_LIMITS_PER_ADDRESS, SIGN_IN_LIMITS_PER_MEMBER, SignInAttempt, SignInCheck,
    SignInFailure, SignInTry, WebAccess, WebSession, sign_in_locked,
};

/// Why a storage adapter failed. Adapters map their driver errors into this.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("database error: {0}")]
    Database(String),
    #[error("database migration failed: {0}")]
    Migration(String),
    /// `url` is redacted (`StorageError::unsupported_url`): no password in any message.
    #[error("unsupported database url {url:?}: {reason}")]
    UnsupportedUrl { url: String, reason: String },
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    /// The caller asked for something no adapter may store (a blank name, quantity 0).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// A write based on a version of a record that is no longer the stored one: the record
    /// changed meanwhile (an intents plan cancelled by `/cancel`), and the write is refused
    /// instead of overwriting that change. Names the record.
    #[error("{0} changed meanwhile; the write based on the earlier version was refused")]
    Stale(String),
    /// A write made for a lease (`Fence`) whose generation is no longer the lease's: it
    /// passed to another holder (this worker stalled past it), and nothing was written.
    #[error(
        "lease {lease:?} is no longer held at generation {generation} (another worker took it); nothing was written"
    )]
    Fenced { lease: String, generation: i64 },
}

impl StorageError {
    /// A database url hearth cannot use, named without its password.
    pub fn unsupported_url(url: &str, reason: impl Into<String>) -> Self {
        StorageError::UnsupportedUrl {
            url: crate::redaction::redact_url_password(url),
            reason: reason.into(),
        }
    }
}

/// Milliseconds since the Unix epoch, read from `clock` (which tests can make follow
/// tokio's paused clock).
pub use crate::clock::now_ms;
