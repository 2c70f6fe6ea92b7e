//! `SqlBackend` on PostgreSQL: a statement alone is one round trip on the pool, with no
//! transaction around it; several run in one transaction, the fence held in it
//! (`coordination::hold_fence`).

use async_trait::async_trait;
use futures::future::BoxFuture;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres};

use super::{PostgresStore, database_error};
use crate::ports::{Fence, StorageError};
use crate::storage::history_cache::HistoryCache;
use crate::storage::sql::profiles::KnownFacts;
use crate::storage::sql::{Dialect, SqlBackend, Statement};

crate::storage::sql::sqlx_connection!(Postgres, PgConnection, PgRow);

#[async_trait]
impl SqlBackend for PostgresStore {
    const DIALECT: Dialect = Dialect::Postgres;
    type Row = PgRow;
    type Connection = PgConnection;

    async fn read(&self, statement: Statement) -> Result<Vec<PgRow>, StorageError> {
        query(statement)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)
    }

    async fn write(&self, statement: Statement) -> Result<Vec<PgRow>, StorageError> {
        self.read(statement).await
    }

    async fn write_count(&self, statement: Statement) -> Result<u64, StorageError> {
        query(statement)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(database_error)
    }

    async fn write_fenced(
        &self,
        fence: Option<&Fence>,
        statement: Statement,
    ) -> Result<Vec<PgRow>, StorageError> {
        let (lease, generation) = super::coordination::fence_binds(fence);
        self.write(statement.bind(lease).bind(generation)).await
    }

    fn known_facts(&self) -> &KnownFacts {
        &self.known_facts
    }

    fn family_read(&self, version: i64) {
        self.known_facts.family_read(version);
    }

    fn history(&self) -> &std::sync::Mutex<HistoryCache> {
        &self.held_history
    }

    async fn atomically_fenced<T, F>(
        &self,
        fence: Option<&Fence>,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut PgConnection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static,
    {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        super::coordination::hold_fence(&mut transaction, fence).await?;
        // A failure drops the transaction, which rolls it back.
        let done = work(&mut transaction).await?;
        transaction.commit().await.map_err(database_error)?;
        Ok(done)
    }
}
