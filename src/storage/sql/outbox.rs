//! `Outbox` on either SQL database: table `outbox`. `insert_if_any` and `insert_outgoing`
//! also run inside the transactions of `Inbox::complete`, `Inbox::give_up`,
//! `PendingActions::suspend` and the schedules' claims, so a turn's answer (or question)
//! and the messages delivering it are stored together.

use async_trait::async_trait;

use super::{SqlBackend, SqlConnection, SqlRow, Statement, conversation_from_row, sql};
use crate::ports::{Outbox, OutboxEntry, OutgoingKind, OutgoingMessage, StorageError, now_ms};

/// The statement storing `message` as to deliver, returning its id, unless a row was
/// stored under `once_key` before (then none: one statement, so racing stores make one
/// row); `secret`: its text is removed once delivered.
fn insert(
    message: &OutgoingMessage,
    once_key: Option<&str>,
    secret: bool,
) -> Result<Statement, StorageError> {
    let kind = serde_json::to_string(&message.kind)
        .map_err(|error| StorageError::Corrupt(format!("outbox kind: {error}")))?;
    let now = now_ms();
    Ok(sql(
        "INSERT INTO outbox (channel, conversation_id, inbox_id, kind, text, \
         reply_to_event, once_key, created_at_ms, updated_at_ms, secret) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9) \
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
    .bind(secret))
}

/// The id a row `insert` returned, if one was stored.
fn stored_id(row: Option<impl SqlRow>) -> Result<Option<i64>, StorageError> {
    row.map(|row| row.integer("id")).transpose()
}

fn not_stored() -> StorageError {
    StorageError::Database("the outbox row was not stored".into())
}

/// Store `message` as to deliver, in the caller's transaction; its id.
pub(crate) async fn insert_outgoing<C: SqlConnection>(
    connection: &mut C,
    message: &OutgoingMessage,
) -> Result<i64, StorageError> {
    let row = connection
        .fetch_optional(insert(message, None, false)?)
        .await?;
    stored_id(row)?.ok_or_else(not_stored)
}

/// `insert_outgoing` for the message a write may come with; its id.
pub(crate) async fn insert_if_any<C: SqlConnection>(
    connection: &mut C,
    message: Option<&OutgoingMessage>,
) -> Result<Option<i64>, StorageError> {
    match message {
        Some(message) => Ok(Some(insert_outgoing(connection, message).await?)),
        None => Ok(None),
    }
}

/// `insert_outgoing` for each of `messages`, in order; their ids.
pub(crate) async fn insert_each<C: SqlConnection>(
    connection: &mut C,
    messages: &[OutgoingMessage],
) -> Result<Vec<i64>, StorageError> {
    let mut ids = Vec::with_capacity(messages.len());
    for message in messages {
        ids.push(insert_outgoing(connection, message).await?);
    }
    Ok(ids)
}

fn entry_from_row(row: &impl SqlRow) -> Result<OutboxEntry, StorageError> {
    let kind: OutgoingKind = serde_json::from_str(&row.text("kind")?)
        .map_err(|error| StorageError::Corrupt(format!("outbox kind: {error}")))?;
    Ok(OutboxEntry {
        id: row.integer("id")?,
        message: OutgoingMessage {
            conversation: conversation_from_row(row, "outbox")?,
            inbox_id: row.optional_text("inbox_id")?,
            text: row.text("text")?,
            kind,
            reply_to_event: row.optional_text("reply_to_event")?,
        },
        created_at_ms: row.integer("created_at_ms")?,
        attempts: u32::try_from(row.integer("attempts")?).unwrap_or(0),
        parts_delivered: u32::try_from(row.integer("parts_delivered")?).unwrap_or(0),
    })
}

/// Delivered: a secret's text goes in the same statement.
const SCRUBBED_DELIVERED: &str = concat!(
    "UPDATE outbox SET status = 'delivered', platform_id = $1, error = NULL, \
     updated_at_ms = $2, text = CASE WHEN secret THEN '",
    crate::ports::secret_removed_text!(),
    "' ELSE text END WHERE id = $3"
);
/// Given up: a secret's text goes too.
const SCRUBBED_ABANDONED: &str = concat!(
    "UPDATE outbox SET status = 'abandoned', error = $1, updated_at_ms = $2, \
     text = CASE WHEN secret THEN '",
    crate::ports::secret_removed_text!(),
    "' ELSE text END WHERE id = $3"
);

#[async_trait]
impl<B: SqlBackend> Outbox for B {
    async fn enqueue(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let row = self.write_optional(insert(message, None, false)?).await?;
        stored_id(row)?.ok_or_else(not_stored)
    }

    async fn enqueue_once(
        &self,
        once_key: &str,
        message: &OutgoingMessage,
    ) -> Result<Option<i64>, StorageError> {
        let row = self
            .write_optional(insert(message, Some(once_key), false)?)
            .await?;
        stored_id(row)
    }

    async fn enqueue_secret(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let row = self.write_optional(insert(message, None, true)?).await?;
        stored_id(row)?.ok_or_else(not_stored)
    }

    async fn undelivered(&self, channel: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        let undelivered = sql(
            "SELECT id, channel, conversation_id, inbox_id, kind, text, \
             reply_to_event, created_at_ms, attempts, parts_delivered FROM outbox \
             WHERE channel = $1 AND status = 'pending' ORDER BY id",
        );
        let rows = self.read(undelivered.bind(channel)).await?;
        rows.iter().map(entry_from_row).collect()
    }

    async fn part_delivered(&self, id: i64, parts: u32) -> Result<(), StorageError> {
        let delivered =
            sql("UPDATE outbox SET parts_delivered = $1, updated_at_ms = $2 WHERE id = $3")
                .bind(i64::from(parts))
                .bind(now_ms())
                .bind(id);
        self.write_count(delivered).await.map(drop)
    }

    async fn delivered(&self, id: i64, platform_id: Option<&str>) -> Result<(), StorageError> {
        let delivered = sql(SCRUBBED_DELIVERED)
            .bind(platform_id)
            .bind(now_ms())
            .bind(id);
        self.write_count(delivered).await.map(drop)
    }

    async fn attempt_failed(&self, id: i64, error: &str) -> Result<u32, StorageError> {
        let failed = sql("UPDATE outbox SET attempts = attempts + 1, error = $1, \
             updated_at_ms = $2 WHERE id = $3 RETURNING attempts")
        .bind(error)
        .bind(now_ms())
        .bind(id);
        let attempts = match self.write_optional(failed).await? {
            Some(row) => row.integer("attempts")?,
            None => 0,
        };
        Ok(u32::try_from(attempts).unwrap_or(0))
    }

    async fn abandon(&self, id: i64, error: &str) -> Result<(), StorageError> {
        let abandoned = sql(SCRUBBED_ABANDONED).bind(error).bind(now_ms()).bind(id);
        self.write_count(abandoned).await.map(drop)
    }
}
