//! `Schedules` on PostgreSQL: tables `schedules` and `schedule_firings`. Each step that must
//! happen once is one conditional UPDATE: a claim moves the schedule on only from the
//! occurrence it was read at (`next_due_ms = $n`), a settlement only an open firing, an
//! escalation only one not escalated yet. PostgreSQL re-checks that condition on the row a
//! racing writer committed, so of several hearth processes claiming the same occurrence
//! the first fires it and every other finds it taken. The firing, its outbox rows and a
//! task's inbox message are stored in the transaction of that UPDATE.

use async_trait::async_trait;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::{PgConnection, Postgres, Row};

use super::inbox::insert_inbound;
use super::outbox::insert_outgoing;
use super::{PostgresStore, conversation_from_row, database_error, id_column};
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

fn schedule_from_row(row: &PgRow) -> Result<Schedule, StorageError> {
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

fn firing_from_row(row: &PgRow) -> Result<Firing, StorageError> {
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

/// Insert `schedule` unless its once key was used; the id of the row under that key. A
/// racing insert of the same key waits for the other to commit, then reads its row.
async fn insert_schedule(
    connection: &mut PgConnection,
    schedule: &NewSchedule,
) -> Result<i64, StorageError> {
    let now = now_ms();
    let inserted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO schedules (kind, member_id, set_by, text, profile_id, channel, \
         conversation_id, zone, recurrence, start_local, next_due_ms, escalate_after_minutes, \
         snoozed_from, once_key, created_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
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
    sqlx::query_scalar("SELECT id FROM schedules WHERE once_key = $1")
        .bind(&schedule.once_key)
        .fetch_one(&mut *connection)
        .await
        .map_err(database_error)
}

async fn insert_messages(
    connection: &mut PgConnection,
    messages: &[OutgoingMessage],
) -> Result<Vec<i64>, StorageError> {
    let mut ids = Vec::with_capacity(messages.len());
    for message in messages {
        ids.push(insert_outgoing(connection, message).await?);
    }
    Ok(ids)
}

/// Store the firing `claim` names if its occurrence is still the schedule's next, in the
/// caller's transaction; whether it was.
async fn fire(connection: &mut PgConnection, claim: &FiringClaim) -> Result<bool, StorageError> {
    let status = if claim.next_due_ms.is_some() {
        "active"
    } else {
        "finished"
    };
    let moved = sqlx::query(
        "UPDATE schedules SET next_due_ms = $1, status = $2, version = version + 1, \
         updated_at_ms = $3 WHERE id = $4 AND status = 'active' AND next_due_ms = $5",
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
        return Ok(false);
    }
    sqlx::query(
        "INSERT INTO schedule_firings (schedule_id, due_ms, fired_at_ms, timing, state, \
         escalate_at_ms, inbox_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(claim.id.schedule_id)
    .bind(claim.id.due_ms)
    .bind(claim.fired_at_ms)
    .bind(claim.timing.as_str())
    .bind(claim.state.as_str())
    .bind(claim.escalate_at_ms)
    .bind(claim.turn.as_ref().map(|turn| turn.id.as_str()))
    .execute(&mut *connection)
    .await
    .map_err(database_error)?;
    Ok(true)
}

impl PostgresStore {
    async fn schedules_where(
        &self,
        query: sqlx::query::Query<'_, Postgres, PgArguments>,
    ) -> Result<Vec<Schedule>, StorageError> {
        let rows = query.fetch_all(&self.pool).await.map_err(database_error)?;
        rows.iter().map(schedule_from_row).collect()
    }
}

#[async_trait]
impl Schedules for PostgresStore {
    async fn edit(&self, edit: &ScheduleEdit) -> Result<Option<Schedule>, StorageError> {
        // One statement: a claim or a cancel by any worker in between makes it change
        // nothing, and the row it returns is the one it wrote.
        let row = sqlx::query(
            "UPDATE schedules SET text = $1, recurrence = $2, start_local = $3, \
             next_due_ms = $4, version = version + 1, updated_at_ms = $5 \
             WHERE id = $6 AND status = 'active' AND next_due_ms = $7 \
             RETURNING id, kind, member_id, set_by, text, profile_id, channel, conversation_id, \
             zone, recurrence, start_local, next_due_ms, status, escalate_after_minutes, \
             snoozed_from, created_at_ms",
        )
        .bind(&edit.text)
        .bind(&edit.recurrence)
        .bind(&edit.start_local)
        .bind(edit.next_due_ms)
        .bind(now_ms())
        .bind(edit.id)
        .bind(edit.seen_next_due_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn add(&self, schedule: &NewSchedule) -> Result<Schedule, StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        let id = insert_schedule(&mut connection, schedule).await?;
        drop(connection);
        self.schedule(id)
            .await?
            .ok_or_else(|| StorageError::Corrupt(format!("schedule {id} vanished when stored")))
    }

    async fn schedule(&self, id: i64) -> Result<Option<Schedule>, StorageError> {
        let row = sqlx::query(select_schedule!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedules_of(&self, member_id: &MemberId) -> Result<Vec<Schedule>, StorageError> {
        self.schedules_where(
            sqlx::query(select_schedule!(
                "WHERE status = 'active' AND (member_id = $1 OR set_by = $1) \
                 ORDER BY next_due_ms, id"
            ))
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
            "SELECT COUNT(*) FROM schedules WHERE member_id = $1 AND status = 'active'",
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
                "WHERE status = 'active' AND next_due_ms <= $1 \
                 ORDER BY next_due_ms, id LIMIT $2"
            ))
            .bind(until_ms)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX)),
        )
        .await
    }

    async fn claim(&self, claim: &FiringClaim) -> Result<Claimed, StorageError> {
        claim.check_forward()?;
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        if !fire(&mut transaction, claim).await? {
            // Nothing was written; dropping the transaction rolls it back.
            return Ok(Claimed::Taken);
        }
        if let Some(turn) = &claim.turn {
            insert_inbound(&mut transaction, turn).await?;
        }
        let outbox_ids = insert_messages(&mut transaction, &claim.messages).await?;
        transaction.commit().await.map_err(database_error)?;
        Ok(Claimed::Fired { outbox_ids })
    }

    async fn cancel(&self, id: i64) -> Result<bool, StorageError> {
        let done = sqlx::query(
            "UPDATE schedules SET status = 'cancelled', next_due_ms = NULL, \
             version = version + 1, updated_at_ms = $1 WHERE id = $2 AND status = 'active'",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(done.rows_affected() == 1)
    }

    async fn firing(&self, id: FiringId) -> Result<Option<Firing>, StorageError> {
        let row = sqlx::query(select_firing!("WHERE f.schedule_id = $1 AND f.due_ms = $2"))
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
             WHERE f.state = 'open' AND s.member_id = $1 \
             ORDER BY f.fired_at_ms DESC, f.due_ms DESC"
        ))
        .bind(member_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(firing_from_row).collect()
    }

    async fn settle(&self, settlement: &Settlement) -> Result<Settled, StorageError> {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        let done = sqlx::query(
            "UPDATE schedule_firings SET state = $1, settled_at_ms = $2 \
             WHERE schedule_id = $3 AND due_ms = $4 AND state = 'open'",
        )
        .bind(settlement.state.as_str())
        .bind(settlement.settled_at_ms)
        .bind(settlement.id.schedule_id)
        .bind(settlement.id.due_ms)
        .execute(&mut *transaction)
        .await
        .map_err(database_error)?;
        if done.rows_affected() != 1 {
            let state: Option<String> = sqlx::query_scalar(
                "SELECT state FROM schedule_firings WHERE schedule_id = $1 AND due_ms = $2",
            )
            .bind(settlement.id.schedule_id)
            .bind(settlement.id.due_ms)
            .fetch_optional(&mut *transaction)
            .await
            .map_err(database_error)?;
            let state = state.as_deref().map(FiringState::parse).transpose()?;
            return Ok(Settled::NotOpen(state));
        }
        let outbox_ids = insert_messages(&mut transaction, &settlement.messages).await?;
        let snooze = match &settlement.snooze {
            Some(snooze) => Some(insert_schedule(&mut transaction, snooze).await?),
            None => None,
        };
        transaction.commit().await.map_err(database_error)?;
        let snooze = match snooze {
            Some(id) => self.schedule(id).await?.map(Box::new),
            None => None,
        };
        Ok(Settled::Now { outbox_ids, snooze })
    }

    async fn due_escalations(
        &self,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Firing>, StorageError> {
        let rows = sqlx::query(select_firing!(
            "WHERE f.state = 'open' AND f.escalated_at_ms IS NULL \
             AND f.escalate_at_ms IS NOT NULL AND f.escalate_at_ms <= $1 \
             ORDER BY f.escalate_at_ms LIMIT $2"
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
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        let marked = sqlx::query(
            "UPDATE schedule_firings SET escalated_at_ms = $1 \
             WHERE schedule_id = $2 AND due_ms = $3 AND state = 'open' \
             AND escalated_at_ms IS NULL",
        )
        .bind(at_ms)
        .bind(id.schedule_id)
        .bind(id.due_ms)
        .execute(&mut *transaction)
        .await
        .map_err(database_error)?;
        if marked.rows_affected() != 1 {
            return Ok(None);
        }
        let outbox_ids = insert_messages(&mut transaction, messages).await?;
        transaction.commit().await.map_err(database_error)?;
        Ok(Some(outbox_ids))
    }
}
