//! The PostgreSQL adapter: every port on one database shared by any number of hearth
//! processes (workers). What another worker may have written since is read afresh; kept
//! in memory is only what no other worker can change unseen (a held conversation's history,
//! `sql/memory.rs`; members' facts under the family's version, `sql/profiles.rs`).
//! Each write is one statement or one transaction on a pooled connection; the search
//! indexes of notes and family memory are generated columns.
//!
//! Migrations (`migrations/postgres`) run under sqlx's advisory lock, so workers starting
//! together apply each migration once. The ports written once for both databases
//! (`storage/sql/`) run here through `backend.rs`; the files beside it are the ports still
//! PostgreSQL's own and the workers' coordination.

mod backend;
mod coordination;

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

pub(super) use super::sql::database_error;
use crate::ports::StorageError;
use crate::storage::history_cache::HistoryCache;
pub(crate) use coordination::WAKE_CHANNEL;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a statement may run before PostgreSQL cancels it: a stuck lock fails the
/// write, to be retried, instead of holding a turn forever.
const STATEMENT_TIMEOUT: &str = "30s";

/// A pooled connection idle longer than this is pinged before it is lent out; one used
/// more lately is lent at once. A ping is a round trip of its own: before every statement
/// it doubled a turn's waits on the database. A connection that broke within this time of
/// its last use fails its next statement once, as any database error does (a turn is
/// tried again from the inbox, a request answered 503) and is dropped; one that sat idle,
/// where a server restart or an idle timeout leaves it dead most often, is tested and
/// replaced first.
pub const PING_WHEN_IDLE_FOR: Duration = Duration::from_secs(5);

/// Implements every storage port of `ports/` on one PostgreSQL database.
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    /// The history of conversations whose lease this worker holds, as read and written
    /// under the lease's generation (`ConversationMemory::recent_held`).
    held_history: std::sync::Arc<std::sync::Mutex<HistoryCache>>,
    /// Members' facts as read under the family's version (`UserProfiles::get`).
    known_facts: std::sync::Arc<super::sql::profiles::KnownFacts>,
}

impl PostgresStore {
    fn on(pool: PgPool) -> Self {
        PostgresStore {
            pool,
            held_history: Default::default(),
            known_facts: Default::default(),
        }
    }

    /// Connect to the database `database_url` names (it must exist).
    pub async fn connect(database_url: &str, max_connections: u32) -> Result<Self, StorageError> {
        let options = PgConnectOptions::from_str(database_url)
            .map_err(|error| StorageError::unsupported_url(database_url, error.to_string()))?
            .application_name("hearth")
            .options([("statement_timeout", STATEMENT_TIMEOUT)]);
        let pool = pool_options()
            .max_connections(max_connections.max(2))
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|error| connect_error(database_url, error))?;
        Ok(PostgresStore::on(pool))
    }

    /// Connect to read only (every transaction read-only, so a write through a port is
    /// refused by PostgreSQL), refusing a schema that is not this binary's.
    pub async fn connect_read_only(database_url: &str) -> Result<Self, StorageError> {
        let options = PgConnectOptions::from_str(database_url)
            .map_err(|error| StorageError::unsupported_url(database_url, error.to_string()))?
            .application_name("hearth (read-only)")
            .options([
                ("statement_timeout", STATEMENT_TIMEOUT),
                ("default_transaction_read_only", "on"),
            ]);
        // One try first: a server that is not there is said at once, where the pool
        // would keep trying until its timeout (which suits `hearth run` waiting for its
        // database to start, not a command someone waits on).
        let probe = sqlx::ConnectOptions::connect(&options)
            .await
            .map_err(|error| connect_error(database_url, error))?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = pool_options()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(|error| connect_error(database_url, error))?;
        Self::checked(pool, database_url).await
    }

    /// Connect beside running workers, to write rows no worker caches (`WebAccess`):
    /// nothing migrated, a schema that is not this binary's refused.
    pub async fn connect_beside_running(
        database_url: &str,
        max_connections: u32,
    ) -> Result<Self, StorageError> {
        let store = Self::connect(database_url, max_connections).await?;
        Self::checked(store.pool, database_url).await
    }

    async fn checked(pool: PgPool, database_url: &str) -> Result<Self, StorageError> {
        let recorded: Result<Vec<(i64, bool)>, sqlx::Error> =
            sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
                .fetch_all(&pool)
                .await;
        let recorded = match recorded {
            Ok(recorded) => recorded,
            // undefined_table: nothing was ever applied.
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("42P01") => {
                Vec::new()
            }
            Err(error) => {
                pool.close().await;
                return Err(database_error(error));
            }
        };
        let database = crate::redaction::redact_url_password(database_url);
        if let Err(error) = super::schema::check_recorded(&recorded, &MIGRATOR, &database) {
            pool.close().await;
            return Err(error);
        }
        Ok(PostgresStore::on(pool))
    }

    /// Apply the migrations this hearth knows and the database lacks.
    pub async fn migrate(&self) -> Result<(), StorageError> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|error| StorageError::Migration(error.to_string()))
    }

    /// The pool, for `hearth copy-store` to fill every table in one transaction.
    pub(crate) fn pool_for_copy(&self) -> &PgPool {
        &self.pool
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A pool whose connections are pinged before use only after `PING_WHEN_IDLE_FOR` idle.
fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|connection, metadata| {
            Box::pin(async move {
                if metadata.idle_for >= PING_WHEN_IDLE_FOR {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
}

/// A failed connection, said with the url's password left out.
fn connect_error(database_url: &str, error: sqlx::Error) -> StorageError {
    StorageError::Database(format!(
        "cannot connect to {}: {error}",
        crate::redaction::redact_url_password(database_url)
    ))
}
