//! Records the intents engine's tools read through a `DataSource` (orders, customers), kept
//! in hearth's own database: one JSON record per collection and id.

use async_trait::async_trait;

use super::StorageError;

#[async_trait]
pub trait IntentRecords: Send + Sync {
    /// The record `id` of `collection`, if stored.
    async fn get_record(
        &self,
        collection: &str,
        id: &str,
    ) -> Result<Option<serde_json::Value>, StorageError>;
    /// Store `record` as `id` of `collection`, replacing what was there.
    async fn put_record(
        &self,
        collection: &str,
        id: &str,
        record: &serde_json::Value,
    ) -> Result<(), StorageError>;
}
