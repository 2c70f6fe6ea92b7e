//! In-memory adapters of every storage port: the same behaviour as SQLite, kept in mutexes,
//! for tests and for running the actors without a file. This file owns the store
//! (`InMemoryStore`), the state its ports share and its constructors; each port's adapter is
//! in the file named as the SQL adapters' (`sql/`, `postgres/`): `inbox.rs`, `memory.rs`
//! (`ConversationMemory`), `profiles.rs` (`UserProfiles`), `pending.rs` (`PendingActions`),
//! `outbox.rs`, `schedules.rs`, `family_memory.rs` (`FamilyMemory`), ..., and the process's own `Coordination` in
//! `coordination.rs`.

mod channel_state;
pub(crate) mod coordination;
mod family_memory;
mod inbox;
mod intents;
mod members;
mod memory;
mod notes;
mod outbox;
mod pending;
mod pending_plugin_calls;
mod profiles;
mod registered_plugins;
mod retention;
mod schedules;
mod script_workflows;
mod shopping_lists;
mod telemetry;
mod turn_journal;
mod usage;
mod web_access;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::ids::{ConversationKey, MemberId};
use crate::ports::{
    Decision, HistoryEntry, InboxRecord, PendingConfirmation, PendingPluginCall, ProfileFacts,
    RegisteredPlugin, ShoppingItem, TelemetryEvent,
};

#[derive(Default)]
struct State {
    /// Inbox records in acceptance order.
    inbox: Vec<InboxRecord>,
    /// Each conversation's history, every entry numbered as `messages.id` numbers it: in
    /// the order stored, across conversations (`remember`).
    messages: HashMap<ConversationKey, Vec<(i64, HistoryEntry)>>,
    last_message_id: i64,
    profiles: HashMap<MemberId, ProfileFacts>,
    events: Vec<TelemetryEvent>,
    /// Confirmations in creation order, with their state.
    confirmations: Vec<StoredConfirmation>,
    /// (channel, key) → value.
    channel_state: BTreeMap<(String, String), String>,
    /// Running turns' saved state, by inbox id.
    journal: HashMap<String, serde_json::Value>,
    /// The outbox, in id order (`outbox.rs`).
    outbox: outbox::OutboxState,
    /// When each answered or failed message was finished (retention).
    finished_at_ms: HashMap<String, i64>,
    /// Reminders and scheduled tasks (`schedules.rs`), beside the inbox and the
    /// outbox their firings write to.
    schedules: schedules::ScheduleState,
}

impl State {
    /// Store `entries` at the end of `conversation_key`'s history, numbered.
    fn remember(&mut self, conversation_key: &ConversationKey, entries: &[HistoryEntry]) {
        let history = self.messages.entry(conversation_key.clone()).or_default();
        for entry in entries {
            self.last_message_id += 1;
            history.push((self.last_message_id, entry.clone()));
        }
    }
}

struct StoredConfirmation {
    confirmation: PendingConfirmation,
    decision: Option<Decision>,
    consumed: bool,
}

#[derive(Default)]
struct PluginState {
    /// List key → (item key, item) in the order first added.
    shopping: BTreeMap<String, Vec<(String, ShoppingItem)>>,
    /// (conversation key, member id) → the call waiting for that member.
    pending_calls: BTreeMap<(String, String), PendingPluginCall>,
    /// Plugin id → its registration; a BTreeMap lists by id, as SQLite does.
    registered: BTreeMap<String, RegisteredPlugin>,
}

#[derive(Default)]
pub struct InMemoryStore {
    state: Mutex<State>,
    /// What the plugins' ports keep (`shopping_lists.rs`, `pending_plugin_calls.rs`,
    /// `registered_plugins.rs`).
    plugins: Mutex<PluginState>,
    /// The members' script workflows (`script_workflows.rs`).
    script_workflows: Mutex<script_workflows::WorkflowState>,
    /// The script runs that ended, oldest first (`script_workflows.rs`).
    script_runs: Mutex<Vec<crate::ports::ScriptRun>>,
    /// What the intents engine's ports keep (`intents.rs`).
    intents: Mutex<intents::IntentsState>,
    /// The family's notes (`notes.rs`).
    notes: Mutex<notes::NotesState>,
    /// What family memory indexed (`family_memory.rs`), beside the history and notes it
    /// reads.
    family_memory: Mutex<family_memory::MemoryState>,
    /// The members who joined by invite (`members.rs`).
    members: Mutex<members::MembersState>,
    /// Sign-in codes, links, web sessions and member tokens (`web_access.rs`).
    web_access: Mutex<web_access::WebAccessState>,
    /// This store's workers and leases: its fenced writes are checked against them.
    coordination: Arc<coordination::InMemoryCoordination>,
}

impl InMemoryStore {
    /// The leases this store's fenced writes are checked against (its `Coordination`).
    pub fn coordination(&self) -> Arc<coordination::InMemoryCoordination> {
        self.coordination.clone()
    }

    /// Every telemetry event recorded so far.
    pub fn events(&self) -> Vec<TelemetryEvent> {
        self.lock().events.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn plugin_state(&self) -> MutexGuard<'_, PluginState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.plugins
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
