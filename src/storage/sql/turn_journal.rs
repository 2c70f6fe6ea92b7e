//! `TurnJournal` on either SQL database: table `turn_journal`, one row per running turn,
//! removed in the transaction that ends the turn (`inbox.rs`, `pending.rs`).

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, per_dialect, sql};
use crate::ports::{Fence, StorageError, TurnJournal, now_ms};

#[async_trait]
impl<B: SqlBackend> TurnJournal for B {
    async fn load_turn(&self, inbox_id: &str) -> Result<Option<serde_json::Value>, StorageError> {
        let load = sql("SELECT state FROM turn_journal WHERE inbox_id = $1").bind(inbox_id);
        let row = self.read_optional(load).await?;
        row.map(|row| {
            serde_json::from_str(&row.text("state")?).map_err(|error| {
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
        // One statement, its fence checked in it (or just before, on SQLite's writer).
        let save = per_dialect!(B::DIALECT, |dialect| format!(
            "INSERT INTO turn_journal (inbox_id, state, updated_at_ms) SELECT $1, $2, $3 \
             WHERE {} ON CONFLICT (inbox_id) DO UPDATE SET state = excluded.state, \
             updated_at_ms = excluded.updated_at_ms RETURNING inbox_id",
            dialect.fence_held("$4", "$5")
        ));
        let save = sql(save)
            .bind(inbox_id)
            .bind(state.to_string())
            .bind(now_ms());
        let saved = self.write_fenced(fence, save).await?;
        match fence {
            Some(fence) if saved.is_empty() => Err(fence.refused()),
            _ => Ok(()),
        }
    }
}
