//! Storage adapters of the ports in `ports/`, three of them, each filling every port of
//! `Stores`:
//! - SQLite (`sqlite/`, sqlx): one WAL-mode file for one process, checkpointed in the
//!   background, read through a small pool and written by one connection on its own
//!   thread that group-commits the writes arriving together from a bounded queue
//!   (`sqlite/writer.rs`, stopped in order by `Stores::close`); member profiles and each
//!   conversation's newest history cached in memory (`history_cache.rs`), which is
//!   why one process only may write the file: `instance_lock.rs` keeps a second one off it
//!   (an OS lock on `<database file>.lock` naming its holder: pid, HTTP address, start
//!   time). Its `Coordination` is the process's own (`in_memory/coordination.rs`).
//!   Migrations from `migrations/sqlite`;
//! - PostgreSQL (`postgres/`, sqlx): one database shared by any number of workers, nothing
//!   cached that other workers may change unseen (a held conversation's history under its
//!   lease's generation, members' facts under the family's version); the search indexes of
//!   notes and family memory generated columns; a pooled connection pinged before use only
//!   after `PING_WHEN_IDLE_FOR` (5 s) idle; migrations from `migrations/postgres` under an
//!   advisory lock; the workers' leases and wake-ups in `postgres/coordination.rs`;
//! - in memory (`in_memory/`: the store and the state its ports share in `mod.rs`, each
//!   port in the file of the same name as in `sql/` or `postgres/`, and the process's own
//!   `Coordination` in `coordination.rs`): the same behaviour in mutexes, for tests: unit
//!   tests, and the whole app run on tokio's paused clock (`Stores::in_memory`).
//!
//! Every port but `Coordination` is written once for both SQL databases, in
//! `sql/<port>.rs`: its statements (`$N` placeholders, which both bind by number) and row
//! mappings, for every `sql::SqlBackend`, which `sqlite/backend.rs` and
//! `postgres/backend.rs` implement; where the dialects differ, `sql::Dialect` says it,
//! each difference marked `// dialect:`. `Coordination` is PostgreSQL's own
//! (`postgres/coordination.rs`; SQLite's process uses the in-memory one). The in-memory
//! adapter's files are named as these. Each file's doc says its tables.
//!
//! Only this module knows SQL: besides the SQL adapters, `rows.rs` (`SqlRow`, reading a
//! row of either database, and what both read from a row alike), `schema.rs` (whether a database's migrations are this binary's) and
//! `copy.rs` (`hearth copy-store`: every SQLite table into an empty PostgreSQL database in
//! one transaction). `open` picks the adapter from `database_url` (`sqlite:` or
//! `postgres:`) and migrates it (called for a SQLite file only under its instance lock);
//! `open_read_only` and `open_existing_read_only` read an existing database beside a
//! running hearth, never migrating or writing it (a schema older than the binary's is
//! refused); `open_beside_running` writes beside it only the rows no hearth caches;
//! `Stores::close` commits what is queued and closes the database.

pub mod copy;
pub(crate) mod history_cache;
pub mod in_memory;
pub mod instance_lock;
pub mod postgres;
mod rows;
mod schema;
mod sql;
pub mod sqlite;

use std::sync::Arc;

use crate::ports::{
    ChannelState, ConversationMemory, Coordination, FamilyMemory, Inbox, IntentRecords, Members,
    Notes, Outbox, PendingActions, PendingPluginCalls, PlanExecutions, RegisteredPlugins,
    Retention, Schedules, ScriptWorkflows, ShoppingLists, StorageError, TelemetrySink, TurnJournal,
    UsageReport, UserProfiles, WebAccess,
};

/// The ports of one database, shared by every actor.
#[derive(Clone)]
pub struct Stores {
    pub inbox: Arc<dyn Inbox>,
    pub memory: Arc<dyn ConversationMemory>,
    pub profiles: Arc<dyn UserProfiles>,
    pub pending: Arc<dyn PendingActions>,
    pub telemetry: Arc<dyn TelemetrySink>,
    pub channel_state: Arc<dyn ChannelState>,
    /// The family's shopping lists (the built-in shopping-list plugin).
    pub shopping_lists: Arc<dyn ShoppingLists>,
    /// Plugin calls waiting for a missing parameter from the member's next message.
    pub pending_plugin_calls: Arc<dyn PendingPluginCalls>,
    /// External plugins registered over the HTTP API.
    pub registered_plugins: Arc<dyn RegisteredPlugins>,
    /// Where each member's family-script workflow stands, per conversation.
    pub script_workflows: Arc<dyn ScriptWorkflows>,
    /// Running turns' progress (exactly-once tool calls).
    pub turn_journal: Arc<dyn TurnJournal>,
    /// What channels still have to deliver.
    pub outbox: Arc<dyn Outbox>,
    /// Pruning what is kept only for a while.
    pub retention: Arc<dyn Retention>,
    /// The intents engine's plans, stored as they go.
    pub plans: Arc<dyn PlanExecutions>,
    /// Records an intents profile's `data_source: {kind: sql}` reads.
    pub intent_records: Arc<dyn IntentRecords>,
    /// Reminders and scheduled tasks, and their firings.
    pub schedules: Arc<dyn Schedules>,
    /// The family's notes.
    pub notes: Arc<dyn Notes>,
    /// What the family told hearth, indexed for recall (`search_memory`).
    pub family_memory: Arc<dyn FamilyMemory>,
    /// The members who joined by invite, and their invite codes.
    pub members: Arc<dyn Members>,
    /// What each member used per day (the family page).
    pub usage: Arc<dyn UsageReport>,
    /// How members sign in to the web page: codes, links, sessions and API tokens.
    pub web_access: Arc<dyn WebAccess>,
    /// Which workers are alive and which leases each holds (several on PostgreSQL; on
    /// SQLite and in memory, this process alone).
    pub coordination: Arc<dyn Coordination>,
    /// The SQLite store itself, when the stores are SQLite (`hearth telemetry` reads it).
    pub sqlite: Option<Arc<sqlite::SqliteStore>>,
    /// The PostgreSQL store itself, when the stores are PostgreSQL.
    pub postgres: Option<Arc<postgres::PostgresStore>>,
}

impl Stores {
    /// Every port from `store`, with `coordination` and `telemetry` as given; `sqlite` and
    /// `postgres` are left for the caller to fill: the one constructor of every adapter.
    fn of<S>(
        store: Arc<S>,
        coordination: Arc<dyn Coordination>,
        telemetry: Arc<dyn TelemetrySink>,
    ) -> Self
    where
        S: Inbox + ConversationMemory + UserProfiles + PendingActions + ChannelState,
        S: ShoppingLists + PendingPluginCalls + RegisteredPlugins + ScriptWorkflows,
        S: TurnJournal + Outbox + Retention + PlanExecutions + IntentRecords + Schedules,
        S: Notes + FamilyMemory + Members + WebAccess + UsageReport + 'static,
    {
        Stores {
            inbox: store.clone(),
            memory: store.clone(),
            profiles: store.clone(),
            pending: store.clone(),
            channel_state: store.clone(),
            shopping_lists: store.clone(),
            pending_plugin_calls: store.clone(),
            registered_plugins: store.clone(),
            script_workflows: store.clone(),
            turn_journal: store.clone(),
            outbox: store.clone(),
            retention: store.clone(),
            plans: store.clone(),
            intent_records: store.clone(),
            schedules: store.clone(),
            notes: store.clone(),
            family_memory: store.clone(),
            members: store.clone(),
            web_access: store.clone(),
            usage: store,
            coordination,
            telemetry,
            sqlite: None,
            postgres: None,
        }
    }

    /// Every port backed by one in-memory store (tests, benchmarks of the actors alone).
    pub fn in_memory() -> Self {
        let store = Arc::new(in_memory::InMemoryStore::default());
        Self::of(store.clone(), store.coordination(), store)
    }

    /// Every port of one SQLite store; `telemetry` records what turns report.
    fn of_sqlite(store: Arc<sqlite::SqliteStore>, telemetry: Arc<dyn TelemetrySink>) -> Self {
        Stores {
            sqlite: Some(store.clone()),
            ..Self::of(store.clone(), store.coordination(), telemetry)
        }
    }

    /// Every port of one PostgreSQL store.
    fn of_postgres(store: Arc<postgres::PostgresStore>) -> Self {
        let telemetry = Arc::new(sql::telemetry::SqlTelemetryWriter::spawn((*store).clone()));
        Self::of_postgres_with(store, telemetry)
    }

    fn of_postgres_with(
        store: Arc<postgres::PostgresStore>,
        telemetry: Arc<dyn crate::ports::TelemetrySink>,
    ) -> Self {
        Stores {
            postgres: Some(store.clone()),
            ..Self::of(store.clone(), store, telemetry)
        }
    }

    /// Commit every write queued, close the database and stop its writer thread (SQLite);
    /// later writes fail. The telemetry still buffered is written first.
    pub async fn close(&self) {
        self.telemetry.flush().await;
        if let Some(store) = &self.sqlite {
            store.close().await;
        }
        if let Some(store) = &self.postgres {
            store.close().await;
        }
    }
}

/// Whether `database_url` names a PostgreSQL database.
pub fn is_postgres_url(database_url: &str) -> bool {
    database_url.starts_with("postgres:") || database_url.starts_with("postgresql:")
}

/// Why `database_url` is refused: it names neither SQLite nor PostgreSQL.
fn refuse_other_databases(database_url: &str) -> StorageError {
    StorageError::unsupported_url(
        database_url,
        "expected sqlite://path/to/file.db or postgres://user@host/database",
    )
}

/// Open the database named by `database_url`, apply migrations, and return its ports.
/// Migrations change the file under a running hearth's caches: call this only while
/// holding the database's instance lock.
pub async fn open(database_url: &str, max_connections: u32) -> Result<Stores, StorageError> {
    if is_postgres_url(database_url) {
        let store = postgres::PostgresStore::connect(database_url, max_connections).await?;
        store.migrate().await?;
        return Ok(Stores::of_postgres(Arc::new(store)));
    }
    if !database_url.starts_with("sqlite:") {
        return Err(refuse_other_databases(database_url));
    }
    let store = sqlite::SqliteStore::connect(database_url, max_connections).await?;
    store.migrate().await?;
    let telemetry = Arc::new(sql::telemetry::SqlTelemetryWriter::spawn(store.clone()));
    Ok(Stores::of_sqlite(Arc::new(store), telemetry))
}

/// The existing database of a running hearth, to write the rows no hearth caches
/// (`WebAccess`) beside it: no lock, nothing created or migrated. Every other port of the
/// stores returned must not be written while hearth runs.
pub async fn open_beside_running(
    database_url: &str,
    max_connections: u32,
) -> Result<Stores, StorageError> {
    if is_postgres_url(database_url) {
        let store =
            postgres::PostgresStore::connect_beside_running(database_url, max_connections).await?;
        return Ok(Stores::of_postgres_with(
            Arc::new(store),
            Arc::new(crate::ports::TracingTelemetry),
        ));
    }
    if !database_url.starts_with("sqlite:") {
        return Err(refuse_other_databases(database_url));
    }
    let store = sqlite::SqliteStore::connect_beside_running(database_url, max_connections).await?;
    Ok(Stores::of_sqlite(
        Arc::new(store),
        Arc::new(crate::ports::TracingTelemetry),
    ))
}

/// `open_read_only` when the database file `database_url` names is there: `None` when it
/// is not yet, or the url names no file. What the commands that read beside a running
/// hearth open (`check-config`, `telemetry`, `doctor`): none of them creates a database.
pub async fn open_existing_read_only(database_url: &str) -> Result<Option<Stores>, StorageError> {
    // A PostgreSQL database is made by its administrator, never by hearth: it is there.
    if is_postgres_url(database_url) {
        return open_read_only(database_url).await.map(Some);
    }
    let Some(path) = instance_lock::sqlite_database_file(database_url) else {
        return Ok(None);
    };
    if !tokio::fs::try_exists(&path).await.unwrap_or(false) {
        return Ok(None);
    }
    open_read_only(database_url).await.map(Some)
}

/// Open the existing database named by `database_url` to read it only (SQLite's read-only
/// mode): no lock, no writer thread, no migrations, no file created; beside a running hearth
/// too. Every write through the ports is refused, and telemetry only goes to the log. A
/// database whose schema is older than this binary's is refused with what to run.
pub async fn open_read_only(database_url: &str) -> Result<Stores, StorageError> {
    if is_postgres_url(database_url) {
        let store = postgres::PostgresStore::connect_read_only(database_url).await?;
        return Ok(Stores::of_postgres_with(
            Arc::new(store),
            Arc::new(crate::ports::TracingTelemetry),
        ));
    }
    if !database_url.starts_with("sqlite:") {
        return Err(refuse_other_databases(database_url));
    }
    let store = sqlite::SqliteStore::connect_read_only(database_url).await?;
    Ok(Stores::of_sqlite(
        Arc::new(store),
        Arc::new(crate::ports::TracingTelemetry),
    ))
}
