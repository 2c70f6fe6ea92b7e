//! Reminders and scheduled tasks as stored: a `Schedule` is what a member asked for, with its
//! next occurrence; a `Firing` is one occurrence that happened. An occurrence is fired by
//! `Schedules::claim`, which moves the schedule on from the occurrence it was read at and
//! stores the firing with what it sends (outbox rows, a task's turn) in one transaction:
//! whoever claims it first fires it, every later claim finds it taken. So an occurrence
//! fires once across restarts, kill -9 and several hearths on one database.

use async_trait::async_trait;

use super::{Inbound, OutgoingMessage, StorageError};
use crate::ids::{ConversationKey, FiringId, MemberId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScheduleKind {
    /// Words delivered to the member at each occurrence, with Done and Snooze.
    Reminder,
    /// A prompt run as a turn of a profile for the member at each occurrence.
    Task,
}

impl ScheduleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleKind::Reminder => "reminder",
            ScheduleKind::Task => "task",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "reminder" => Ok(ScheduleKind::Reminder),
            "task" => Ok(ScheduleKind::Task),
            other => Err(StorageError::Corrupt(format!("schedule kind {other:?}"))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleStatus {
    /// It fires at `next_due_ms`.
    Active,
    /// Its last occurrence fired.
    Finished,
    Cancelled,
}

impl ScheduleStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleStatus::Active => "active",
            ScheduleStatus::Finished => "finished",
            ScheduleStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "active" => Ok(ScheduleStatus::Active),
            "finished" => Ok(ScheduleStatus::Finished),
            "cancelled" => Ok(ScheduleStatus::Cancelled),
            other => Err(StorageError::Corrupt(format!("schedule status {other:?}"))),
        }
    }
}

/// A schedule to store. Its times were computed by hearth in the member's zone, never by
/// the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    pub kind: ScheduleKind,
    /// The family member it is for.
    pub member_id: MemberId,
    /// The family member who set it (a parent may set one for another member).
    pub set_by: MemberId,
    /// The reminder's words, or the task's prompt.
    pub text: String,
    /// A task's profile.
    pub profile_id: Option<String>,
    /// Where it is delivered.
    pub conversation: ConversationKey,
    /// The IANA zone its local times are in (the member's when it was set).
    pub zone: String,
    /// How it repeats, as `local_time::Recurrence` writes it; `None`: once.
    pub recurrence: Option<String>,
    /// The local date and time a recurrence starts at (`YYYY-MM-DDTHH:MM`).
    pub start_local: Option<String>,
    pub first_due_ms: i64,
    /// An occurrence still unacknowledged this long after it fired is told to the parents.
    pub escalate_after_minutes: Option<u32>,
    /// The occurrence whose snooze this one-off schedule is.
    pub snoozed_from: Option<FiringId>,
    /// The tool call that sets it: storing under a key used before stores nothing and
    /// answers the schedule stored then (while it is kept: see `Prunable::EndedSchedules`).
    pub once_key: Option<String>,
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub id: i64,
    pub kind: ScheduleKind,
    pub member_id: MemberId,
    pub set_by: MemberId,
    pub text: String,
    pub profile_id: Option<String>,
    pub conversation: ConversationKey,
    pub zone: String,
    pub recurrence: Option<String>,
    pub start_local: Option<String>,
    /// The next occurrence; `None` once it will not fire again.
    pub next_due_ms: Option<i64>,
    pub status: ScheduleStatus,
    pub escalate_after_minutes: Option<u32>,
    pub snoozed_from: Option<FiringId>,
    pub created_at_ms: i64,
}

/// When an occurrence went out, against when it was due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiringTiming {
    OnTime,
    /// After its time (hearth was down or busy), within the grace: sent marked late.
    Late,
    /// Too long after its time: not sent, the member told it was missed.
    Missed,
}

impl FiringTiming {
    pub fn as_str(self) -> &'static str {
        match self {
            FiringTiming::OnTime => "on_time",
            FiringTiming::Late => "late",
            FiringTiming::Missed => "missed",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "on_time" => Ok(FiringTiming::OnTime),
            "late" => Ok(FiringTiming::Late),
            "missed" => Ok(FiringTiming::Missed),
            other => Err(StorageError::Corrupt(format!("firing timing {other:?}"))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiringState {
    /// Shown with Done and Snooze; waiting for the member.
    Open,
    Done,
    Snoozed,
    /// Nothing to answer (a task's turn, a missed occurrence).
    Closed,
}

impl FiringState {
    pub fn as_str(self) -> &'static str {
        match self {
            FiringState::Open => "open",
            FiringState::Done => "done",
            FiringState::Snoozed => "snoozed",
            FiringState::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "open" => Ok(FiringState::Open),
            "done" => Ok(FiringState::Done),
            "snoozed" => Ok(FiringState::Snoozed),
            "closed" => Ok(FiringState::Closed),
            other => Err(StorageError::Corrupt(format!("firing state {other:?}"))),
        }
    }
}

/// An occurrence that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Firing {
    pub id: FiringId,
    pub fired_at_ms: i64,
    pub timing: FiringTiming,
    pub state: FiringState,
    pub escalate_at_ms: Option<i64>,
    pub escalated_at_ms: Option<i64>,
    /// A task's turn: the inbox message it started.
    pub inbox_id: Option<String>,
}

/// Fire the occurrence `id` of a schedule read with `next_due_ms == id.due_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct FiringClaim {
    pub id: FiringId,
    /// The occurrence after it; `None` finishes the schedule.
    pub next_due_ms: Option<i64>,
    pub fired_at_ms: i64,
    pub timing: FiringTiming,
    pub state: FiringState,
    pub escalate_at_ms: Option<i64>,
    /// What it sends, stored as outbox rows with it.
    pub messages: Vec<OutgoingMessage>,
    /// A task's turn, stored in the inbox as accepted with it.
    pub turn: Option<Inbound>,
}

impl FiringClaim {
    /// Refuse a claim whose next occurrence is not after the one it fires: a schedule only
    /// moves forward, so an occurrence claimed once is never due again, even after
    /// retention removed its firing (`Prunable::SettledFirings`).
    pub fn check_forward(&self) -> Result<(), StorageError> {
        match self.next_due_ms {
            Some(next) if next <= self.id.due_ms => Err(StorageError::Invalid(format!(
                "the next occurrence of schedule {} ({next} ms) is not after the one fired \
                 ({} ms)",
                self.id.schedule_id, self.id.due_ms
            ))),
            _ => Ok(()),
        }
    }
}

/// A member's change of an active schedule's words and time (the web page's edit), based on
/// the occurrence they saw: applied only while the schedule is active and still next due
/// then, so an occurrence that fired or a cancel meanwhile is never overwritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleEdit {
    pub id: i64,
    /// The `next_due_ms` the change was based on.
    pub seen_next_due_ms: i64,
    pub text: String,
    pub recurrence: Option<String>,
    pub start_local: Option<String>,
    pub next_due_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// Fired now: the ids of its outbox rows, in the order of `FiringClaim::messages`.
    Fired { outbox_ids: Vec<i64> },
    /// Fired already, cancelled, or moved meanwhile: nothing was stored.
    Taken,
}

/// What settling an open occurrence (Done, Snooze) stores with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    pub id: FiringId,
    /// `Done` or `Snoozed`.
    pub state: FiringState,
    pub settled_at_ms: i64,
    /// Stored as outbox rows with it (the prompt's close).
    pub messages: Vec<OutgoingMessage>,
    /// A snooze's one-off schedule.
    pub snooze: Option<NewSchedule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Settled now: its outbox rows, and the snooze's schedule.
    Now {
        outbox_ids: Vec<i64>,
        snooze: Option<Box<Schedule>>,
    },
    /// Not open (settled before, or never fired): nothing was stored.
    NotOpen(Option<FiringState>),
}

#[async_trait]
pub trait Schedules: Send + Sync {
    /// Store `schedule` as active, due at `first_due_ms`; when its `once_key` was used
    /// before, store nothing and answer the schedule stored then.
    async fn add(&self, schedule: &NewSchedule) -> Result<Schedule, StorageError>;

    async fn schedule(&self, id: i64) -> Result<Option<Schedule>, StorageError>;

    /// Active schedules for `member_id` or set by them, soonest first.
    async fn schedules_of(&self, member_id: &MemberId) -> Result<Vec<Schedule>, StorageError>;

    /// Every active schedule of the family, soonest first (what a parent lists).
    async fn active_schedules(&self) -> Result<Vec<Schedule>, StorageError>;

    /// How many active schedules are for `member_id`.
    async fn count_active_for(&self, member_id: &MemberId) -> Result<u64, StorageError>;

    /// At most `limit` active schedules due at or before `until_ms`, soonest first.
    async fn due(&self, until_ms: i64, limit: usize) -> Result<Vec<Schedule>, StorageError>;

    /// Fire an occurrence, once: see `FiringClaim`. A claim whose next occurrence is not
    /// after the one it fires is refused (`FiringClaim::check_forward`).
    async fn claim(&self, claim: &FiringClaim) -> Result<Claimed, StorageError>;

    /// Stop schedule `id` from firing again; `false` when it was not active.
    async fn cancel(&self, id: i64) -> Result<bool, StorageError>;

    /// Apply `edit` when its schedule is active and still next due at
    /// `edit.seen_next_due_ms`: the schedule as changed; `None` (nothing changed) when it
    /// fired, moved, ended or was cancelled meanwhile.
    async fn edit(&self, edit: &ScheduleEdit) -> Result<Option<Schedule>, StorageError>;

    async fn firing(&self, id: FiringId) -> Result<Option<Firing>, StorageError>;

    /// The open occurrences of schedules for `member_id`, newest first.
    async fn open_firings_of(&self, member_id: &MemberId) -> Result<Vec<Firing>, StorageError>;

    /// Settle an open occurrence (Done, Snooze), once.
    async fn settle(&self, settlement: &Settlement) -> Result<Settled, StorageError>;

    /// At most `limit` open occurrences not yet escalated whose escalation is due at or
    /// before `until_ms`, soonest first.
    async fn due_escalations(
        &self,
        until_ms: i64,
        limit: usize,
    ) -> Result<Vec<Firing>, StorageError>;

    /// Tell the parents of open occurrence `id`, once: stores `messages` with the mark;
    /// `None` when it was escalated or settled before.
    async fn escalate(
        &self,
        id: FiringId,
        at_ms: i64,
        messages: &[OutgoingMessage],
    ) -> Result<Option<Vec<i64>>, StorageError>;
}
