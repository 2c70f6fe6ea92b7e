//! `Inbox` on PostgreSQL: table `inbox`, and `messages` for the turn written on
//! completion, in the statement that marks it answered: a turn's end (its lease checked,
//! the message answered, its journal cleared, its history and its reply's outbox row
//! written, and the wake-ups telling the other workers sent at its commit) is one
//! statement, one round trip; so is a message stored with its
//! conversation's unanswered messages read (`accept_reading`).

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::coordination::{WAKE_CHANNEL, fence_binds, hold_fence};
use super::{PostgresStore, conversation_from_row, database_error, id_column};
use crate::ids::ConversationKey;
use crate::ports::{
    Acceptance, Fence, Inbound, InboundExtras, Inbox, InboxRecord, InboxStatus, OutgoingMessage,
    StorageError, TurnRecord, WakeUp, now_ms,
};
use crate::storage::rows::{entries_json, extras_json};
use crate::storage::sql::outbox::insert_if_any;

/// A turn's end in one statement. `$1`/`$2`: the fence (lease and generation, `NULL`s when
/// unfenced), its row locked `FOR SHARE` while it is checked; `$3`: the message; `$4`: the
/// reply; `$5`: now; `$6`: the history (`entries_json`); `$7`–`$11`: the reply's outbox row
/// (channel, conversation, kind, text, event replied to), none when `$7` is `NULL`;
/// `$12`: the payloads of the wake-ups sent with the turn's end (`NOTIFY` on `$13`, the
/// wake-ups' channel: at the commit, only when it ended the turn).
const COMPLETE: &str = "WITH fence AS (SELECT 1 FROM leases WHERE name = $1 AND generation = $2 \
     FOR SHARE), \
     ended AS (UPDATE inbox SET status = 'answered', reply = $4, error = NULL, \
     updated_at_ms = $5 WHERE id = $3 AND status IN ('accepted', 'suspended') \
     AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM fence)) RETURNING id), \
     cleared AS (DELETE FROM turn_journal WHERE inbox_id IN (SELECT id FROM ended)), \
     remembered AS (INSERT INTO messages (conversation_key, inbox_id, profile_id, role, \
     content, tool_calls, tool_call_id, is_chat_text, created_at_ms) \
     SELECT entry->>'conversation_key', ended.id, entry->>'profile_id', entry->>'role', \
     entry->>'content', entry->>'tool_calls', entry->>'tool_call_id', \
     (entry->>'is_chat_text')::integer <> 0, (entry->>'created_at_ms')::bigint \
     FROM ended, jsonb_array_elements($6::jsonb) WITH ORDINALITY AS entries (entry, position) \
     ORDER BY position), \
     queued AS (INSERT INTO outbox (channel, conversation_id, inbox_id, kind, text, \
     reply_to_event, created_at_ms, updated_at_ms) \
     SELECT $7, $8, ended.id, $9, $10, $11, $5, $5 FROM ended WHERE $7::text IS NOT NULL \
     RETURNING id), \
     woken AS (SELECT pg_notify($13, payload) FROM ended, \
     unnest($12::text[]) AS payload) \
     SELECT (SELECT count(*) FROM ended) AS ended, (SELECT id FROM queued) AS outbox_id, \
     ($1::text IS NULL OR EXISTS (SELECT 1 FROM fence)) AS held, \
     (SELECT count(*) FROM woken) AS woken";

/// The columns of an `InboxRecord`, spelled once for every query that reads one.
macro_rules! record_columns {
    () => {
        concat!(
            "id, channel, conversation_id, member_id, text, platform_event_id, extras, ",
            "received_at_ms, status, attempts, next_attempt_at_ms, reply, error"
        )
    };
}

/// Whether a row of `inbox` has a turn journal, as the column `journaled`.
macro_rules! journaled_column {
    () => {
        "EXISTS (SELECT 1 FROM turn_journal WHERE turn_journal.inbox_id = inbox.id) AS journaled"
    };
}

/// A query reading `InboxRecord`s from `inbox`, `$tail` its conditions.
macro_rules! select_record {
    ($tail:literal) => {
        concat!(
            "SELECT ",
            record_columns!(),
            ", ",
            journaled_column!(),
            " FROM inbox ",
            $tail
        )
    };
}

/// `accept_reading` in one statement: the message stored (`$1`–`$9`, as `insert_inbound`
/// binds them) and, when it was, its conversation's unanswered messages with it. The
/// statement's snapshot does not see the row it inserts, so that one comes from
/// `RETURNING`; a row another transaction numbers after it commits after this snapshot.
const ACCEPT_READING: &str = concat!(
    "WITH stored AS (INSERT INTO inbox (id, channel, conversation_id, member_id, text, ",
    "platform_event_id, extras, received_at_ms, updated_at_ms) ",
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING RETURNING seq, ",
    record_columns!(),
    ") SELECT seq, ",
    record_columns!(),
    ", false AS journaled FROM stored UNION ALL SELECT seq, ",
    record_columns!(),
    ", ",
    journaled_column!(),
    " FROM inbox WHERE status = 'accepted' AND channel = $2 AND conversation_id = $3 ",
    "AND EXISTS (SELECT 1 FROM stored) ORDER BY seq"
);

fn record_from_row(row: &PgRow) -> Result<InboxRecord, StorageError> {
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

/// Store `inbound` as accepted unless its id or its platform event was accepted before;
/// whether it was stored. A scheduled task's turn is stored so, in the transaction that
/// fires it.
pub(super) async fn insert_inbound(
    connection: &mut PgConnection,
    inbound: &Inbound,
) -> Result<bool, StorageError> {
    let extras = extras_json(&inbound.extras)?;
    let inserted = sqlx::query(
        "INSERT INTO inbox (id, channel, conversation_id, member_id, text, \
         platform_event_id, extras, received_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
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

/// The message `inbound` repeats (its id or its platform event accepted before).
async fn duplicate_of(
    connection: &mut PgConnection,
    inbound: &Inbound,
) -> Result<Acceptance, StorageError> {
    let existing = sqlx::query(select_record!(
        "WHERE id = $1 OR (channel = $2 AND platform_event_id IS NOT NULL \
         AND platform_event_id = $3) ORDER BY seq LIMIT 1"
    ))
    .bind(&inbound.id)
    .bind(inbound.conversation.channel())
    .bind(&inbound.platform_event_id)
    .fetch_one(&mut *connection)
    .await
    .map_err(database_error)?;
    Ok(Acceptance::Duplicate(Box::new(record_from_row(&existing)?)))
}

/// End the turn of `inbox_id` (`status` 'answered' or 'failed'), clearing its journal, in
/// the caller's transaction; refused when it was not waiting for an answer.
async fn end_turn(
    connection: &mut PgConnection,
    inbox_id: &str,
    status: &str,
    reply: &str,
    error: Option<&str>,
) -> Result<(), StorageError> {
    let updated = sqlx::query(
        "UPDATE inbox SET status = $1, reply = $2, error = $3, updated_at_ms = $4 \
         WHERE id = $5 AND status IN ('accepted', 'suspended')",
    )
    .bind(status)
    .bind(reply)
    .bind(error)
    .bind(now_ms())
    .bind(inbox_id)
    .execute(&mut *connection)
    .await
    .map_err(database_error)?;
    // Ended already (or unknown): writing the history again would duplicate it.
    if updated.rows_affected() != 1 {
        return Err(not_waiting(inbox_id));
    }
    super::turn_journal::clear(connection, inbox_id).await
}

#[async_trait]
impl Inbox for PostgresStore {
    async fn accept(&self, inbound: &Inbound) -> Result<Acceptance, StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        if insert_inbound(&mut connection, inbound).await? {
            return Ok(Acceptance::New);
        }
        duplicate_of(&mut connection, inbound).await
    }

    async fn accept_reading(
        &self,
        inbound: &Inbound,
    ) -> Result<(Acceptance, Vec<InboxRecord>), StorageError> {
        let extras = extras_json(&inbound.extras)?;
        let rows = sqlx::query(ACCEPT_READING)
            .bind(&inbound.id)
            .bind(inbound.conversation.channel())
            .bind(inbound.conversation.conversation_id())
            .bind(inbound.member_id.as_str())
            .bind(&inbound.text)
            .bind(&inbound.platform_event_id)
            .bind(&extras)
            .bind(inbound.received_at_ms)
            .bind(now_ms())
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        if rows.is_empty() {
            let mut connection = self.pool.acquire().await.map_err(database_error)?;
            return Ok((duplicate_of(&mut connection, inbound).await?, Vec::new()));
        }
        let unanswered = rows.iter().map(record_from_row).collect::<Result<_, _>>()?;
        Ok((Acceptance::New, unanswered))
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
            "WHERE status = 'accepted' AND channel = $1 AND conversation_id = $2 ORDER BY seq"
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
        self.complete_waking(inbox_id, turn, fence, &[])
            .await
            .map(|(outbox_id, _)| outbox_id)
    }

    async fn complete_waking(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
        fence: Option<&Fence>,
        wake_ups: &[WakeUp],
    ) -> Result<(Option<i64>, bool), StorageError> {
        // The answer, its history and the reply's delivery commit together or not at all.
        let (lease, generation) = fence_binds(fence);
        let history = entries_json(turn.conversation_key.as_str(), &turn.messages)?;
        let outgoing = turn.outgoing.as_ref();
        let kind = outgoing
            .map(|message| serde_json::to_string(&message.kind))
            .transpose()
            .map_err(|error| StorageError::Corrupt(format!("outbox kind: {error}")))?;
        let row = sqlx::query(COMPLETE)
            .bind(lease)
            .bind(generation)
            .bind(inbox_id)
            .bind(&turn.reply)
            .bind(now_ms())
            .bind(&history)
            .bind(outgoing.map(|message| message.conversation.channel()))
            .bind(outgoing.map(|message| message.conversation.conversation_id()))
            .bind(kind)
            .bind(outgoing.map(|message| message.text.as_str()))
            .bind(outgoing.and_then(|message| message.reply_to_event.as_deref()))
            .bind(wake_ups.iter().map(WakeUp::to_payload).collect::<Vec<_>>())
            .bind(WAKE_CHANNEL)
            .fetch_one(&self.pool)
            .await
            .map_err(database_error)?;
        if row.get::<i64, _>("ended") == 1 {
            self.turn_remembered(
                turn.conversation_key.as_str(),
                inbox_id,
                &turn.messages,
                fence,
            );
            return Ok((row.get("outbox_id"), true));
        }
        match fence {
            Some(fence) if !row.get::<bool, _>("held") => Err(fence.refused()),
            // Ended already (or unknown): writing the history again would duplicate it.
            _ => Err(not_waiting(inbox_id)),
        }
    }

    async fn record_failure(
        &self,
        inbox_id: &str,
        error: &str,
        next_attempt_at_ms: i64,
    ) -> Result<u32, StorageError> {
        let attempts: Option<i64> = sqlx::query_scalar(
            "UPDATE inbox SET attempts = attempts + 1, error = $1, \
             next_attempt_at_ms = $2, updated_at_ms = $3 \
             WHERE id = $4 AND status IN ('accepted', 'suspended') RETURNING attempts",
        )
        .bind(error)
        .bind(next_attempt_at_ms)
        .bind(now_ms())
        .bind(inbox_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
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
        let stored = sqlx::query(
            "UPDATE inbox SET text = $1, extras = $2, updated_at_ms = $3 \
             WHERE id = $4 AND status IN ('accepted', 'suspended')",
        )
        .bind(text)
        .bind(&extras)
        .bind(now_ms())
        .bind(inbox_id)
        .execute(&self.pool)
        .await
        .map_err(database_error)?;
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
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        hold_fence(&mut transaction, fence).await?;
        end_turn(&mut transaction, inbox_id, "failed", reply, Some(error)).await?;
        let queued = insert_if_any(&mut *transaction, outgoing).await?;
        transaction.commit().await.map_err(database_error)?;
        Ok(queued)
    }

    async fn get(&self, inbox_id: &str) -> Result<Option<InboxRecord>, StorageError> {
        let row = sqlx::query(select_record!("WHERE id = $1"))
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
        let known =
            sqlx::query("SELECT 1 FROM inbox WHERE channel = $1 AND platform_event_id = $2")
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
