//! The in-memory `ChannelState`: each channel's keys and values, in the store's main mutex.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ports::{ChannelState, StorageError};

#[async_trait]
impl ChannelState for InMemoryStore {
    async fn get_state(&self, channel: &str, key: &str) -> Result<Option<String>, StorageError> {
        let state = self.lock();
        Ok(state
            .channel_state
            .get(&(channel.to_owned(), key.to_owned()))
            .cloned())
    }

    async fn put_state(&self, channel: &str, key: &str, value: &str) -> Result<(), StorageError> {
        self.lock()
            .channel_state
            .insert((channel.to_owned(), key.to_owned()), value.to_owned());
        Ok(())
    }

    async fn delete_state(&self, channel: &str, key: &str) -> Result<(), StorageError> {
        self.lock()
            .channel_state
            .remove(&(channel.to_owned(), key.to_owned()));
        Ok(())
    }

    async fn list_state(
        &self,
        channel: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError> {
        Ok(self
            .lock()
            .channel_state
            .iter()
            .filter(|((owner, key), _)| owner == channel && key.starts_with(prefix))
            .map(|((_, key), value)| (key.clone(), value.clone()))
            .collect())
    }
}
