//! `Inbox` on either SQL database: table `inbox`, and `messages` for the turn's history
//! written when it ends. A turn's end (the message answered or given up, its journal
//! cleared, its history and its reply's outbox row written) is one transaction of explicit
//! statements on SQLite; on PostgreSQL it is one statement, one round trip, its lease
//! checked in it and the wake-ups telling the other workers sent at its commit (`COMPLETE`),
//! and so is a message stored with its conversation's unanswered messages read
//! (`accept_reading`).

use std::sync::LazyLock;

use async_trait::async_trait;

use super::memory::{remember, turn_remembered};
use super::outbox::insert_if_any;
use super::{
    Dialect, SqlBackend, SqlConnection, SqlRow, Statement, conversation_from_row, id_column,
    per_dialect, sql,
};
use crate::ids::ConversationKey;
use crate::ports::{
    Acceptance, Fence, Inbound, InboundExtras, Inbox, InboxRecord, InboxStatus, OutgoingMessage,
    StorageError, TurnRecord, WakeUp, now_ms,
};
use crate::storage::postgres::WAKE_CHANNEL;
use crate::storage::rows::{entries_json, extras_json};

/// The columns of an `InboxRecord`, spelled once for every query that reads one.
macro_rules! record_columns {
    () => {
        "id, channel, conversation_id, member_id, text, platform_event_id, extras, \
         received_at_ms, status, attempts, next_attempt_at_ms, reply, error"
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

/// The message `$1` (accepted or suspended) ended as `$2` with reply `$3` and error `$4`
/// at `$5`; `$tail` follows its conditions.
macro_rules! end_turn {
    ($tail:literal) => {
        concat!(
            "UPDATE inbox SET status = $2, reply = $3, error = $4, updated_at_ms = $5 ",
            "WHERE id = $1 AND status IN ('accepted', 'suspended')",
            $tail
        )
    };
}

/// `insert_inbound`'s statement: `$1`–`$9` the message's columns.
macro_rules! insert_inbound {
    ($tail:literal) => {
        concat!(
            "INSERT INTO inbox (id, channel, conversation_id, member_id, text, ",
            "platform_event_id, extras, received_at_ms, updated_at_ms) ",
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
            $tail
        )
    };
}

/// A turn's end on PostgreSQL in one statement. `$1`–`$5`: the message, `'answered'`,
/// the reply, no error and now (as `end_turn!` binds them); `$6`: the history
/// (`entries_json`); `$7`–`$11`: the reply's outbox row (channel, conversation, kind,
/// text, event replied to), none when `$7` is `NULL`; `$12`: the payloads of the wake-ups
/// (a JSON array) sent with the turn's end (`NOTIFY` on `$13`, the wake-ups' channel: at
/// the commit, only when it ended the turn); `$14`/`$15`: the fence (lease and
/// generation, `NULL`s when unfenced), its row locked `FOR SHARE` while it is checked.
static COMPLETE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH fence AS (SELECT 1 FROM leases WHERE name = $14 AND generation = $15 FOR SHARE), \
         ended AS ({}), \
         cleared AS (DELETE FROM turn_journal WHERE inbox_id IN (SELECT id FROM ended)), \
         remembered AS ({}), \
         queued AS (INSERT INTO outbox (channel, conversation_id, inbox_id, kind, text, \
         reply_to_event, created_at_ms, updated_at_ms) \
         SELECT $7, $8, ended.id, $9, $10, $11, $5, $5 FROM ended WHERE $7::text IS NOT NULL \
         RETURNING id), \
         woken AS (SELECT pg_notify($13, payload) FROM ended, \
         jsonb_array_elements_text($12::jsonb) AS payload) \
         SELECT (SELECT count(*) FROM ended) AS ended, (SELECT id FROM queued) AS outbox_id, \
         ($14::text IS NULL OR EXISTS (SELECT 1 FROM fence)) AS held, \
         (SELECT count(*) FROM woken) AS woken",
        end_turn!(" AND ($14::text IS NULL OR EXISTS (SELECT 1 FROM fence)) RETURNING id"),
        remember(Dialect::Postgres, "$6", "ended.id", "ended, "),
    )
});

/// `accept_reading` in one statement on PostgreSQL: the message stored (`$1`–`$9`, as
/// `insert_inbound` binds them) and, when it was, its conversation's unanswered messages
/// with it. The statement's snapshot does not see the row it inserts, so that one comes
/// from `RETURNING`; a row another transaction numbers after it commits after this
/// snapshot.
const ACCEPT_READING: &str = concat!(
    "WITH stored AS (",
    insert_inbound!(" RETURNING seq, "),
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

fn record_from_row(row: &impl SqlRow) -> Result<InboxRecord, StorageError> {
    Ok(InboxRecord {
        inbound: Inbound {
            id: row.text("id")?,
            conversation: conversation_from_row(row, "inbox")?,
            member_id: id_column(row, "inbox", "member_id")?,
            text: row.text("text")?,
            platform_event_id: row.optional_text("platform_event_id")?,
            received_at_ms: row.integer("received_at_ms")?,
            extras: match row.optional_text("extras")? {
                Some(json) => serde_json::from_str(&json)
                    .map_err(|error| StorageError::Corrupt(format!("inbox extras: {error}")))?,
                None => Default::default(),
            },
        },
        status: InboxStatus::parse(&row.text("status")?)?,
        attempts: u32::try_from(row.integer("attempts")?).unwrap_or(0),
        next_attempt_at_ms: row.optional_integer("next_attempt_at_ms")?,
        reply: row.optional_text("reply")?,
        error: row.optional_text("error")?,
        journaled: row.flag("journaled")?,
    })
}

fn not_waiting(inbox_id: &str) -> StorageError {
    StorageError::Corrupt(format!(
        "inbox message {inbox_id:?} is unknown or not waiting for an answer"
    ))
}

/// `insert_inbound!` with `inbound`'s values bound.
fn inbound_bound(statement: &'static str, inbound: &Inbound) -> Result<Statement, StorageError> {
    Ok(sql(statement)
        .bind(&inbound.id)
        .bind(inbound.conversation.channel())
        .bind(inbound.conversation.conversation_id())
        .bind(inbound.member_id.as_str())
        .bind(&inbound.text)
        .bind(&inbound.platform_event_id)
        .bind(extras_json(&inbound.extras)?)
        .bind(inbound.received_at_ms)
        .bind(now_ms()))
}

/// Store `inbound` as accepted, in the caller's transaction, unless its id or its platform
/// event was accepted before; whether it was stored. A scheduled task's turn is stored so,
/// in the transaction that fires it.
pub(crate) async fn insert_inbound<C: SqlConnection>(
    connection: &mut C,
    inbound: &Inbound,
) -> Result<bool, StorageError> {
    let insert = inbound_bound(insert_inbound!(""), inbound)?;
    Ok(connection.execute(insert).await? == 1)
}

/// End the turn of `inbox_id` (`status` 'answered' or 'failed') and clear its journal, in
/// the caller's transaction; refused when it was not waiting for an answer.
async fn end_turn<C: SqlConnection>(
    connection: &mut C,
    inbox_id: &str,
    status: &str,
    reply: &str,
    error: Option<&str>,
) -> Result<(), StorageError> {
    let end = sql(end_turn!(""))
        .bind(inbox_id)
        .bind(status)
        .bind(reply)
        .bind(error)
        .bind(now_ms());
    // Ended already (or unknown): writing the history again would duplicate it.
    if connection.execute(end).await? != 1 {
        return Err(not_waiting(inbox_id));
    }
    let clear = sql("DELETE FROM turn_journal WHERE inbox_id = $1");
    connection.execute(clear.bind(inbox_id)).await.map(|_| ())
}

/// The message `inbound` repeats (its id or its platform event accepted before).
async fn duplicate_of<B: SqlBackend>(
    store: &B,
    inbound: &Inbound,
) -> Result<Acceptance, StorageError> {
    let existing = sql(select_record!(
        "WHERE id = $1 OR (channel = $2 AND platform_event_id IS NOT NULL \
         AND platform_event_id = $3) ORDER BY seq LIMIT 1"
    ))
    .bind(&inbound.id)
    .bind(inbound.conversation.channel())
    .bind(&inbound.platform_event_id);
    let existing = store.read_optional(existing).await?;
    let existing = existing.ok_or_else(|| not_waiting(&inbound.id))?;
    Ok(Acceptance::Duplicate(Box::new(record_from_row(&existing)?)))
}

/// The records `statement` reads.
async fn records<B: SqlBackend>(
    store: &B,
    statement: Statement,
) -> Result<Vec<InboxRecord>, StorageError> {
    let rows = store.read(statement).await?;
    rows.iter().map(record_from_row).collect()
}

#[async_trait]
impl<B: SqlBackend> Inbox for B {
    async fn accept(&self, inbound: &Inbound) -> Result<Acceptance, StorageError> {
        let insert = inbound_bound(insert_inbound!(""), inbound)?;
        if self.write_count(insert).await? == 1 {
            return Ok(Acceptance::New);
        }
        duplicate_of(self, inbound).await
    }

    async fn accept_reading(
        &self,
        inbound: &Inbound,
    ) -> Result<(Acceptance, Vec<InboxRecord>), StorageError> {
        let unanswered = match B::DIALECT {
            // dialect: PostgreSQL stores the message and reads its conversation's
            // unanswered messages in one statement; SQLite's reader reads after the writer.
            Dialect::Postgres => {
                let rows = self.write(inbound_bound(ACCEPT_READING, inbound)?).await?;
                if rows.is_empty() {
                    return Ok((duplicate_of(self, inbound).await?, Vec::new()));
                }
                rows.iter().map(record_from_row).collect::<Result<_, _>>()?
            }
            Dialect::Sqlite => match self.accept(inbound).await? {
                Acceptance::New => self.unanswered_in(&inbound.conversation).await?,
                duplicate => return Ok((duplicate, Vec::new())),
            },
        };
        Ok((Acceptance::New, unanswered))
    }

    async fn unanswered(&self) -> Result<Vec<InboxRecord>, StorageError> {
        let unanswered = select_record!("WHERE status = 'accepted' ORDER BY seq");
        records(self, sql(unanswered)).await
    }

    async fn unanswered_in(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Vec<InboxRecord>, StorageError> {
        let unanswered = sql(select_record!(
            "WHERE status = 'accepted' AND channel = $1 AND conversation_id = $2 ORDER BY seq"
        ));
        let unanswered = unanswered
            .bind(conversation.channel())
            .bind(conversation.conversation_id());
        records(self, unanswered).await
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
        // The answer, its journal cleared, its history and the reply's delivery commit
        // together or not at all.
        let history = entries_json(turn.conversation_key.as_str(), &turn.messages)?;
        let done = match B::DIALECT {
            // dialect: PostgreSQL ends a turn in one statement, waking the other workers
            // at its commit; SQLite runs its statements one by one in one transaction on
            // the writer, and the caller wakes no one else (one process).
            Dialect::Postgres => {
                let outgoing = turn.outgoing.as_ref();
                let kind = outgoing
                    .map(|message| serde_json::to_string(&message.kind))
                    .transpose()
                    .map_err(|error| StorageError::Corrupt(format!("outbox kind: {error}")))?;
                let wake_ups: Vec<String> = wake_ups.iter().map(WakeUp::to_payload).collect();
                let complete = sql(COMPLETE.as_str())
                    .bind(inbox_id)
                    .bind("answered")
                    .bind(&turn.reply)
                    .bind(None::<String>)
                    .bind(now_ms())
                    .bind(history)
                    .bind(outgoing.map(|message| message.conversation.channel()))
                    .bind(outgoing.map(|message| message.conversation.conversation_id()))
                    .bind(kind)
                    .bind(outgoing.map(|message| message.text.as_str()))
                    .bind(outgoing.and_then(|message| message.reply_to_event.as_deref()))
                    .bind(serde_json::json!(wake_ups).to_string())
                    .bind(WAKE_CHANNEL);
                let rows = self.write_fenced(fence, complete).await?;
                let row = rows.first().ok_or_else(|| not_waiting(inbox_id))?;
                match fence {
                    _ if row.integer("ended")? == 1 => (row.optional_integer("outbox_id")?, true),
                    Some(fence) if !row.flag("held")? => return Err(fence.refused()),
                    // Ended already (or unknown): writing the history again would
                    // duplicate it.
                    _ => return Err(not_waiting(inbox_id)),
                }
            }
            Dialect::Sqlite => {
                let (id, reply) = (inbox_id.to_string(), turn.reply.clone());
                let outgoing = turn.outgoing.clone();
                let queued = self
                    .atomically_fenced(fence, move |connection| {
                        Box::pin(async move {
                            end_turn(connection, &id, "answered", &reply, None).await?;
                            let remember = per_dialect!(B::DIALECT, |dialect| remember(
                                dialect, "$1", "$2", ""
                            ));
                            connection
                                .execute(sql(remember).bind(history).bind(&id))
                                .await?;
                            insert_if_any(connection, outgoing.as_ref()).await
                        })
                    })
                    .await?;
                (queued, false)
            }
        };
        turn_remembered(
            self,
            turn.conversation_key.as_str(),
            inbox_id,
            &turn.messages,
            fence,
        );
        Ok(done)
    }

    async fn record_failure(
        &self,
        inbox_id: &str,
        error: &str,
        next_attempt_at_ms: i64,
    ) -> Result<u32, StorageError> {
        let failed = sql("UPDATE inbox SET attempts = attempts + 1, error = $1, \
             next_attempt_at_ms = $2, updated_at_ms = $3 \
             WHERE id = $4 AND status IN ('accepted', 'suspended') RETURNING attempts");
        let failed = failed
            .bind(error)
            .bind(next_attempt_at_ms)
            .bind(now_ms())
            .bind(inbox_id);
        let row = self.write_optional(failed).await?;
        let attempts = row
            .ok_or_else(|| not_waiting(inbox_id))?
            .integer("attempts")?;
        Ok(u32::try_from(attempts).unwrap_or(u32::MAX))
    }

    async fn store_transcript(
        &self,
        inbox_id: &str,
        text: &str,
        extras: &InboundExtras,
    ) -> Result<(), StorageError> {
        let store = sql(
            "UPDATE inbox SET text = $1, extras = $2, updated_at_ms = $3 \
             WHERE id = $4 AND status IN ('accepted', 'suspended')",
        );
        let store = store
            .bind(text)
            .bind(extras_json(extras)?)
            .bind(now_ms())
            .bind(inbox_id);
        if self.write_count(store).await? == 0 {
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
        self.atomically_fenced(fence, move |connection| {
            Box::pin(async move {
                end_turn(connection, &id, "failed", &reply, Some(&error)).await?;
                insert_if_any(connection, outgoing.as_ref()).await
            })
        })
        .await
    }

    async fn get(&self, inbox_id: &str) -> Result<Option<InboxRecord>, StorageError> {
        let row = self
            .read_optional(sql(select_record!("WHERE id = $1")).bind(inbox_id))
            .await?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn knows_event(
        &self,
        channel: &str,
        platform_event_id: &str,
    ) -> Result<bool, StorageError> {
        let known = sql("SELECT 1 FROM inbox WHERE channel = $1 AND platform_event_id = $2");
        let known = known.bind(channel).bind(platform_event_id);
        Ok(self.read_optional(known).await?.is_some())
    }

    async fn ping(&self) -> Result<(), StorageError> {
        self.read(sql("SELECT 1")).await.map(|_| ())
    }
}
