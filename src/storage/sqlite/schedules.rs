//! `Schedules` on SQLite: tables `schedules` and `schedule_firings`. A claim moves the
//! schedule on only from the occurrence it was read at (`next_due_ms = ?` in the UPDATE) and
//! stores the firing, its outbox rows and a task's inbox message in the same savepoint, so
//! the first claim of an occurrence fires it and every other finds it taken.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::inbox::insert_inbound;
use super::outbox::insert_outgoing;
use super::{SqliteStore, conversation_from_row, database_error, id_column};
use crate::ids::{FiringId, MemberId};
use crate::ports::{
    Claimed, Firing, FiringClaim, FiringState, FiringTiming, NewSchedule, OutgoingMessage,
    Schedule, ScheduleEdit, ScheduleKind, ScheduleStatus, Schedules, Settled, Settlement,
    StorageError, now_ms,
};

macro_rules! select_schedule {
    ($tail:literal) => {
        concat!(
            "SELECT id, kind, member_id, set_by, text, profile_id, channel, conversation_id, ",
            "zone, recurrence, start_local, next_due_ms, status, escalate_after_minutes, ",
            "snoozed_from, created_at_ms FROM schedules ",
            $tail
        )
    };
}

macro_rules! select_firing {
    ($tail:literal) => {
        concat!(
            "SELECT f.schedule_id, f.due_ms, f.fired_at_ms, f.timing, f.state, ",
            "f.escalate_at_ms, f.escalated_at_ms, f.inbox_id FROM schedule_firings f ",
            $tail
        )
    };
}

fn schedule_from_row(row: &SqliteRow) -> Result<Schedule, StorageError> {
    let snoozed_from: Option<String> = row.get("snoozed_from");
    Ok(Schedule {
        id: row.get("id"),
        kind: ScheduleKind::parse(&row.get::<String, _>("kind"))?,
        member_id: id_column(row, "schedules", "member_id")?,
        set_by: id_column(row, "schedules", "set_by")?,
        text: row.get("text"),
        profile_id: row.get("profile_id"),
        conversation: conversation_from_row(row, "schedules")?,
        zone: row.get("zone"),
        recurrence: row.get("recurrence"),
        start_local: row.get("start_local"),
        next_due_ms: row.get("next_due_ms"),
        status: ScheduleStatus::parse(&row.get::<String, _>("status"))?,
        escalate_after_minutes: row
            .get::<Option<i64>, _>("escalate_after_minutes")
            .and_then(|minutes| u32::try_from(minutes).ok()),
        snoozed_from: snoozed_from
            .map(|id| id.parse())
            .transpose()
            .map_err(|error| StorageError::Corrupt(format!("schedules.snoozed_from: {error}")))?,
        created_at_ms: row.get("created_at_ms"),
    })
}

fn firing_from_row(row: &SqliteRow) -> Result<Firing, StorageError> {
    Ok(Firing {
        id: FiringId {
            schedule_id: row.get("schedule_id"),
            due_ms: row.get("due_ms"),
        },
        fired_at_ms: row.get("fired_at_ms"),
        timing: FiringTiming::parse(&row.get::<String, _>("timing"))?,
        state: FiringState::parse(&row.get::<String, _>("state"))?,
        escalate_at_ms: row.get("escalate_at_ms"),
        escalated_at_ms: row.get("escalated_at_ms"),
        inbox_id: row.get("inbox_id"),
    })
}

/// Insert `schedule` unless its once key was used; the id of the row under that key.
async fn insert_schedule(
    connection: &mut SqliteConnection,
    schedule: &NewSchedule,
) -> Result<i64, StorageError> {
    let now = now_ms();
    let inserted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO schedules (kind, member_id, set_by, text, profile_id, channel, \
         conversation_id, zone, recurrence, start_local, next_due_ms, escalate_after_minutes, \
         snoozed_from, once_key, created_at_ms, updated_at_ms) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (once_key) DO NOTHING RETURNING id",
    )
    .bind(schedule.kind.as_str())
    .bind(schedule.member_id.as_str())
    .bind(schedule.set_by.as_str())
    .bind(&schedule.text)
    .bind(&schedule.profile_id)
    .bind(schedule.conversation.channel())
    .bind(schedule.conversation.conversation_id())
    .bind(&schedule.zone)
    .bind(&schedule.recurrence)
    .bind(&schedule.start_local)
    .bind(schedule.first_due_ms)
    .bind(schedule.escalate_after_minutes.map(i64::from))
    .bind(schedule.snoozed_from.map(|id| id.to_string()))
    .bind(&schedule.once_key)
    .bind(now)
    .bind(now)
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)?;
    if let Some(id) = inserted {
        return Ok(id);
    }
    sqlx::query_scalar("SELECT id FROM schedules WHERE once_key = ?")
        .bind(&schedule.once_key)
        .fetch_one(&mut *connection)
        .await
        .map_err(database_error)
}

async fn insert_messages(
    connection: &mut SqliteConnection,
    messages: &[OutgoingMessage],
) -> Result<Vec<i64>, StorageError> {
    let mut ids = Vec::with_capacity(messages.len());
    for message in messages {
        ids.push(insert_outgoing(connection, message).await?);
    }
    Ok(ids)
}

impl SqliteStore {
    async fn schedules_where<'q>(
        &self,
        query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    ) -> Result<Vec<Schedule>, StorageError> {
        let rows = query.fetch_all(&self.pool).await.map_err(database_error)?;
        rows.iter().map(schedule_from_row).collect()
    }
}

#[async_trait]
impl Schedules for SqliteStore {
    async fn add(&self, schedule: &NewSchedule) -> Result<Schedule, StorageError> {
        let row = schedule.clone();
        let id = self
            .writer
            .run(move |connection| Box::pin(async move { insert_schedule(connection, &row).await }))
            .await?;
        self.schedule(id)
            .await?
            .ok_or_else(|| StorageError::Corrupt(format!("schedule {id} vanished when stored")))
    }

    async fn schedule(&self, id: i64) -> Result<Option<Schedule>, StorageError> {
        let row = sqlx::query(select_schedule!("WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedules_of(&self, member_id: &MemberId) -> Result<Vec<Schedule>, StorageError> {
        self.schedules_where(
            sqlx::query(select_schedule!(
                "WHERE status = 'active' AND (member_id = ? OR set_by = ?) \
                 ORDER BY next_due_ms, id"
            ))
            .bind(member_id.as_str())
            .bind(member_id.as_str()),
        )
        .await
    }

    async fn active_schedules(&self) -> Result<Vec<Schedule>, StorageError> {
        self.schedules_where(sqlx::query(select_schedule!(
            "WHERE status = 'active' ORDER BY next_due_ms, id"
        )))
        .await
    }

    async fn count_active_for(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM schedules WHERE member_id = ? AND status = 'active'",
        )
        .bind(member_id.as_str())
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn due(&self, until_ms: i64, limit: usize) -> Result<Vec<Schedule>, StorageError> {
        self.schedules_where(
            sqlx::query(select_schedule!(
                "WHERE status = 'active' AND next_due_ms <= ? ORDER BY next_due_ms, id LIMIT ?"
            ))
            .bind(until_ms)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
        )
        .await
    }

    async fn claim(&self, claim: &FiringClaim) -> Result<Claimed, StorageError> {
        claim.check_forward()?;
        let claim = claim.clone();
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let status = if claim.next_due_ms.is_some() {
                        "active"
                    } else {
                        "finished"
                    };
                    let moved = sqlx::query(
                        "UPDATE schedules SET next_due_ms = ?, status = ?, \
                         version = version + 1, updated_at_ms = ? \
                         WHERE id = ? AND status = 'active' AND next_due_ms = ?",
                    )
                    .bind(claim.next_due_ms)
                    .bind(status)
                    .bind(claim.fired_at_ms)
                    .bind(claim.id.schedule_id)
                    .bind(claim.id.due_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if moved.rows_affected() != 1 {
                        return Ok(Claimed::Taken);
                    }
                    sqlx::query(
                        "INSERT INTO schedule_firings (schedule_id, due_ms, fired_at_ms, timing, \
                         state, escalate_at_ms, inbox_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(claim.id.schedule_id)
                    .bind(claim.id.due_ms)
                    .bind(claim.fired_at_ms)
                    .bind(claim.timing.as_str())
                    .bind(claim.state.as_str())
                    .bind(claim.escalate_at_ms)
                    .bind(claim.turn.as_ref().map(|turn| turn.id.clone()))
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if let Some(turn) = &claim.turn {
                        insert_inbound(connection, turn).await?;
                    }
                    let outbox_ids = insert_messages(connection, &claim.messages).await?;
                    Ok(Claimed::Fired { outbox_ids })
                })
            })
            .await
    }

    async fn cancel(&self, id: i64) -> Result<bool, StorageError> {
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let done = sqlx::query(
                        "UPDATE schedules SET status = 'cancelled', next_due_ms = NULL, \
                         version = version + 1, updated_at_ms = ? \
                         WHERE id = ? AND status = 'active'",
                    )
                    .bind(now_ms())
                    .bind(id)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(done.rows_affected() == 1)
                })
            })
            .await
    }

    async fn edit(&self, edit: &ScheduleEdit) -> Result<Option<Schedule>, StorageError> {
        let edit = edit.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    // One statement: a claim or a cancel in between makes it change nothing.
                    let row = sqlx::query(select_schedule!("WHERE id = ?")).bind(edit.id);
                    let done = sqlx::query(
                        "UPDATE schedules SET text = ?, recurrence = ?, start_local = ?, \
                         next_due_ms = ?, version = version + 1, updated_at_ms = ? \
                         WHERE id = ? AND status = 'active' AND next_due_ms = ?",
                    )
                    .bind(&edit.text)
                    .bind(&edit.recurrence)
                    .bind(&edit.start_local)
                    .bind(edit.next_due_ms)
                    .bind(now_ms())
                    .bind(edit.id)
                    .bind(edit.seen_next_due_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if done.rows_affected() != 1 {
                        return Ok(None);
                    }
                    let row = row
                        .fetch_optional(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    row.as_ref().map(schedule_from_row).transpose()
                })
            })
            .await
    }

    async fn firing(&self, id: FiringId) -> Result<Option<Firing>, StorageError> {
        let row = sqlx::query(select_firing!("WHERE f.schedule_id = ? AND f.due_ms = ?"))
            .bind(id.schedule_id)
            .bind(id.due_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(firing_from_row).transpose()
    }

    async fn open_firings_of(&self, member_id: &MemberId) -> Result<Vec<Firing>, StorageError> {
        let rows = sqlx::query(select_firing!(
            "JOIN schedules s ON s.id = f.schedule_id \
             WHERE f.state = 'open' AND s.member_id = ? ORDER BY f.fired_at_ms DESC, f.due_ms DESC"
        ))
        .bind(member_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(firing_from_row).collect()
    }

    async fn settle(&self, settlement: &Settlement) -> Result<Settled, StorageError> {
        let settlement = settlement.clone();
        let settled = self
            .writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let done = sqlx::query(
                        "UPDATE schedule_firings SET state = ?, settled_at_ms = ? \
                         WHERE schedule_id = ? AND due_ms = ? AND state = 'open'",
                    )
                    .bind(settlement.state.as_str())
                    .bind(settlement.settled_at_ms)
                    .bind(settlement.id.schedule_id)
                    .bind(settlement.id.due_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if done.rows_affected() != 1 {
                        let state: Option<String> = sqlx::query_scalar(
                            "SELECT state FROM schedule_firings WHERE schedule_id = ? AND due_ms = ?",
                        )
                        .bind(settlement.id.schedule_id)
                        .bind(settlement.id.due_ms)
                        .fetch_optional(&mut *connection)
                        .await
                        .map_err(database_error)?;
                        let state = state.as_deref().map(FiringState::parse).transpose()?;
                        return Ok(Err(state));
                    }
                    let outbox_ids = insert_messages(connection, &settlement.messages).await?;
                    let snooze = match &settlement.snooze {
                        Some(snooze) => Some(insert_schedule(connection, snooze).await?),
                        None => None,
                    };
                    Ok(Ok((outbox_ids, snooze)))
                })
            })
            .await?;
        match settled {
            Err(state) => Ok(Settled::NotOpen(state)),
            Ok((outbox_ids, snooze)) => {
                let snooze = match snooze {
                    Some(id) => self.schedule(id).await?.map(Box::new),
                    None => None,
                };
                Ok(Settled::Now { outbox_ids, snooze })
            }
        }
    }

    async fn due_escalations(
        &self,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Firing>, StorageError> {
        let rows = sqlx::query(select_firing!(
            "WHERE f.state = 'open' AND f.escalated_at_ms IS NULL \
             AND f.escalate_at_ms IS NOT NULL AND f.escalate_at_ms <= ? \
             ORDER BY f.escalate_at_ms LIMIT ?"
        ))
        .bind(until_ms)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(firing_from_row).collect()
    }

    async fn escalate(
        &self,
        id: FiringId,
        at_ms: i64,
        messages: &[OutgoingMessage],
    ) -> Result<Option<Vec<i64>>, StorageError> {
        let messages = messages.to_vec();
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let marked = sqlx::query(
                        "UPDATE schedule_firings SET escalated_at_ms = ? \
                         WHERE schedule_id = ? AND due_ms = ? AND state = 'open' \
                         AND escalated_at_ms IS NULL",
                    )
                    .bind(at_ms)
                    .bind(id.schedule_id)
                    .bind(id.due_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if marked.rows_affected() != 1 {
                        return Ok(None);
                    }
                    Ok(Some(insert_messages(connection, &messages).await?))
                })
            })
            .await
    }
}
