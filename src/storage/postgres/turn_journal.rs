//! `TurnJournal` on PostgreSQL: table `turn_journal`, one row per running turn, removed by
//! `clear` in the transaction that ends the turn.

use async_trait::async_trait;
use sqlx::{PgConnection, Row};

use super::coordination::fence_binds;
use super::{PostgresStore, database_error};
use crate::ports::{Fence, StorageError, TurnJournal, now_ms};

/// Forget the journal of `inbox_id`'s turn, in the caller's transaction that ends it.
pub(super) async fn clear(
    connection: &mut PgConnection,
    inbox_id: &str,
) -> Result<(), StorageError> {
    sqlx::query("DELETE FROM turn_journal WHERE inbox_id = $1")
        .bind(inbox_id)
        .execute(&mut *connection)
        .await
        .map(|_| ())
        .map_err(database_error)
}

#[async_trait]
impl TurnJournal for PostgresStore {
    async fn load_turn(&self, inbox_id: &str) -> Result<Option<serde_json::Value>, StorageError> {
        let row = sqlx::query("SELECT state FROM turn_journal WHERE inbox_id = $1")
            .bind(inbox_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.map(|row| {
            serde_json::from_str(&row.get::<String, _>("state")).map_err(|error| {
                StorageError::Corrupt(format!("turn journal of {inbox_id:?}: {error}"))
            })
        })
        .transpose()
    }

    async fn save_turn_fenced(
        &self,
        inbox_id: &str,
        state: &serde_json::Value,
        fence: Option<&Fence>,
    ) -> Result<(), StorageError> {
        let (lease, generation) = fence_binds(fence);
        // One statement: the lease's row is locked while its generation is checked, so a
        // take by another worker comes wholly before or after this write.
        let saved = sqlx::query(
            "INSERT INTO turn_journal (inbox_id, state, updated_at_ms) SELECT $1, $2, $3 \
             WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM leases \
             WHERE name = $4 AND generation = $5 FOR SHARE) \
             ON CONFLICT (inbox_id) DO UPDATE SET state = excluded.state, \
             updated_at_ms = excluded.updated_at_ms",
        )
        .bind(inbox_id)
        .bind(state.to_string())
        .bind(now_ms())
        .bind(lease)
        .bind(generation)
        .execute(&self.pool)
        .await
        .map_err(database_error)?;
        match fence {
            Some(fence) if saved.rows_affected() == 0 => Err(fence.refused()),
            _ => Ok(()),
        }
    }
}
