//! The DataSource port: records the intents' tools read (`get(collection, id)`), with a
//! JSON-file adapter here and one over the `IntentRecords` storage port (the
//! `intent_records` table of hearth's database, or the in-memory store); one test suite
//! runs against every adapter.
//!
//! A JSON file holds one collection as an object of id → record (`data/orders.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::Value;

use crate::ports::{IntentRecords, StorageError};

/// The collection `check_order_status` reads.
pub const ORDERS: &str = "orders";

#[derive(Debug, thiserror::Error)]
pub enum DataSourceError {
    #[error("cannot read data file {}: {message}", file.display())]
    File { file: PathBuf, message: String },
    #[error(transparent)]
    Storage(#[from] StorageError),
}

#[async_trait]
pub trait DataSource: Send + Sync {
    /// The record `id` of `collection`, if there is one.
    async fn get(&self, collection: &str, id: &str) -> Result<Option<Value>, DataSourceError>;

    async fn get_order(&self, order_id: &str) -> Result<Option<Value>, DataSourceError> {
        self.get(ORDERS, order_id).await
    }
}

/// Collections read from JSON files once, at start-up.
#[derive(Debug, Clone, Default)]
pub struct JsonDataSource {
    collections: BTreeMap<String, serde_json::Map<String, Value>>,
}

impl JsonDataSource {
    /// Read `file` as `collection` (an object of id → record).
    pub async fn load(collection: &str, file: &Path) -> Result<Self, DataSourceError> {
        let failed = |message: String| DataSourceError::File {
            file: file.to_path_buf(),
            message,
        };
        let text = tokio::fs::read_to_string(file)
            .await
            .map_err(|error| failed(error.to_string()))?;
        let records = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(records)) => records,
            Ok(_) => return Err(failed("expected an object of id → record".to_string())),
            Err(error) => return Err(failed(format!("invalid json: {error}"))),
        };
        Ok(JsonDataSource {
            collections: BTreeMap::from([(collection.to_string(), records)]),
        })
    }
}

#[async_trait]
impl DataSource for JsonDataSource {
    async fn get(&self, collection: &str, id: &str) -> Result<Option<Value>, DataSourceError> {
        Ok(self
            .collections
            .get(collection)
            .and_then(|records| records.get(id.trim()))
            .cloned())
    }
}

/// The `intent_records` table of hearth's database (or the in-memory store) as a data source.
pub struct RecordsDataSource(pub std::sync::Arc<dyn IntentRecords>);

#[async_trait]
impl DataSource for RecordsDataSource {
    async fn get(&self, collection: &str, id: &str) -> Result<Option<Value>, DataSourceError> {
        Ok(self.0.get_record(collection, id.trim()).await?)
    }
}
