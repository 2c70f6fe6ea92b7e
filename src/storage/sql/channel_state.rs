//! `ChannelState` on either SQL database: table `channel_state`, what each channel keeps
//! between runs (offsets, open questions), one row per channel and key.

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, per_dialect, sql};
use crate::ports::{ChannelState, StorageError, now_ms};

#[async_trait]
impl<B: SqlBackend> ChannelState for B {
    async fn get_state(&self, channel: &str, key: &str) -> Result<Option<String>, StorageError> {
        let get = sql("SELECT value FROM channel_state WHERE channel = $1 AND key = $2");
        let row = self.read_optional(get.bind(channel).bind(key)).await?;
        row.map(|row| row.text("value")).transpose()
    }

    async fn put_state(&self, channel: &str, key: &str, value: &str) -> Result<(), StorageError> {
        let put = sql(
            "INSERT INTO channel_state (channel, key, value, updated_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (channel, key) DO UPDATE SET \
             value = excluded.value, updated_at_ms = excluded.updated_at_ms",
        );
        let put = put.bind(channel).bind(key).bind(value).bind(now_ms());
        self.write_count(put).await.map(drop)
    }

    async fn delete_state(&self, channel: &str, key: &str) -> Result<(), StorageError> {
        let delete = sql("DELETE FROM channel_state WHERE channel = $1 AND key = $2");
        self.write_count(delete.bind(channel).bind(key))
            .await
            .map(drop)
    }

    async fn list_state(
        &self,
        channel: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError> {
        // substr rather than LIKE: a key may hold `%` or `_`. Keys in byte order, whatever
        // PostgreSQL's collation.
        let list = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT key, value FROM channel_state WHERE channel = $1 \
             AND substr(key, 1, length($2)) = $2 ORDER BY key{}",
            dialect.byte_order()
        ));
        let rows = self.read(sql(list).bind(channel).bind(prefix)).await?;
        rows.iter()
            .map(|row| Ok((row.text("key")?, row.text("value")?)))
            .collect()
    }
}
