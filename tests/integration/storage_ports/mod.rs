//! One behavioural suite for the storage ports, run against every adapter: the in-memory
//! store, SQLite on a temporary file and PostgreSQL on a fresh database of the test
//! process's scratch server (`adapters!` lists them; a new adapter is its opener and one
//! entry there). Each check is an async fn over `Stores`, in the file of its port;
//! `adapter_suite!` at the top of that file turns its checks into one test per check and
//! adapter (`storage_ports::<port>::<adapter>::<check>`). What only SQLite has (its
//! telemetry tables, durability, urls) is tested beside, on SQLite alone, and what only
//! PostgreSQL has (urls, workers sharing one database) in `postgres_only`. The fixtures
//! every port's checks share are here.

use std::path::Path;

use hearth::ids::{ConversationKey, MemberId};
use hearth::llm::{Role, ToolCall};
use hearth::ports::{Acceptance, HistoryEntry, Inbound, InboxRecord, TurnRecord};
use hearth::storage::{self, Stores};
use serde_json::json;
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// Adapters
// ---------------------------------------------------------------------------

/// The ports under test, and whatever must outlive them (the SQLite file's folder).
pub(super) struct Adapter {
    pub(super) stores: Stores,
    _folder: Option<TempDir>,
}

pub(super) async fn open_in_memory() -> Adapter {
    Adapter {
        stores: Stores::in_memory(),
        _folder: None,
    }
}

pub(super) fn sqlite_url(folder: &Path) -> String {
    format!("sqlite://{}", folder.join("t.db").display())
}

pub(super) async fn open_sqlite() -> Adapter {
    let folder = tempfile::tempdir().unwrap();
    let stores = open_or_panic(&sqlite_url(folder.path())).await;
    Adapter {
        stores,
        _folder: Some(folder),
    }
}

pub(super) async fn open_or_panic(url: &str) -> Stores {
    match storage::open(url, 4).await {
        Ok(stores) => stores,
        Err(error) => panic!("storage::open({url:?}) failed: {error}"),
    }
}

/// A fresh database on the test process's PostgreSQL cluster.
pub(super) async fn open_postgres() -> Adapter {
    let Some(server) = crate::support::postgres::PostgresServer::shared() else {
        // Not installed and not required: the check runs on the in-memory store instead.
        return open_in_memory().await;
    };
    let url = server.fresh_database().await;
    Adapter {
        stores: open_or_panic(&url).await,
        _folder: None,
    }
}

/// Every adapter the suite runs against, `name => opener`, handed to `$then!`: the one
/// place that lists them.
macro_rules! adapters {
    ($then:ident!($($args:tt)*)) => {
        $then! {
            [in_memory => open_in_memory, sqlite => open_sqlite, postgres => open_postgres] $($args)*
        }
    };
}

/// One `#[tokio::test]` per check and adapter, in a module per adapter.
macro_rules! adapter_suite {
    ($($check:ident),* $(,)?) => {
        adapters!(adapter_suite!($($check),*));
    };
    ([$($adapter:ident => $open:ident),*] $($check:ident),*) => {
        adapter_suite!(@modules [$($adapter => $open),*] $($check),*);
    };
    (@modules [] $($check:ident),*) => {};
    (@modules [$adapter:ident => $open:ident $(, $rest:ident => $rest_open:ident)*]
        $($check:ident),*) => {
        mod $adapter {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    let adapter = crate::storage_ports::$open().await;
                    super::$check(&adapter.stores).await;
                }
            )*
        }
        adapter_suite!(@modules [$($rest => $rest_open),*] $($check),*);
    };
}

/// Every adapter, opened, with its name: for checks that compare the adapters.
pub(super) async fn every_adapter() -> Vec<(&'static str, Adapter)> {
    macro_rules! open_each {
        ([$($adapter:ident => $open:ident),*]) => {
            vec![$((stringify!($adapter), $open().await)),*]
        };
    }
    adapters!(open_each!())
}

mod approvals;
mod channel_state;
mod coordination;
mod durability;
mod family_memory;
mod family_memory_counts;
mod fencing;
mod inbox;
mod member_changes;
mod members;
mod memory;
mod notes;
mod outbox;
mod page_changes;
mod pending_actions;
mod pending_decisions;
mod plans;
mod plugin_ports;
mod postgres_connections;
mod postgres_fencing;
mod postgres_only;
mod postgres_worker_caches;
mod profiles;
mod retention;
mod schedules;
mod script_workflows;
mod shopping_lists;
mod sign_in_limits;
mod telemetry;
mod turn_journal;
mod usage;
mod web_access;

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

/// A moment in the confirmations' timeline; every check counts from it.
pub(super) const T0: i64 = 1_700_000_000_000;

pub(super) fn inbound(id: &str, channel: &str, platform_event_id: Option<&str>) -> Inbound {
    Inbound {
        id: id.to_string(),
        conversation: ConversationKey::new(channel, "family-chat").unwrap(),
        member_id: member("alice"),
        text: format!("text of {id}"),
        platform_event_id: platform_event_id.map(str::to_string),
        received_at_ms: 1_700_000_000_000,
        extras: Default::default(),
    }
}

pub(super) fn entry(role: Role, content: &str, created_at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        role,
        content: content.to_string(),
        profile_id: "family".to_string(),
        inbox_id: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        created_at_ms,
    }
}

pub(super) fn tool_call_entry(created_at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        tool_calls: vec![ToolCall {
            id: "call-1".to_string(),
            name: "profile_get".to_string(),
            arguments: json!({}),
        }],
        ..entry(Role::Assistant, "let me look", created_at_ms)
    }
}

pub(super) fn tool_result_entry(created_at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        tool_call_id: Some("call-1".to_string()),
        ..entry(Role::Tool, r#"{"name":"Alice"}"#, created_at_ms)
    }
}

/// A turn as the processing actor writes it: question, tool round trip, answer.
pub(super) fn turn_for(message: &Inbound, reply: &str) -> TurnRecord {
    let with_inbox = |mut entry: HistoryEntry| {
        entry.inbox_id = Some(message.id.clone());
        entry
    };
    TurnRecord {
        conversation_key: message.conversation.clone(),
        messages: vec![
            with_inbox(entry(Role::User, &message.text, 10)),
            with_inbox(tool_call_entry(11)),
            with_inbox(tool_result_entry(12)),
            with_inbox(entry(Role::Assistant, reply, 13)),
        ],
        reply: reply.to_string(),
        outgoing: None,
    }
}

/// A conversation key the checks name.
pub(super) fn key(text: &str) -> ConversationKey {
    text.parse().unwrap()
}

/// A member id the checks name.
pub(super) fn member(text: &str) -> MemberId {
    text.parse().unwrap()
}

pub(super) fn contents(entries: &[HistoryEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.content.as_str()).collect()
}

pub(super) fn ids(records: &[InboxRecord]) -> Vec<&str> {
    records
        .iter()
        .map(|record| record.inbound.id.as_str())
        .collect()
}

pub(super) async fn record_of(stores: &Stores, id: &str) -> InboxRecord {
    stores
        .inbox
        .get(id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("inbox message {id:?} not stored"))
}

pub(super) async fn expect_new(stores: &Stores, message: &Inbound) {
    let acceptance = stores.inbox.accept(message).await.unwrap();
    assert_eq!(acceptance, Acceptance::New, "accepting {:?}", message.id);
}

pub(super) async fn expect_duplicate_of(stores: &Stores, message: &Inbound, original: &Inbound) {
    match stores.inbox.accept(message).await.unwrap() {
        Acceptance::Duplicate(record) => assert_eq!(
            record.inbound, *original,
            "a duplicate of {:?} reports the original",
            message.id
        ),
        Acceptance::New => panic!("{:?} was accepted as new", message.id),
    }
}
