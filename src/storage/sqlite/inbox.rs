//! `Inbox` on SQLite: table `inbox`, and `messages` for the turn written on completion.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::{SqliteStore, conversation_from_row, database_error, id_column, memory::entries_json};
use crate::ids::ConversationKey;
use crate::ports::{
    Acceptance, Fence, Inbound, InboundExtras, Inbox, InboxRecord, InboxStatus, OutgoingMessage,
    StorageError, TurnRecord, now_ms,
};
use crate::storage::rows::extras_json;
use crate::storage::sql::outbox::insert_if_any;

/// The columns of an `InboxRecord`, spelled once for every query that reads one.
macro_rules! select_record {
    ($tail:literal) => {
        concat!(
            "SELECT id, channel, conversation_id, member_id, text, platform_event_id, extras, ",
            "received_at_ms, status, attempts, next_attempt_at_ms, reply, error, ",
            "EXISTS (SELECT 1 FROM turn_journal WHERE turn_journal.inbox_id = inbox.id) ",
            "AS journaled FROM inbox ",
            $tail
        )
    };
}

fn record_from_row(row: &SqliteRow) -> Result<InboxRecord, StorageError> {
    let status: String = row.get("status");
    let attempts: i64 = row.get("attempts");
    Ok(InboxRecord {
        inbound: Inbound {
            id: row.get("id"),
            conversation: conversation_from_row(row, "inbox")?,
            member_id: id_column(row, "inbox", "member_id")?,
            text: row.get("text"),
            platform_event_id: row.get("platform_event_id"),
            received_at_ms: row.get("received_at_ms"),
            extras: match row.get::<Option<String>, _>("extras") {
                Some(json) => serde_json::from_str(&json)
                    .map_err(|error| StorageError::Corrupt(format!("inbox extras: {error}")))?,
                None => Default::default(),
            },
        },
        status: InboxStatus::parse(&status)?,
        attempts: u32::try_from(attempts).unwrap_or(0),
        next_attempt_at_ms: row.get("next_attempt_at_ms"),
        reply: row.get("reply"),
        error: row.get("error"),
        journaled: row.get("journaled"),
    })
}

fn not_waiting(inbox_id: &str) -> StorageError {
    StorageError::Corrupt(format!(
        "inbox message {inbox_id:?} is unknown or not waiting for an answer"
    ))
}

/// Store `inbound` as accepted, on the writer's connection, unless its id or its platform
/// event was accepted before; whether it was stored. A scheduled task's turn is stored so,
/// in the transaction that fires it.
pub(super) async fn insert_inbound(
    connection: &mut SqliteConnection,
    inbound: &Inbound,
) -> Result<bool, StorageError> {
    let extras = extras_json(&inbound.extras)?;
    let inserted = sqlx::query(
        "INSERT INTO inbox (id, channel, conversation_id, member_id, text, \
         platform_event_id, extras, received_at_ms, updated_at_ms) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
    )
    .bind(&inbound.id)
    .bind(inbound.conversation.channel())
    .bind(inbound.conversation.conversation_id())
    .bind(inbound.member_id.as_str())
    .bind(&inbound.text)
    .bind(&inbound.platform_event_id)
    .bind(&extras)
    .bind(inbound.received_at_ms)
    .bind(now_ms())
    .execute(&mut *connection)
    .await
    .map_err(database_error)?;
    Ok(inserted.rows_affected() == 1)
}

#[async_trait]
impl Inbox for SqliteStore {
    async fn accept(&self, inbound: &Inbound) -> Result<Acceptance, StorageError> {
        let row = inbound.clone();
        let inserted = self
            .writer
            .run(move |connection| Box::pin(async move { insert_inbound(connection, &row).await }))
            .await?;
        if inserted {
            return Ok(Acceptance::New);
        }
        let existing = sqlx::query(select_record!(
            "WHERE id = ? OR (channel = ? AND platform_event_id IS NOT NULL \
             AND platform_event_id = ?) ORDER BY seq LIMIT 1"
        ))
        .bind(&inbound.id)
        .bind(inbound.conversation.channel())
        .bind(&inbound.platform_event_id)
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(Acceptance::Duplicate(Box::new(record_from_row(&existing)?)))
    }

    async fn unanswered(&self) -> Result<Vec<InboxRecord>, StorageError> {
        let rows = sqlx::query(select_record!("WHERE status = 'accepted' ORDER BY seq"))
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        rows.iter().map(record_from_row).collect()
    }

    async fn unanswered_in(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Vec<InboxRecord>, StorageError> {
        let rows = sqlx::query(select_record!(
            "WHERE status = 'accepted' AND channel = ? AND conversation_id = ? ORDER BY seq"
        ))
        .bind(conversation.channel())
        .bind(conversation.conversation_id())
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(record_from_row).collect()
    }

    async fn complete_fenced(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
        fence: Option<&Fence>,
    ) -> Result<Option<i64>, StorageError> {
        let (coordination, fence) = (self.coordination(), fence.cloned());
        // The trigger `inbox_answered_writes_history` writes the history from
        // `turn_messages` within the UPDATE; the reply's delivery is queued in the same
        // transaction: all of it commits or none does.
        let (id, reply) = (inbox_id.to_string(), turn.reply.clone());
        let history = entries_json(turn.conversation_key.as_str(), &turn.messages)?;
        let outgoing = turn.outgoing.clone();
        let queued = self
            .writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    coordination.check(fence.as_ref())?;
                    let updated = sqlx::query(
                        "UPDATE inbox SET status = 'answered', reply = ?, turn_messages = ?, \
                         error = NULL, updated_at_ms = ? WHERE id = ? AND status IN ('accepted', 'suspended')",
                    )
                    .bind(&reply)
                    .bind(&history)
                    .bind(now_ms())
                    .bind(&id)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    // Answered already (or unknown): writing the history again would
                    // duplicate it.
                    if updated.rows_affected() != 1 {
                        return Err(not_waiting(&id));
                    }
                    insert_if_any(connection, outgoing.as_ref()).await
                })
            })
            .await?;
        self.history.lock().await.appended_turn(
            turn.conversation_key.as_str(),
            inbox_id,
            &turn.messages,
            None,
        );
        Ok(queued)
    }

    async fn record_failure(
        &self,
        inbox_id: &str,
        error: &str,
        next_attempt_at_ms: i64,
    ) -> Result<u32, StorageError> {
        let (id, error) = (inbox_id.to_string(), error.to_string());
        let attempts: Option<i64> = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query_scalar(
                        "UPDATE inbox SET attempts = attempts + 1, error = ?, \
                         next_attempt_at_ms = ?, updated_at_ms = ? \
                         WHERE id = ? AND status IN ('accepted', 'suspended') RETURNING attempts",
                    )
                    .bind(&error)
                    .bind(next_attempt_at_ms)
                    .bind(now_ms())
                    .bind(&id)
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)
                })
            })
            .await?;
        let attempts = attempts.ok_or_else(|| not_waiting(inbox_id))?;
        Ok(u32::try_from(attempts).unwrap_or(u32::MAX))
    }

    async fn store_transcript(
        &self,
        inbox_id: &str,
        text: &str,
        extras: &InboundExtras,
    ) -> Result<(), StorageError> {
        let extras = extras_json(extras)?;
        let (id, text) = (inbox_id.to_string(), text.to_string());
        let stored = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "UPDATE inbox SET text = ?, extras = ?, updated_at_ms = ? \
                         WHERE id = ? AND status IN ('accepted', 'suspended')",
                    )
                    .bind(&text)
                    .bind(&extras)
                    .bind(now_ms())
                    .bind(&id)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)
                })
            })
            .await?;
        if stored.rows_affected() == 0 {
            return Err(not_waiting(inbox_id));
        }
        Ok(())
    }

    async fn give_up_fenced(
        &self,
        inbox_id: &str,
        error: &str,
        reply: &str,
        outgoing: Option<&OutgoingMessage>,
        fence: Option<&Fence>,
    ) -> Result<Option<i64>, StorageError> {
        let (id, error, reply) = (inbox_id.to_string(), error.to_string(), reply.to_string());
        let outgoing = outgoing.cloned();
        let (coordination, fence) = (self.coordination(), fence.cloned());
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    coordination.check(fence.as_ref())?;
                    let updated = sqlx::query(
                        "UPDATE inbox SET status = 'failed', error = ?, reply = ?, \
                         updated_at_ms = ? WHERE id = ? AND status IN ('accepted', 'suspended')",
                    )
                    .bind(&error)
                    .bind(&reply)
                    .bind(now_ms())
                    .bind(&id)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if updated.rows_affected() != 1 {
                        return Err(not_waiting(&id));
                    }
                    insert_if_any(connection, outgoing.as_ref()).await
                })
            })
            .await
    }

    async fn get(&self, inbox_id: &str) -> Result<Option<InboxRecord>, StorageError> {
        let row = sqlx::query(select_record!("WHERE id = ?"))
            .bind(inbox_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn knows_event(
        &self,
        channel: &str,
        platform_event_id: &str,
    ) -> Result<bool, StorageError> {
        let known = sqlx::query("SELECT 1 FROM inbox WHERE channel = ? AND platform_event_id = ?")
            .bind(channel)
            .bind(platform_event_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        Ok(known.is_some())
    }

    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(database_error)
    }
}
