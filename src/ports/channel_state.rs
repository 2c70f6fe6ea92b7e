//! Small durable facts a channel keeps about its platform: the last Telegram update
//! handled, which chat message shows which confirmation, and the like. Keys are scoped
//! by channel, so channels never see each other's state.

use async_trait::async_trait;

use super::StorageError;

#[async_trait]
pub trait ChannelState: Send + Sync {
    async fn get_state(&self, channel: &str, key: &str) -> Result<Option<String>, StorageError>;
    /// Insert or replace; written before this returns.
    async fn put_state(&self, channel: &str, key: &str, value: &str) -> Result<(), StorageError>;
    async fn delete_state(&self, channel: &str, key: &str) -> Result<(), StorageError>;
    /// Every key of `channel` starting with `prefix`, with its value, in key order.
    async fn list_state(
        &self,
        channel: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError>;
}
