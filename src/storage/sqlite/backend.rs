//! `SqlBackend` on SQLite: reads on the pool, every write on the writer thread
//! (`writer.rs`), so the ports written once in `storage/sql/` write as every SQLite write
//! does: a statement alone in the shared transaction, several in a savepoint of it.

use async_trait::async_trait;
use futures::future::BoxFuture;
use sqlx::sqlite::SqliteRow;
use sqlx::{Sqlite, SqliteConnection};

use super::{SqliteStore, database_error};
use crate::ports::{Fence, StorageError};
use crate::storage::history_cache::HistoryCache;
use crate::storage::sql::profiles::KnownFacts;
use crate::storage::sql::{Dialect, SqlBackend, SqlConnection, Statement};

crate::storage::sql::sqlx_connection!(Sqlite, SqliteConnection, SqliteRow);

#[async_trait]
impl SqlBackend for SqliteStore {
    const DIALECT: Dialect = Dialect::Sqlite;
    type Row = SqliteRow;
    type Connection = SqliteConnection;

    async fn read(&self, statement: Statement) -> Result<Vec<SqliteRow>, StorageError> {
        query(statement)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)
    }

    async fn write(&self, statement: Statement) -> Result<Vec<SqliteRow>, StorageError> {
        self.writer
            .run(move |connection| Box::pin(connection.fetch(statement)))
            .await
    }

    async fn write_count(&self, statement: Statement) -> Result<u64, StorageError> {
        self.writer
            .run(move |connection| Box::pin(connection.execute(statement)))
            .await
    }

    async fn write_fenced(
        &self,
        fence: Option<&Fence>,
        statement: Statement,
    ) -> Result<Vec<SqliteRow>, StorageError> {
        // Checked on the writer, just before the write, in the one process that takes
        // this database's leases; the statement's own condition is `TRUE`.
        let (coordination, fence) = (self.coordination(), fence.cloned());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    coordination.check(fence.as_ref())?;
                    connection.fetch(statement).await
                })
            })
            .await
    }

    fn known_facts(&self) -> &KnownFacts {
        &self.profiles
    }

    fn history(&self) -> &std::sync::Mutex<HistoryCache> {
        &self.history
    }

    async fn atomically_fenced<T, F>(
        &self,
        fence: Option<&Fence>,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static,
    {
        // The fence is checked on the writer, where no other write runs meanwhile.
        let (coordination, fence) = (self.coordination(), fence.cloned());
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    coordination.check(fence.as_ref())?;
                    work(connection).await
                })
            })
            .await
    }
}
