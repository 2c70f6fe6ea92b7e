//! The in-memory `Schedules`: the same behaviour as SQLite, in the `InMemoryStore`'s main
//! mutex beside the inbox and the outbox, so a claim and what it stores are one change here
//! too.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::in_memory::{InMemoryStore, State};
use crate::ports::{
    Claimed, Firing, FiringClaim, FiringId, FiringState, NewSchedule, OutgoingMessage, Schedule,
    ScheduleStatus, Schedules, Settled, Settlement, StorageError, now_ms,
};

#[derive(Default)]
pub(crate) struct ScheduleState {
    schedules: BTreeMap<i64, Schedule>,
    next_id: i64,
    firings: BTreeMap<FiringId, Firing>,
    once_keys: HashMap<String, i64>,
}

impl ScheduleState {
    fn insert(&mut self, schedule: &NewSchedule) -> i64 {
        if let Some(id) = schedule
            .once_key
            .as_ref()
            .and_then(|key| self.once_keys.get(key))
        {
            return *id;
        }
        self.next_id += 1;
        let id = self.next_id;
        if let Some(key) = &schedule.once_key {
            self.once_keys.insert(key.clone(), id);
        }
        self.schedules.insert(
            id,
            Schedule {
                id,
                kind: schedule.kind,
                member_id: schedule.member_id.clone(),
                set_by: schedule.set_by.clone(),
                text: schedule.text.clone(),
                profile_id: schedule.profile_id.clone(),
                channel: schedule.channel.clone(),
                conversation_id: schedule.conversation_id.clone(),
                zone: schedule.zone.clone(),
                recurrence: schedule.recurrence.clone(),
                start_local: schedule.start_local.clone(),
                next_due_ms: Some(schedule.first_due_ms),
                status: ScheduleStatus::Active,
                escalate_after_minutes: schedule.escalate_after_minutes,
                snoozed_from: schedule.snoozed_from,
                created_at_ms: now_ms(),
            },
        );
        id
    }

    /// Active schedules matching `keep`, soonest first (ties by id, as SQLite orders them).
    fn active(&self, keep: impl Fn(&Schedule) -> bool) -> Vec<Schedule> {
        let mut found: Vec<Schedule> = self
            .schedules
            .values()
            .filter(|schedule| schedule.status == ScheduleStatus::Active && keep(schedule))
            .cloned()
            .collect();
        found.sort_by_key(|schedule| (schedule.next_due_ms, schedule.id));
        found
    }
}

fn push_all(state: &mut State, messages: &[OutgoingMessage]) -> Vec<i64> {
    messages
        .iter()
        .map(|message| state.outbox.push(message))
        .collect()
}

#[async_trait]
impl Schedules for InMemoryStore {
    async fn add(&self, schedule: &NewSchedule) -> Result<Schedule, StorageError> {
        let mut state = self.lock();
        let id = state.schedules.insert(schedule);
        Ok(state.schedules.schedules[&id].clone())
    }

    async fn schedule(&self, id: i64) -> Result<Option<Schedule>, StorageError> {
        Ok(self.lock().schedules.schedules.get(&id).cloned())
    }

    async fn schedules_of(&self, member_id: &str) -> Result<Vec<Schedule>, StorageError> {
        Ok(self
            .lock()
            .schedules
            .active(|schedule| schedule.member_id == member_id || schedule.set_by == member_id))
    }

    async fn active_schedules(&self) -> Result<Vec<Schedule>, StorageError> {
        Ok(self.lock().schedules.active(|_| true))
    }

    async fn count_active_for(&self, member_id: &str) -> Result<u64, StorageError> {
        Ok(self
            .lock()
            .schedules
            .active(|schedule| schedule.member_id == member_id)
            .len() as u64)
    }

    async fn due(&self, until_ms: i64, limit: usize) -> Result<Vec<Schedule>, StorageError> {
        let mut due = self
            .lock()
            .schedules
            .active(|schedule| schedule.next_due_ms.is_some_and(|due| due <= until_ms));
        due.truncate(limit);
        Ok(due)
    }

    async fn claim(&self, claim: &FiringClaim) -> Result<Claimed, StorageError> {
        claim.check_forward()?;
        let mut state = self.lock();
        let Some(schedule) = state.schedules.schedules.get_mut(&claim.id.schedule_id) else {
            return Ok(Claimed::Taken);
        };
        if schedule.status != ScheduleStatus::Active
            || schedule.next_due_ms != Some(claim.id.due_ms)
        {
            return Ok(Claimed::Taken);
        }
        schedule.next_due_ms = claim.next_due_ms;
        if claim.next_due_ms.is_none() {
            schedule.status = ScheduleStatus::Finished;
        }
        state.schedules.firings.insert(
            claim.id,
            Firing {
                id: claim.id,
                fired_at_ms: claim.fired_at_ms,
                timing: claim.timing,
                state: claim.state,
                escalate_at_ms: claim.escalate_at_ms,
                escalated_at_ms: None,
                inbox_id: claim.turn.as_ref().map(|turn| turn.id.clone()),
            },
        );
        if let Some(turn) = &claim.turn {
            state.accept_inbound(turn);
        }
        let outbox_ids = push_all(&mut state, &claim.messages);
        Ok(Claimed::Fired { outbox_ids })
    }

    async fn cancel(&self, id: i64) -> Result<bool, StorageError> {
        let mut state = self.lock();
        match state.schedules.schedules.get_mut(&id) {
            Some(schedule) if schedule.status == ScheduleStatus::Active => {
                schedule.status = ScheduleStatus::Cancelled;
                schedule.next_due_ms = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn firing(&self, id: FiringId) -> Result<Option<Firing>, StorageError> {
        Ok(self.lock().schedules.firings.get(&id).cloned())
    }

    async fn open_firings_of(&self, member_id: &str) -> Result<Vec<Firing>, StorageError> {
        let state = self.lock();
        let mut open: Vec<Firing> = state
            .schedules
            .firings
            .values()
            .filter(|firing| firing.state == FiringState::Open)
            .filter(|firing| {
                state
                    .schedules
                    .schedules
                    .get(&firing.id.schedule_id)
                    .is_some_and(|schedule| schedule.member_id == member_id)
            })
            .cloned()
            .collect();
        open.sort_by_key(|firing| std::cmp::Reverse((firing.fired_at_ms, firing.id.due_ms)));
        Ok(open)
    }

    async fn settle(&self, settlement: &Settlement) -> Result<Settled, StorageError> {
        let mut state = self.lock();
        match state.schedules.firings.get_mut(&settlement.id) {
            Some(firing) if firing.state == FiringState::Open => {
                firing.state = settlement.state;
            }
            other => return Ok(Settled::NotOpen(other.map(|firing| firing.state))),
        }
        let outbox_ids = push_all(&mut state, &settlement.messages);
        let snooze = settlement.snooze.as_ref().map(|snooze| {
            let id = state.schedules.insert(snooze);
            Box::new(state.schedules.schedules[&id].clone())
        });
        Ok(Settled::Now { outbox_ids, snooze })
    }

    async fn due_escalations(
        &self,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Firing>, StorageError> {
        let mut due: Vec<Firing> = self
            .lock()
            .schedules
            .firings
            .values()
            .filter(|firing| {
                firing.state == FiringState::Open
                    && firing.escalated_at_ms.is_none()
                    && firing.escalate_at_ms.is_some_and(|at| at <= until_ms)
            })
            .cloned()
            .collect();
        due.sort_by_key(|firing| firing.escalate_at_ms);
        due.truncate(limit);
        Ok(due)
    }

    async fn escalate(
        &self,
        id: FiringId,
        at_ms: i64,
        messages: &[OutgoingMessage],
    ) -> Result<Option<Vec<i64>>, StorageError> {
        let mut state = self.lock();
        match state.schedules.firings.get_mut(&id) {
            Some(firing)
                if firing.state == FiringState::Open && firing.escalated_at_ms.is_none() =>
            {
                firing.escalated_at_ms = Some(at_ms);
            }
            _ => return Ok(None),
        }
        Ok(Some(push_all(&mut state, messages)))
    }
}
