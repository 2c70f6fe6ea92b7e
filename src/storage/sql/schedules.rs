//! `Schedules` on either SQL database: tables `schedules` and `schedule_firings`. Each step
//! that must happen once is one conditional UPDATE: a claim moves the schedule on only from
//! the occurrence it was read at (`next_due_ms = $n`), a settlement only an open firing, an
//! escalation only one not escalated yet. SQLite runs one write at a time and PostgreSQL
//! re-checks the condition on the row a racing writer committed, so of several claims of
//! an occurrence the first fires it and every other finds it taken. The firing, its outbox
//! rows and a task's inbox message are stored in the transaction of that UPDATE.

use async_trait::async_trait;

use super::outbox::insert_each;
use super::{
    SqlBackend, SqlConnection, SqlRow, Statement, conversation_from_row, id_column, limit, sql,
};
use crate::ids::{FiringId, MemberId};
use crate::ports::{
    Claimed, Firing, FiringClaim, FiringState, FiringTiming, NewSchedule, OutgoingMessage,
    Schedule, ScheduleEdit, ScheduleKind, ScheduleStatus, Schedules, Settled, Settlement,
    StorageError, now_ms,
};

/// The columns of a schedule, spelled once for every statement that reads one.
macro_rules! schedule_columns {
    () => {
        "id, kind, member_id, set_by, text, profile_id, channel, conversation_id, zone, \
         recurrence, start_local, next_due_ms, status, escalate_after_minutes, snoozed_from, \
         created_at_ms"
    };
}

macro_rules! select_schedule {
    ($tail:literal) => {
        concat!("SELECT ", schedule_columns!(), " FROM schedules ", $tail)
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

fn schedule_from_row(row: &impl SqlRow) -> Result<Schedule, StorageError> {
    Ok(Schedule {
        id: row.integer("id")?,
        kind: ScheduleKind::parse(&row.text("kind")?)?,
        member_id: id_column(row, "schedules", "member_id")?,
        set_by: id_column(row, "schedules", "set_by")?,
        text: row.text("text")?,
        profile_id: row.optional_text("profile_id")?,
        conversation: conversation_from_row(row, "schedules")?,
        zone: row.text("zone")?,
        recurrence: row.optional_text("recurrence")?,
        start_local: row.optional_text("start_local")?,
        next_due_ms: row.optional_integer("next_due_ms")?,
        status: ScheduleStatus::parse(&row.text("status")?)?,
        escalate_after_minutes: row
            .optional_integer("escalate_after_minutes")?
            .and_then(|minutes| u32::try_from(minutes).ok()),
        snoozed_from: row
            .optional_text("snoozed_from")?
            .map(|id| id.parse())
            .transpose()
            .map_err(|error| StorageError::Corrupt(format!("schedules.snoozed_from: {error}")))?,
        created_at_ms: row.integer("created_at_ms")?,
    })
}

fn firing_from_row(row: &impl SqlRow) -> Result<Firing, StorageError> {
    Ok(Firing {
        id: FiringId {
            schedule_id: row.integer("schedule_id")?,
            due_ms: row.integer("due_ms")?,
        },
        fired_at_ms: row.integer("fired_at_ms")?,
        timing: FiringTiming::parse(&row.text("timing")?)?,
        state: FiringState::parse(&row.text("state")?)?,
        escalate_at_ms: row.optional_integer("escalate_at_ms")?,
        escalated_at_ms: row.optional_integer("escalated_at_ms")?,
        inbox_id: row.optional_text("inbox_id")?,
    })
}

/// The statement inserting `schedule` unless its once key was used, returning its id.
fn insert(schedule: &NewSchedule) -> Statement {
    sql(
        "INSERT INTO schedules (kind, member_id, set_by, text, profile_id, channel, \
         conversation_id, zone, recurrence, start_local, next_due_ms, escalate_after_minutes, \
         snoozed_from, once_key, created_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15) \
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
    .bind(now_ms())
}

/// The statement reading the id stored under `schedule`'s once key (when `insert` found
/// it taken: a racing insert of the same key waited for the other to commit).
fn stored_under_key(schedule: &NewSchedule) -> Statement {
    sql("SELECT id FROM schedules WHERE once_key = $1").bind(&schedule.once_key)
}

fn vanished(what: String) -> StorageError {
    StorageError::Corrupt(format!("{what} vanished when stored"))
}

/// Insert `schedule` unless its once key was used, in the caller's transaction; the id
/// of the row under that key.
async fn insert_schedule<C: SqlConnection>(
    connection: &mut C,
    schedule: &NewSchedule,
) -> Result<i64, StorageError> {
    let row = match connection.fetch_optional(insert(schedule)).await? {
        Some(row) => row,
        None => (connection
            .fetch_optional(stored_under_key(schedule))
            .await?)
            .ok_or_else(|| vanished(format!("schedule {:?}", schedule.once_key)))?,
    };
    row.integer("id")
}

/// `statement` with `id`'s schedule and occurrence bound next, in that order.
fn firing_bound(statement: Statement, id: FiringId) -> Statement {
    statement.bind(id.schedule_id).bind(id.due_ms)
}

#[async_trait]
impl<B: SqlBackend> Schedules for B {
    async fn add(&self, schedule: &NewSchedule) -> Result<Schedule, StorageError> {
        let row = match self.write_optional(insert(schedule)).await? {
            Some(row) => row,
            None => (self.read_optional(stored_under_key(schedule)).await?)
                .ok_or_else(|| vanished(format!("schedule {:?}", schedule.once_key)))?,
        };
        let id = row.integer("id")?;
        self.schedule(id)
            .await?
            .ok_or_else(|| vanished(format!("schedule {id}")))
    }

    async fn schedule(&self, id: i64) -> Result<Option<Schedule>, StorageError> {
        let row = (self.read_optional(sql(select_schedule!("WHERE id = $1")).bind(id))).await?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedules_of(&self, member_id: &MemberId) -> Result<Vec<Schedule>, StorageError> {
        let of = sql(select_schedule!(
            "WHERE status = 'active' AND (member_id = $1 OR set_by = $1) \
             ORDER BY next_due_ms, id"
        ));
        let rows = self.read(of.bind(member_id.as_str())).await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn active_schedules(&self) -> Result<Vec<Schedule>, StorageError> {
        let active = sql(select_schedule!(
            "WHERE status = 'active' ORDER BY next_due_ms, id"
        ));
        let rows = self.read(active).await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn count_active_for(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        let count = sql("SELECT COUNT(*) AS count FROM schedules \
             WHERE member_id = $1 AND status = 'active'");
        let count = match self.read_optional(count.bind(member_id.as_str())).await? {
            Some(row) => row.integer("count")?,
            None => 0,
        };
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn due(&self, until_ms: i64, count: usize) -> Result<Vec<Schedule>, StorageError> {
        let due = sql(select_schedule!(
            "WHERE status = 'active' AND next_due_ms <= $1 ORDER BY next_due_ms, id LIMIT $2"
        ));
        let rows = self.read(due.bind(until_ms).bind(limit(count))).await?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn claim(&self, claim: &FiringClaim) -> Result<Claimed, StorageError> {
        claim.check_forward()?;
        let claim = claim.clone();
        self.atomically(move |connection| {
            Box::pin(async move {
                let status = match claim.next_due_ms {
                    Some(_) => "active",
                    None => "finished",
                };
                let moved = sql("UPDATE schedules SET next_due_ms = $1, status = $2, \
                     version = version + 1, updated_at_ms = $3 \
                     WHERE id = $4 AND status = 'active' AND next_due_ms = $5")
                .bind(claim.next_due_ms)
                .bind(status)
                .bind(claim.fired_at_ms);
                if connection.execute(firing_bound(moved, claim.id)).await? != 1 {
                    return Ok(Claimed::Taken);
                }
                let fired = sql("INSERT INTO schedule_firings (schedule_id, due_ms, \
                     fired_at_ms, timing, state, escalate_at_ms, inbox_id) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)");
                let fired = firing_bound(fired, claim.id)
                    .bind(claim.fired_at_ms)
                    .bind(claim.timing.as_str())
                    .bind(claim.state.as_str())
                    .bind(claim.escalate_at_ms)
                    .bind(claim.turn.as_ref().map(|turn| turn.id.as_str()));
                connection.execute(fired).await?;
                if let Some(turn) = &claim.turn {
                    super::inbox::insert_inbound(connection, turn).await?;
                }
                let outbox_ids = insert_each(connection, &claim.messages).await?;
                Ok(Claimed::Fired { outbox_ids })
            })
        })
        .await
    }

    async fn cancel(&self, id: i64) -> Result<bool, StorageError> {
        let cancel = sql(
            "UPDATE schedules SET status = 'cancelled', next_due_ms = NULL, \
             version = version + 1, updated_at_ms = $1 WHERE id = $2 AND status = 'active'",
        );
        Ok(self.write_count(cancel.bind(now_ms()).bind(id)).await? == 1)
    }

    async fn edit(&self, edit: &ScheduleEdit) -> Result<Option<Schedule>, StorageError> {
        // One statement: a claim or a cancel in between makes it change nothing, and the
        // row it returns is the one it wrote.
        let edited = sql(concat!(
            "UPDATE schedules SET text = $1, recurrence = $2, start_local = $3, ",
            "next_due_ms = $4, version = version + 1, updated_at_ms = $5 ",
            "WHERE id = $6 AND status = 'active' AND next_due_ms = $7 RETURNING ",
            schedule_columns!()
        ))
        .bind(&edit.text)
        .bind(&edit.recurrence)
        .bind(&edit.start_local)
        .bind(edit.next_due_ms)
        .bind(now_ms())
        .bind(edit.id)
        .bind(edit.seen_next_due_ms);
        let row = self.write_optional(edited).await?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn firing(&self, id: FiringId) -> Result<Option<Firing>, StorageError> {
        let firing = sql(select_firing!("WHERE f.schedule_id = $1 AND f.due_ms = $2"));
        let row = self.read_optional(firing_bound(firing, id)).await?;
        row.as_ref().map(firing_from_row).transpose()
    }

    async fn open_firings_of(&self, member_id: &MemberId) -> Result<Vec<Firing>, StorageError> {
        let open = sql(select_firing!(
            "JOIN schedules s ON s.id = f.schedule_id \
             WHERE f.state = 'open' AND s.member_id = $1 \
             ORDER BY f.fired_at_ms DESC, f.due_ms DESC"
        ));
        let rows = self.read(open.bind(member_id.as_str())).await?;
        rows.iter().map(firing_from_row).collect()
    }

    async fn settle(&self, settlement: &Settlement) -> Result<Settled, StorageError> {
        let settlement = settlement.clone();
        let settled = self
            .atomically(move |connection| {
                Box::pin(async move {
                    let settle = sql("UPDATE schedule_firings SET state = $1, \
                         settled_at_ms = $2 WHERE schedule_id = $3 AND due_ms = $4 \
                         AND state = 'open'")
                    .bind(settlement.state.as_str())
                    .bind(settlement.settled_at_ms);
                    if connection
                        .execute(firing_bound(settle, settlement.id))
                        .await?
                        != 1
                    {
                        let state = sql("SELECT state FROM schedule_firings \
                             WHERE schedule_id = $1 AND due_ms = $2");
                        let state = connection
                            .fetch_optional(firing_bound(state, settlement.id))
                            .await?;
                        let state = state.map(|row| row.text("state")).transpose()?;
                        let state = state.as_deref().map(FiringState::parse).transpose()?;
                        return Ok(Err(state));
                    }
                    let outbox_ids = insert_each(connection, &settlement.messages).await?;
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
        count: usize,
    ) -> Result<Vec<Firing>, StorageError> {
        let due = sql(select_firing!(
            "WHERE f.state = 'open' AND f.escalated_at_ms IS NULL \
             AND f.escalate_at_ms IS NOT NULL AND f.escalate_at_ms <= $1 \
             ORDER BY f.escalate_at_ms LIMIT $2"
        ));
        let rows = self.read(due.bind(until_ms).bind(limit(count))).await?;
        rows.iter().map(firing_from_row).collect()
    }

    async fn escalate(
        &self,
        id: FiringId,
        at_ms: i64,
        messages: &[OutgoingMessage],
    ) -> Result<Option<Vec<i64>>, StorageError> {
        let messages = messages.to_vec();
        self.atomically(move |connection| {
            Box::pin(async move {
                let marked = sql("UPDATE schedule_firings SET escalated_at_ms = $1 \
                     WHERE schedule_id = $2 AND due_ms = $3 AND state = 'open' \
                     AND escalated_at_ms IS NULL");
                if connection
                    .execute(firing_bound(marked.bind(at_ms), id))
                    .await?
                    != 1
                {
                    return Ok(None);
                }
                Ok(Some(insert_each(connection, &messages).await?))
            })
        })
        .await
    }
}
