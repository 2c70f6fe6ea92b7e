//! Reminders and scheduled tasks (the domain; the scheduler actor that fires them is
//! `actors::scheduler`):
//!
//! - `when.rs`: when something fires, from a tool's delay or local time and recurrence in
//!   the member's zone, and how a stored recurrence goes on;
//! - `places.rs`: for whom (a parent may set one for another member) and where it goes;
//! - `texts.rs`: what a reminder, a missed one, an answered one and an escalation say;
//! - `listing.rs`: what a member may see and cancel, their list's lines, cancelling one:
//!   the rules the tools, the channels' `/reminders`, the HTTP API and the web page share;
//! - `tools.rs`: the tools a profile enables (`schedule_reminder`, `list_reminders`,
//!   `cancel_reminder`, `snooze_reminder`, `schedule_task`);
//! - `editing.rs`: a reminder added or edited from a form (the web page) through the tool's
//!   code, once per form;
//! - `messages.rs`: what the tools and the channels ask of the scheduler.
//!
//! A fired reminder is shown as a prompt (`OutgoingKind::Prompt`) whose id is
//! `PromptId::Reminder`: the channels show it with Done and Snooze, and an answer to it
//! goes to the scheduler instead of the request queue.

mod editing;
pub mod listing;
mod messages;
mod places;
mod texts;
mod tools;
mod when;

pub use editing::{FormError, ReminderFields};
pub use listing::{ListingError, NO_REMINDERS, ReminderListing, WaitingReminder};
pub use messages::{
    CancelReminder, ListReminders, ReminderCancelled, ReminderChoice, ReminderError,
    ReminderSettled, SchedulesChanged, SettleReminder,
};
pub use places::{PlaceError, delivery_place, find_member, target};
pub use texts::{
    DONE_OUTCOME, LATE_AFTER, MAX_TEXT_CHARS, NOT_DUE_AGAIN, escalation_message, kind_in_words,
    missed_message, next_in_words, recurrence_in_words, reminder_message, schedule_line, sent_late,
    snoozed_outcome, whose,
};
pub use tools::{
    CANCEL_REMINDER, LIST_REMINDERS, REMINDER_TOOL_NAMES, RemindersParts, RemindersToolset,
    SCHEDULE_REMINDER, SCHEDULE_TASK, SNOOZE_REMINDER,
};
pub use when::{Timing, WhenArguments, WhenError, stored_recurring};
