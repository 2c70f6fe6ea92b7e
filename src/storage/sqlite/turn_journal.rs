//! `TurnJournal` on SQLite: table `turn_journal`, one row per running turn; the trigger
//! `inbox_turn_ended_clears_journal` removes it in the statement that ends the turn.

use async_trait::async_trait;
use sqlx::Row;

use super::{SqliteStore, database_error};
use crate::ports::{Fence, StorageError, TurnJournal, now_ms};

#[async_trait]
impl TurnJournal for SqliteStore {
    async fn load_turn(&self, inbox_id: &str) -> Result<Option<serde_json::Value>, StorageError> {
        let row = sqlx::query("SELECT state FROM turn_journal WHERE inbox_id = ?")
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
        let (id, state) = (inbox_id.to_string(), state.to_string());
        let (coordination, fence) = (self.coordination(), fence.cloned());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    // Checked in the one writer, just before the write, in the one process
                    // that takes this database's leases.
                    coordination.check(fence.as_ref())?;
                    sqlx::query(
                        "INSERT INTO turn_journal (inbox_id, state, updated_at_ms) VALUES (?, ?, ?) \
                         ON CONFLICT (inbox_id) DO UPDATE SET state = excluded.state, \
                         updated_at_ms = excluded.updated_at_ms",
                    )
                    .bind(&id)
                    .bind(&state)
                    .bind(now_ms())
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(())
                })
            })
            .await
    }
}
