//! `Outbox` on SQLite: table `outbox`. `insert_if_any` and `insert_outgoing` are also run
//! inside the transactions of `Inbox::complete`, `Inbox::give_up` and
//! `PendingActions::suspend`, so a turn's answer (or question) and the messages delivering
//! it are stored together.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::{SqliteStore, conversation_from_row, database_error};
use crate::ports::{Outbox, OutboxEntry, OutgoingKind, OutgoingMessage, StorageError, now_ms};

/// Store `message` as to deliver, on the writer's connection; its id.
pub(super) async fn insert_outgoing(
    connection: &mut SqliteConnection,
    message: &OutgoingMessage,
) -> Result<i64, StorageError> {
    insert_outgoing_once(connection, message, None, false)
        .await?
        .ok_or_else(|| StorageError::Database("the outbox row was not stored".into()))
}

/// `insert_outgoing`, unless a row was stored under `once_key` before (then `None`);
/// `secret`: its text is removed once delivered.
async fn insert_outgoing_once(
    connection: &mut SqliteConnection,
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
         once_key, created_at_ms, updated_at_ms, secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
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
    connection: &mut SqliteConnection,
    message: Option<&OutgoingMessage>,
) -> Result<Option<i64>, StorageError> {
    match message {
        Some(message) => Ok(Some(insert_outgoing(connection, message).await?)),
        None => Ok(None),
    }
}

fn entry_from_row(row: &SqliteRow) -> Result<OutboxEntry, StorageError> {
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

/// Delivered: a secret's text goes in the same statement.
const SCRUBBED_DELIVERED: &str = concat!(
    "UPDATE outbox SET status = 'delivered', platform_id = ?, error = NULL, updated_at_ms = ?, \
     text = CASE WHEN secret = 1 THEN '",
    crate::ports::secret_removed_text!(),
    "' ELSE text END WHERE id = ?"
);
/// Given up: a secret's text goes too.
const SCRUBBED_ABANDONED: &str = concat!(
    "UPDATE outbox SET status = 'abandoned', error = ?, updated_at_ms = ?, \
     text = CASE WHEN secret = 1 THEN '",
    crate::ports::secret_removed_text!(),
    "' ELSE text END WHERE id = ?"
);

/// The one value an outbox update sets besides its time.
enum SetTo {
    Number(i64),
    Text(Option<String>),
}

impl SqliteStore {
    /// `sql` on the outbox row `id`, on the writer: binds `value`, the time, then `id`.
    async fn update_outbox(
        &self,
        sql: &'static str,
        id: i64,
        value: SetTo,
    ) -> Result<u64, StorageError> {
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let query = match value {
                        SetTo::Number(number) => sqlx::query(sql).bind(number),
                        SetTo::Text(text) => sqlx::query(sql).bind(text),
                    };
                    let done = query
                        .bind(now_ms())
                        .bind(id)
                        .execute(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    Ok(done.rows_affected())
                })
            })
            .await
    }
}

#[async_trait]
impl Outbox for SqliteStore {
    async fn enqueue(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let message = message.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move { insert_outgoing(connection, &message).await })
            })
            .await
    }

    async fn enqueue_once(
        &self,
        once_key: &str,
        message: &OutgoingMessage,
    ) -> Result<Option<i64>, StorageError> {
        let (once_key, message) = (once_key.to_string(), message.clone());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    insert_outgoing_once(connection, &message, Some(&once_key), false).await
                })
            })
            .await
    }

    async fn enqueue_secret(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let message = message.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    insert_outgoing_once(connection, &message, None, true)
                        .await?
                        .ok_or_else(|| {
                            StorageError::Database("the outbox row was not stored".into())
                        })
                })
            })
            .await
    }

    async fn undelivered(&self, channel: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        let rows = sqlx::query(
            "SELECT id, channel, conversation_id, inbox_id, kind, text, reply_to_event, \
             created_at_ms, attempts, parts_delivered FROM outbox \
             WHERE channel = ? AND status = 'pending' ORDER BY id",
        )
        .bind(channel)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(entry_from_row).collect()
    }

    async fn part_delivered(&self, id: i64, parts: u32) -> Result<(), StorageError> {
        self.update_outbox(
            "UPDATE outbox SET parts_delivered = ?, updated_at_ms = ? WHERE id = ?",
            id,
            SetTo::Number(i64::from(parts)),
        )
        .await?;
        Ok(())
    }

    async fn delivered(&self, id: i64, platform_id: Option<&str>) -> Result<(), StorageError> {
        self.update_outbox(
            SCRUBBED_DELIVERED,
            id,
            SetTo::Text(platform_id.map(str::to_string)),
        )
        .await?;
        Ok(())
    }

    async fn attempt_failed(&self, id: i64, error: &str) -> Result<u32, StorageError> {
        let error = error.to_string();
        let attempts: Option<i64> = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query_scalar(
                        "UPDATE outbox SET attempts = attempts + 1, error = ?, updated_at_ms = ? \
                         WHERE id = ? RETURNING attempts",
                    )
                    .bind(&error)
                    .bind(now_ms())
                    .bind(id)
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)
                })
            })
            .await?;
        Ok(attempts
            .and_then(|attempts| u32::try_from(attempts).ok())
            .unwrap_or(0))
    }

    async fn abandon(&self, id: i64, error: &str) -> Result<(), StorageError> {
        self.update_outbox(SCRUBBED_ABANDONED, id, SetTo::Text(Some(error.to_string())))
            .await?;
        Ok(())
    }
}
