//! `Outbox` on PostgreSQL: table `outbox`. `insert_if_any` and `insert_outgoing` also run
//! inside the transactions of `Inbox::complete`, `Inbox::give_up` and
//! `PendingActions::suspend`, so a turn's answer (or question) and the messages delivering
//! it are stored together.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{PostgresStore, conversation_from_row, database_error};
use crate::ports::{Outbox, OutboxEntry, OutgoingKind, OutgoingMessage, StorageError, now_ms};

/// Store `message` as to deliver, on the caller's connection; its id.
pub(super) async fn insert_outgoing(
    connection: &mut PgConnection,
    message: &OutgoingMessage,
) -> Result<i64, StorageError> {
    insert_outgoing_once(connection, message, None, false)
        .await?
        .ok_or_else(|| StorageError::Database("the outbox row was not stored".into()))
}

/// `insert_outgoing`, unless a row was stored under `once_key` before (then `None`);
/// `secret`: its text is removed once delivered.
async fn insert_outgoing_once(
    connection: &mut PgConnection,
    message: &OutgoingMessage,
    once_key: Option<&str>,
    secret: bool,
) -> Result<Option<i64>, StorageError> {
    let kind = serde_json::to_string(&message.kind)
        .map_err(|error| StorageError::Corrupt(format!("outbox kind: {error}")))?;
    let now = now_ms();
    // One statement: a row already stored under the key leaves no row to return.
    sqlx::query_scalar(
        "INSERT INTO outbox (channel, conversation_id, inbox_id, kind, text, reply_to_event, \
         once_key, created_at_ms, updated_at_ms, secret) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (once_key) WHERE once_key IS NOT NULL DO NOTHING RETURNING id",
    )
    .bind(message.conversation.channel())
    .bind(message.conversation.conversation_id())
    .bind(&message.inbox_id)
    .bind(kind)
    .bind(&message.text)
    .bind(&message.reply_to_event)
    .bind(once_key)
    .bind(now)
    .bind(now)
    .bind(secret)
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)
}

/// `insert_outgoing` for the message a write may come with; its id.
pub(super) async fn insert_if_any(
    connection: &mut PgConnection,
    message: Option<&OutgoingMessage>,
) -> Result<Option<i64>, StorageError> {
    match message {
        Some(message) => Ok(Some(insert_outgoing(connection, message).await?)),
        None => Ok(None),
    }
}

fn entry_from_row(row: &PgRow) -> Result<OutboxEntry, StorageError> {
    let kind: OutgoingKind = serde_json::from_str(&row.get::<String, _>("kind"))
        .map_err(|error| StorageError::Corrupt(format!("outbox kind: {error}")))?;
    Ok(OutboxEntry {
        id: row.get("id"),
        message: OutgoingMessage {
            conversation: conversation_from_row(row, "outbox")?,
            inbox_id: row.get("inbox_id"),
            text: row.get("text"),
            kind,
            reply_to_event: row.get("reply_to_event"),
        },
        created_at_ms: row.get("created_at_ms"),
        attempts: u32::try_from(row.get::<i64, _>("attempts")).unwrap_or(0),
        parts_delivered: u32::try_from(row.get::<i64, _>("parts_delivered")).unwrap_or(0),
    })
}

#[async_trait]
impl Outbox for PostgresStore {
    async fn enqueue(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        insert_outgoing(&mut connection, message).await
    }

    async fn enqueue_once(
        &self,
        once_key: &str,
        message: &OutgoingMessage,
    ) -> Result<Option<i64>, StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        insert_outgoing_once(&mut connection, message, Some(once_key), false).await
    }

    async fn enqueue_secret(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        insert_outgoing_once(&mut connection, message, None, true)
            .await?
            .ok_or_else(|| StorageError::Database("the outbox row was not stored".into()))
    }

    async fn undelivered(&self, channel: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        let rows = sqlx::query(
            "SELECT id, channel, conversation_id, inbox_id, kind, text, reply_to_event, \
             created_at_ms, attempts, parts_delivered FROM outbox \
             WHERE channel = $1 AND status = 'pending' ORDER BY id",
        )
        .bind(channel)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(entry_from_row).collect()
    }

    async fn part_delivered(&self, id: i64, parts: u32) -> Result<(), StorageError> {
        sqlx::query("UPDATE outbox SET parts_delivered = $1, updated_at_ms = $2 WHERE id = $3")
            .bind(i64::from(parts))
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(database_error)
    }

    async fn delivered(&self, id: i64, platform_id: Option<&str>) -> Result<(), StorageError> {
        sqlx::query(concat!(
            "UPDATE outbox SET status = 'delivered', platform_id = $1, error = NULL, \
             updated_at_ms = $2, text = CASE WHEN secret THEN '",
            crate::ports::secret_removed_text!(),
            "' ELSE text END WHERE id = $3"
        ))
        .bind(platform_id)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn attempt_failed(&self, id: i64, error: &str) -> Result<u32, StorageError> {
        let attempts: Option<i64> = sqlx::query_scalar(
            "UPDATE outbox SET attempts = attempts + 1, error = $1, updated_at_ms = $2 \
             WHERE id = $3 RETURNING attempts",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(attempts
            .and_then(|attempts| u32::try_from(attempts).ok())
            .unwrap_or(0))
    }

    async fn abandon(&self, id: i64, error: &str) -> Result<(), StorageError> {
        sqlx::query(concat!(
            "UPDATE outbox SET status = 'abandoned', error = $1, updated_at_ms = $2, \
             text = CASE WHEN secret THEN '",
            crate::ports::secret_removed_text!(),
            "' ELSE text END WHERE id = $3"
        ))
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }
}
