//! The in-memory `Schedules`: the same behaviour as SQLite, in the `InMemoryStore`'s main
//! mutex beside the inbox and the outbox, so a claim and what it stores are one change here
//! too; and their retention: settled occurrences, then schedules that ended with none left.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::{InMemoryStore, State};
use crate::ids::{FiringId, MemberId};
use crate::ports::{
    Claimed, Firing, FiringClaim, FiringState, NewSchedule, OutgoingMessage, Schedule,
    ScheduleEdit, ScheduleStatus, Schedules, Settled, Settlement, StorageError, now_ms,
};

#[derive(Default)]
pub(crate) struct ScheduleState {
    schedules: BTreeMap<i64, Schedule>,
    next_id: i64,
    firings: BTreeMap<FiringId, Firing>,
    once_keys: HashMap<String, i64>,
    /// When each settled occurrence was settled (SQLite's `settled_at_ms`).
    settled_at_ms: HashMap<FiringId, i64>,
    /// When each schedule finished or was cancelled (SQLite's `updated_at_ms` then).
    ended_at_ms: HashMap<i64, i64>,
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
                conversation: schedule.conversation.clone(),
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

    /// Forget at most `batch` settled occurrences whose last change was before
    /// `before_ms`, oldest first; how many. Open ones stay.
    pub(crate) fn prune_settled_firings(&mut self, before_ms: i64, batch: usize) -> usize {
        let mut old: Vec<(i64, FiringId)> = self
            .firings
            .values()
            .filter(|firing| firing.state != FiringState::Open)
            .map(|firing| {
                let changed = self.settled_at_ms.get(&firing.id).copied();
                (changed.unwrap_or(firing.fired_at_ms), firing.id)
            })
            .filter(|(changed, _)| *changed < before_ms)
            .collect();
        old.sort();
        old.truncate(batch);
        for (_, id) in &old {
            self.firings.remove(id);
            self.settled_at_ms.remove(id);
        }
        old.len()
    }

    /// Forget at most `batch` schedules that ended before `before_ms` and have no
    /// occurrence left, lowest id first, with their once keys; how many.
    pub(crate) fn prune_ended_schedules(&mut self, before_ms: i64, batch: usize) -> usize {
        let has_firings = |id: i64| {
            let from = FiringId {
                schedule_id: id,
                due_ms: i64::MIN,
            };
            self.firings
                .range(from..)
                .next()
                .is_some_and(|(firing, _)| firing.schedule_id == id)
        };
        let old: Vec<i64> = self
            .schedules
            .values()
            .filter(|schedule| schedule.status != ScheduleStatus::Active)
            .filter(|schedule| {
                self.ended_at_ms
                    .get(&schedule.id)
                    .is_some_and(|at| *at < before_ms)
            })
            .map(|schedule| schedule.id)
            .filter(|id| !has_firings(*id))
            .take(batch)
            .collect();
        for id in &old {
            self.schedules.remove(id);
            self.ended_at_ms.remove(id);
        }
        self.once_keys.retain(|_, id| !old.contains(id));
        old.len()
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

    async fn schedules_of(&self, member_id: &MemberId) -> Result<Vec<Schedule>, StorageError> {
        Ok(self
            .lock()
            .schedules
            .active(|schedule| schedule.member_id == *member_id || schedule.set_by == *member_id))
    }

    async fn active_schedules(&self) -> Result<Vec<Schedule>, StorageError> {
        Ok(self.lock().schedules.active(|_| true))
    }

    async fn count_active_for(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        Ok(self
            .lock()
            .schedules
            .active(|schedule| schedule.member_id == *member_id)
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
            state
                .schedules
                .ended_at_ms
                .insert(claim.id.schedule_id, claim.fired_at_ms);
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
                state.schedules.ended_at_ms.insert(id, now_ms());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn edit(&self, edit: &ScheduleEdit) -> Result<Option<Schedule>, StorageError> {
        let mut state = self.lock();
        match state.schedules.schedules.get_mut(&edit.id) {
            Some(schedule)
                if schedule.status == ScheduleStatus::Active
                    && schedule.next_due_ms == Some(edit.seen_next_due_ms) =>
            {
                schedule.text = edit.text.clone();
                schedule.recurrence = edit.recurrence.clone();
                schedule.start_local = edit.start_local.clone();
                schedule.next_due_ms = Some(edit.next_due_ms);
                Ok(Some(schedule.clone()))
            }
            _ => Ok(None),
        }
    }

    async fn firing(&self, id: FiringId) -> Result<Option<Firing>, StorageError> {
        Ok(self.lock().schedules.firings.get(&id).cloned())
    }

    async fn open_firings_of(&self, member_id: &MemberId) -> Result<Vec<Firing>, StorageError> {
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
                    .is_some_and(|schedule| schedule.member_id == *member_id)
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
                state
                    .schedules
                    .settled_at_ms
                    .insert(settlement.id, settlement.settled_at_ms);
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
