//! The in-memory `TurnJournal`: running turns' saved state by inbox id, in the store's main
//! mutex beside the inbox.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ports::{Fence, StorageError, TurnJournal};

#[async_trait]
impl TurnJournal for InMemoryStore {
    async fn load_turn(&self, inbox_id: &str) -> Result<Option<serde_json::Value>, StorageError> {
        Ok(self.lock().journal.get(inbox_id).cloned())
    }

    async fn save_turn_fenced(
        &self,
        inbox_id: &str,
        state: &serde_json::Value,
        fence: Option<&Fence>,
    ) -> Result<(), StorageError> {
        let _held = self.coordination.hold(fence)?;
        let mut locked = self.lock();
        // As SQLite's foreign key: only a stored message has a turn.
        if !locked
            .inbox
            .iter()
            .any(|record| record.inbound.id == inbox_id)
        {
            return Err(StorageError::Database(format!(
                "no inbox message {inbox_id:?} to journal a turn for"
            )));
        }
        locked.journal.insert(inbox_id.to_string(), state.clone());
        Ok(())
    }
}
