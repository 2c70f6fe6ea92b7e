//! What reminders say, in one place: the reminder itself (on time, late, set by someone
//! else), the notice of one missed while hearth was down, what its prompt shows once
//! answered, the parents' notice of one not acknowledged, and a schedule in a list, with
//! its parts (when next, how it repeats, whose) as `GET /api/reminders` and the web page
//! show them. Every time is said in the zone the reminder was set in.

use chrono::{DateTime, TimeDelta, Utc};

use crate::ids::MemberId;
use crate::local_time::{ZoneName, phrasing};
use crate::ports::{Schedule, ScheduleKind};

/// The longest reminder text or task prompt kept; a longer one is refused, not cut.
pub const MAX_TEXT_CHARS: usize = 1_000;

/// A late firing is said as late only past this: a second or two is on time to a person.
pub const LATE_AFTER: TimeDelta = TimeDelta::seconds(5);

/// The reminder as delivered, with who set it when it was not its member.
pub fn reminder_message(
    text: &str,
    set_by_name: Option<&str>,
    due: DateTime<Utc>,
    zone: ZoneName,
    fired_at: DateTime<Utc>,
) -> String {
    let from = set_by_name.map_or(String::new(), |name| format!(" from {name}"));
    let late = fired_at - due;
    if late > LATE_AFTER {
        format!(
            "⏰ Reminder{from} ({}, it was due {}): {text}",
            phrasing::say_lateness(late),
            phrasing::say_instant_in_sentence(due, zone, fired_at)
        )
    } else {
        format!("⏰ Reminder{from}: {text}")
    }
}

/// A fired reminder's prompt, `text` as its firing stored it, going out at `now` although
/// it was due at `due`: hearth was stopped between firing and sending it, or the platform
/// was down. Said late when it is, unless its firing already said so.
pub fn sent_late(
    text: &str,
    due: DateTime<Utc>,
    fired_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<String> {
    let late = now - due;
    (late > LATE_AFTER && fired_at - due <= LATE_AFTER)
        .then(|| format!("{text}\n(sent {})", phrasing::say_lateness(late)))
}

/// An occurrence missed for longer than the grace: told once instead of sent.
pub fn missed_message(
    schedule: &Schedule,
    due: DateTime<Utc>,
    zone: ZoneName,
    next: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> String {
    let what = match schedule.kind {
        ScheduleKind::Reminder => "reminder",
        ScheduleKind::Task => "scheduled task",
    };
    let mut text = format!(
        "⏰ Missed {what} while hearth was not running: “{}” was due {}.",
        schedule.text,
        phrasing::say_instant_in_sentence(due, zone, now)
    );
    if let Some(next) = next {
        text.push_str(&format!(
            " The next one is {}.",
            phrasing::say_instant_in_sentence(next, zone, now)
        ));
    }
    text
}

/// What the reminder's message ends with once Done was pressed.
pub const DONE_OUTCOME: &str = "✅ Done.";

/// What the reminder's message ends with once snoozed until `until`.
pub fn snoozed_outcome(until: DateTime<Utc>, zone: ZoneName, now: DateTime<Utc>) -> String {
    format!(
        "⏰ Snoozed until {}.",
        phrasing::say_instant_in_sentence(until, zone, now)
    )
}

/// The parents' notice of an occurrence nobody acknowledged.
pub fn escalation_message(
    member_name: &str,
    schedule: &Schedule,
    due: DateTime<Utc>,
    zone: ZoneName,
    after_minutes: u32,
    now: DateTime<Utc>,
) -> String {
    format!(
        "⚠️ {member_name}'s reminder “{}” of {} was not acknowledged within {after_minutes} min.",
        schedule.text,
        phrasing::say_instant_in_sentence(due, zone, now)
    )
}

/// What a schedule that fires no more says instead of its next time.
pub const NOT_DUE_AGAIN: &str = "not due again";

/// When `schedule` fires next, in words in its own zone; `None` once it fires no more.
pub fn next_in_words(schedule: &Schedule, now: DateTime<Utc>) -> Option<String> {
    let zone = ZoneName::parse(&schedule.zone).unwrap_or_else(|_| chrono_tz::UTC.into());
    schedule
        .next_due_ms
        .and_then(DateTime::<Utc>::from_timestamp_millis)
        .map(|next| phrasing::say_instant(next, zone, now))
}

/// How `schedule` repeats, in words (`every day at 07:30`); `None` for a one-off.
pub fn recurrence_in_words(schedule: &Schedule) -> Option<String> {
    super::when::stored_recurring(
        &schedule.zone,
        schedule.recurrence.as_deref(),
        schedule.start_local.as_deref(),
    )
    .map(|recurring| phrasing::say_recurrence(&recurring))
}

/// For whom and by whom `schedule` is, when that is not `reader` (`for Lea, set by
/// Alice`); `None` when it is the reader's own.
pub fn whose(
    schedule: &Schedule,
    reader: &MemberId,
    name_of: impl Fn(&MemberId) -> String,
) -> Option<String> {
    let mut who = Vec::new();
    if schedule.member_id != *reader {
        who.push(format!("for {}", name_of(&schedule.member_id)));
    }
    if schedule.set_by != schedule.member_id && schedule.set_by != *reader {
        who.push(format!("set by {}", name_of(&schedule.set_by)));
    }
    (!who.is_empty()).then(|| who.join(", "))
}

/// What a task is said to be before its text (`task for homework: `); empty for a
/// reminder.
pub fn kind_in_words(schedule: &Schedule) -> String {
    match (schedule.kind, &schedule.profile_id) {
        (ScheduleKind::Reminder, _) => String::new(),
        (ScheduleKind::Task, Some(profile)) => format!("task for {profile}: "),
        (ScheduleKind::Task, None) => "task: ".to_string(),
    }
}

/// One schedule as a line of a list: its number, what it is, when it fires next and how it
/// repeats, for whom and by whom when that is not the reader.
pub fn schedule_line(
    schedule: &Schedule,
    reader: &MemberId,
    name_of: impl Fn(&MemberId) -> String,
    now: DateTime<Utc>,
) -> String {
    let when = next_in_words(schedule, now).unwrap_or_else(|| NOT_DUE_AGAIN.to_string());
    let repeats = recurrence_in_words(schedule).map_or(String::new(), |words| format!(", {words}"));
    let who = whose(schedule, reader, name_of).map_or(String::new(), |who| format!(" ({who})"));
    format!(
        "#{} {}“{}”: {when}{repeats}{who}",
        schedule.id,
        kind_in_words(schedule),
        schedule.text
    )
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn berlin() -> ZoneName {
        ZoneName::parse("Europe/Berlin").unwrap()
    }

    #[test]
    fn a_reminder_fired_on_time_but_sent_later_says_so_once() {
        let due = Utc.with_ymd_and_hms(2026, 11, 26, 7, 0, 0).unwrap();
        let stored = "⏰ Reminder: call grandma";
        let seconds = chrono::TimeDelta::seconds;
        assert_eq!(
            sent_late(stored, due, due, due + seconds(12 * 60)).as_deref(),
            Some("⏰ Reminder: call grandma\n(sent late by 12 min)")
        );
        // Sent within moments: as stored.
        assert_eq!(sent_late(stored, due, due, due + seconds(3)), None);
        // Fired late already: its text says so, once is enough.
        assert_eq!(
            sent_late(stored, due, due + seconds(60), due + seconds(600)),
            None
        );
    }

    #[test]
    fn a_late_reminder_says_how_late_and_when_it_was_due() {
        let due = Utc.with_ymd_and_hms(2026, 11, 26, 7, 0, 0).unwrap();
        assert_eq!(
            reminder_message("call grandma", None, due, berlin(), due),
            "⏰ Reminder: call grandma"
        );
        assert_eq!(
            reminder_message(
                "call grandma",
                Some("Alice"),
                due,
                berlin(),
                due + TimeDelta::minutes(12)
            ),
            "⏰ Reminder from Alice (late by 12 min, it was due today at 08:00 (Europe/Berlin)): call grandma"
        );
    }
}
