//! The ports of hearth's core (seed 003's primitives): storage-shaped traits the
//! actors depend on, and the plain records that cross them.
//!
//! Each trait has three adapters in `storage/`: SQLite (`storage::sqlite`), PostgreSQL
//! (`storage::postgres`), most of their SQL written once for both (`storage/sql/`), and in
//! memory (`storage::in_memory`, a file per port in `storage/in_memory/`);
//! `tests/integration/storage_ports/` runs one suite against every one of them.
//! `LlmProvider` lives in `llm/` and `ToolsProvider` in `tools/`.
//!
//! One file per port, with its records:
//! - `inbox.rs`: `Inbox`, the accepted messages (a voice note's transcript stored while
//!   its message waits), and conversation keys: a message's, and the member's own
//!   conversation a delegated turn's key belongs to;
//! - `conversation_memory.rs`: `ConversationMemory`; `user_profiles.rs`: `UserProfiles`;
//! - `pending_actions.rs`: `PendingActions`, suspended turns and where an answer may come
//!   from; `turn_journal.rs`: `TurnJournal`, running turns' progress;
//! - `outbox.rs`: `Outbox`, what channels still have to deliver (a secret's text kept only
//!   until delivered);
//! - `retention.rs`: `Retention`, pruning and what goes when (`Prunable`);
//! - `telemetry.rs`: `TelemetrySink` and `UsageReport` (what each member used per day, and
//!   the intents engine's stages per conversation, read back);
//! - `web_access.rs`: `WebAccess`, sign-in codes and links, web sessions and member tokens,
//!   each secret as a hash, a code or link spent in one step, wrong codes counted per
//!   member, address and overall with the check, nothing cached;
//! - `plan_executions.rs`: `PlanExecutions`, the intents engine's plans step by step;
//!   `intent_records.rs`: `IntentRecords`, what its data source reads from the database;
//! - `channel_state.rs`: `ChannelState`, small durable facts of channel actors;
//! - `schedules.rs`: `Schedules`, reminders and scheduled tasks, each occurrence's firing
//!   claimed once with the outbox rows and the task's turn it stores;
//! - `members.rs`: `Members`, the members who joined by invite and their accounts, and the
//!   invite codes: a code redeemed with its member added or linked in one step, the
//!   family's version moved by every change, a change decided on the family as stored in
//!   its own transaction (`check_change`, `check_invite`), wrong codes counted per sender
//!   and overall, a write changing only its columns;
//! - `try_limits.rs`: wrong tries counted in windows, the lock they make and how long it
//!   lasts, one place for every adapter;
//! - `notes.rs`: `Notes`, the family's notes, family or private, titles compared trimmed
//!   and case-insensitively, shown to a reader only when theirs to read; a search's words
//!   taken as words, never query syntax;
//! - `family_memory.rs`: `FamilyMemory`, what the family told hearth (chat entries, notes,
//!   documents) in chunks searched by folded words and by vectors, each read only by the
//!   family, its member or its conversation's members, said in every query; the indexer's
//!   cursor; `fold_for_search` and `memory_query_words`;
//! - for plugins: `shopping_lists.rs` (`ShoppingLists`, the family's shared lists, names
//!   compared trimmed and case-insensitively), `pending_plugin_calls.rs`
//!   (`PendingPluginCalls`, a call waiting for a missing parameter, one per conversation
//!   and member, seed 000 §3.6), `registered_plugins.rs` (`RegisteredPlugins`, external
//!   plugins' manifests);
//! - `coordination.rs`: `Coordination`, the workers on one database, each beating, and the
//!   leases they hold;
//! - `script_workflows.rs`: `ScriptWorkflows`, where a member's family-script workflow
//!   stands (one per conversation and member, forgotten past a TTL) and the runs that
//!   ended, kept once per run for the family page until retention prunes them;
//! - here: `StorageError`.

mod channel_state;
mod conversation_memory;
mod coordination;
mod family_memory;
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
pub use family_memory::{
    ChatToIndex, ChatsBehind, FamilyMemory, KindCounts, MAX_MEMORY_QUERY_WORDS, MemoryFilter,
    MemoryHit, MemoryKind, MemoryReaders, MemorySource, MemoryStatus, fold_for_search,
    memory_query_words,
};
pub(crate) use family_memory::{memory_search_terms, nearest, stored_chunk, vector_bytes};
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
    DailyUsage, LlmCallRecord, LlmSpend, StageEvent, StagedConversation, TelemetryEvent,
    TelemetrySink, TracingTelemetry, UsageReport,
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
