//! The SQLite adapter: one WAL-mode database file, read through a small sqlx pool and
//! written by one connection on its own thread (`writer.rs`, group commit). The ports
//! written once for both databases (`storage/sql/`) run here through `backend.rs`; the
//! files beside it are the ports still SQLite's own; the caches it keeps (history in
//! `storage/history_cache.rs`, member profiles in `sql::profiles::KnownFacts`) are filled
//! and told of writes by `sql/memory.rs` and `sql/profiles.rs`.
//!
//! `connect_read_only` opens the same file for commands that only read it beside a running
//! hearth (`check-config`, `telemetry`): SQLite's read-only mode, no writer thread, no
//! migrations, and a schema older than this binary's reported instead of read.

mod backend;
mod writer;

use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

pub(super) use super::sql::database_error;
use crate::ports::StorageError;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// Implements every storage port of `ports/` on one database file.
///
/// SQLite runs one writer at a time, so every write goes to the one `Writer`, which
/// commits concurrent writes together; reads use the pool in parallel (WAL).
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    writer: writer::Writer,
    profiles: std::sync::Arc<super::sql::profiles::KnownFacts>,
    history: std::sync::Arc<std::sync::Mutex<crate::storage::history_cache::HistoryCache>>,
    /// This process's workers and leases (one process owns the file): the fenced writes
    /// are checked against them.
    coordination: std::sync::Arc<super::in_memory::coordination::InMemoryCoordination>,
}

impl SqliteStore {
    /// Connect, creating the file (and its folder) when missing.
    pub async fn connect(database_url: &str, max_connections: u32) -> Result<Self, StorageError> {
        let options = SqliteConnectOptions::from_str(database_url)
            .map_err(|error| StorageError::unsupported_url(database_url, error.to_string()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL with NORMAL is durable against a crash of hearth; only a power loss
            // can roll back the last transactions.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            // Checkpoints run in the background (`checkpoint_wal_periodically`), not inside
            // whichever turn's commit crosses the threshold, where they stall that turn.
            .pragma("wal_autocheckpoint", "0")
            .pragma("journal_size_limit", "67108864");
        if let Some(folder) = options.get_filename().parent()
            && !folder.as_os_str().is_empty()
        {
            tokio::fs::create_dir_all(folder).await.map_err(|error| {
                StorageError::unsupported_url(
                    database_url,
                    format!("cannot create folder {}: {error}", folder.display()),
                )
            })?;
        }
        // Readers and the writer are separate connections, which an in-memory database
        // cannot share; and it would lose every message at exit.
        if database_url.contains(":memory:") || database_url.contains("mode=memory") {
            return Err(StorageError::unsupported_url(
                database_url,
                "an in-memory database loses everything at exit; name a file, \
                 e.g. sqlite://data/hearth.db",
            ));
        }
        let writer = writer::Writer::start(options.clone()).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(database_error)?;
        tokio::spawn(checkpoint_wal_periodically(pool.clone()));
        Ok(SqliteStore::on(pool, writer))
    }

    /// Open an existing database file to read only: nothing is created, migrated or written
    /// (every write is refused). A database whose schema is not this binary's is refused,
    /// saying what to run.
    pub async fn connect_read_only(database_url: &str) -> Result<Self, StorageError> {
        let options = SqliteConnectOptions::from_str(database_url)
            .map_err(|error| StorageError::unsupported_url(database_url, error.to_string()))?
            .read_only(true)
            .create_if_missing(false)
            .busy_timeout(Duration::from_secs(10));
        let pool = checked_pool(&options, 1).await?;
        Ok(SqliteStore::on(pool, writer::Writer::read_only()))
    }

    /// Open an existing database file beside the hearth running on it, to write only rows
    /// no hearth caches (`WebAccess`: `hearth token`, `hearth web-link`): nothing is created
    /// or migrated, and a schema that is not this binary's is refused, saying what to run.
    pub async fn connect_beside_running(
        database_url: &str,
        max_connections: u32,
    ) -> Result<Self, StorageError> {
        let options = SqliteConnectOptions::from_str(database_url)
            .map_err(|error| StorageError::unsupported_url(database_url, error.to_string()))?
            .create_if_missing(false)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = checked_pool(&options, max_connections).await?;
        let writer = writer::Writer::start(options).await?;
        Ok(SqliteStore::on(pool, writer))
    }

    fn on(pool: SqlitePool, writer: writer::Writer) -> SqliteStore {
        SqliteStore {
            pool,
            writer,
            profiles: Default::default(),
            history: Default::default(),
            coordination: Default::default(),
        }
    }

    /// The leases this store's fenced writes are checked against (its `Coordination`).
    pub fn coordination(
        &self,
    ) -> std::sync::Arc<super::in_memory::coordination::InMemoryCoordination> {
        self.coordination.clone()
    }

    /// Stop writing: every write queued before this commits, the writer's connection
    /// closes and its thread is joined; then the readers close. Later writes fail.
    pub async fn close(&self) {
        self.writer.stop().await;
        self.pool.close().await;
    }

    pub async fn migrate(&self) -> Result<(), StorageError> {
        // Before any write is queued, so the writer thread is idle meanwhile.
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|error| StorageError::Migration(error.to_string()))
    }

    /// The readers' pool, for `hearth copy-store` to read every table.
    pub(crate) fn reader(&self) -> &SqlitePool {
        &self.pool
    }
}

/// The migrations recorded in the database against this binary's: a database behind
/// them must be migrated first (`hearth migrate` takes the lock that keeps a running
/// hearth off it), and one ahead of them belongs to a newer hearth.
/// A pool of up to `max_connections` readers on an existing database, whose schema must be
/// this binary's (else refused, saying what to run).
async fn checked_pool(
    options: &SqliteConnectOptions,
    max_connections: u32,
) -> Result<SqlitePool, StorageError> {
    let database = options.get_filename().display().to_string();
    let pool = SqlitePoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options.clone())
        .await
        .map_err(database_error)?;
    if let Err(error) = check_schema(&pool, &database).await {
        pool.close().await;
        return Err(error);
    }
    Ok(pool)
}

async fn check_schema(pool: &SqlitePool, database: &str) -> Result<(), StorageError> {
    let recorded: Vec<(i64, bool)> =
        match sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(pool)
            .await
        {
            Ok(recorded) => recorded,
            // No table of migrations: nothing was ever applied.
            Err(sqlx::Error::Database(error)) if error.message().contains("no such table") => {
                Vec::new()
            }
            Err(error) => return Err(database_error(error)),
        };
    super::schema::check_recorded(&recorded, &MIGRATOR, database)
}

/// Copy the write-ahead log into the database file every second, from a reader
/// connection; `PASSIVE` never blocks the writer. Ends when the pool is closed.
async fn checkpoint_wal_periodically(pool: SqlitePool) {
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if pool.is_closed() {
            return;
        }
        if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            tracing::warn!(%error, "wal checkpoint failed");
        }
    }
}
