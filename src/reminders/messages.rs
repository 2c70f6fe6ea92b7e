//! What the reminder tools and the channels ask of the scheduler, and what it answers. The
//! scheduler actor (`actors::scheduler`) handles them; they live here, below it, so the
//! tools and the channels name no actor. Listing and cancelling for a channel's
//! `/reminders` (`ListReminders`, `CancelReminder`; the web page's Cancel too) are
//! answered by `listing.rs`, the same rules as the tools'.

use std::time::Duration;

use actix::Message;

use super::listing::{ListingError, ReminderListing};
use crate::ids::{FiringId, MemberId};
use crate::ports::StorageError;

/// A schedule was added, moved (snoozed, edited) or cancelled: the scheduler arms a timer
/// for it when it is due (`next_due_ms`, `None` once cancelled) before what it holds in
/// memory reaches, and wakes the other workers' schedulers, which read what is due next
/// from the database. (Here a cancelled one needs nothing more: its claim finds it
/// taken.)
///
/// Sent by the reminder tools (`reminders/tools.rs`) and the web page's forms
/// (`reminders/editing.rs`); handled in `scheduler/mod.rs`, whose `SettleReminder` handler
/// also applies one itself after a snooze.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct SchedulesChanged {
    pub schedule_id: i64,
    pub next_due_ms: Option<i64>,
}

/// What the member answered a fired reminder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReminderChoice {
    Done,
    /// Put off by this long, or by `reminders.snooze_minutes`.
    Snooze(Option<Duration>),
}

/// `member_id` answers the fired occurrence `firing` (a button, a reaction, a reply, the
/// HTTP API, the `snooze_reminder` tool). Only the member it is for may.
///
/// Sent by the channel core (`channels/core/reminder_answers.rs`), the `snooze_reminder`
/// tool (`reminders/tools.rs`), the HTTP API (`http/reminders.rs`) and the web page
/// (`http/page/reminders.rs`); handled in `scheduler/mod.rs` (with `scheduler/answers.rs`).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<ReminderSettled, ReminderError>")]
pub struct SettleReminder {
    pub firing: FiringId,
    pub member_id: MemberId,
    pub choice: ReminderChoice,
}

/// The answer counted: what to tell the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReminderSettled {
    pub text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReminderError {
    /// Unknown, or not for the member answering: as if it did not exist.
    #[error("no reminder {0} is waiting for you")]
    NotYours(FiringId),
    #[error("reminder {firing} was answered already ({state})")]
    AlreadySettled { firing: FiringId, state: String },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("the scheduler is not running")]
    Stopped,
}

/// `member_id` asks for their list (`/reminders`): what they may see, in their words.
///
/// Sent by the channel core (`channels/core/reminder_lists.rs`); handled in
/// `scheduler/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<ReminderListing, ListingError>")]
pub struct ListReminders {
    pub member_id: MemberId,
}

/// `member_id` cancels schedule `schedule_id` from their list (a button, a numbered
/// reply), when they may.
///
/// Sent by the channel core (`channels/core/reminder_lists.rs`) and the web page
/// (`http/page/reminders.rs`); handled in `scheduler/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<ReminderCancelled, ListingError>")]
pub struct CancelReminder {
    pub member_id: MemberId,
    pub schedule_id: i64,
}

/// The cancel counted: what to tell the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReminderCancelled {
    pub schedule_id: i64,
    pub text: String,
}
