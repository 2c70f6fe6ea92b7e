//! Saying times back to a member in their own zone and words, so a wrong guess shows at
//! once: "Tomorrow, Thu 26 Nov at 08:00 (Europe/Berlin)", an event's range, an all-day
//! date, a recurrence ("every weekday at 07:00"), a shifted wall-clock time, lateness.
//!
//! The year is shown unless the date lies within the next [`YEAR_HIDDEN_DAYS_AHEAD`] days
//! or the past [`YEAR_HIDDEN_DAYS_BEHIND`]. A time in an hour that happens twice carries the
//! zone's abbreviation ("02:30 CEST") to say which of the two it is.

use chrono::{DateTime, Datelike, NaiveDate, TimeDelta, TimeZone, Utc, Weekday};
use rrule::Frequency;

use super::instants::weekday_name;
use super::recurrence::days_in_month;
use super::rrule_rule::Until;
use super::{Recurrence, RecurrenceRule, RecurringTime, ResolvedLocal, WallClockShift, ZoneName};

pub const YEAR_HIDDEN_DAYS_AHEAD: i64 = 300;
pub const YEAR_HIDDEN_DAYS_BEHIND: i64 = 30;

/// "Today", "Tomorrow, Thu 26 Nov", "Yesterday, Wed 25 Nov", "Mon 30 Nov", "Mon 30 Nov 2026".
pub fn say_day(date: NaiveDate, today: NaiveDate) -> String {
    let days = (date - today).num_days();
    let plain = if (-YEAR_HIDDEN_DAYS_BEHIND..=YEAR_HIDDEN_DAYS_AHEAD).contains(&days) {
        date.format("%a %-d %b").to_string()
    } else {
        date.format("%a %-d %b %Y").to_string()
    };
    match days {
        0 => "Today".to_string(),
        1 => format!("Tomorrow, {plain}"),
        -1 => format!("Yesterday, {plain}"),
        _ => plain,
    }
}

/// "18:00", or "02:30 CEST" when the zone shows 02:30 twice that night.
fn say_clock(instant: DateTime<Utc>, zone: ZoneName) -> String {
    let local = instant.with_timezone(&zone.tz());
    let repeated = zone
        .tz()
        .from_local_datetime(&local.naive_local())
        .single()
        .is_none();
    if repeated {
        local.format("%H:%M %Z").to_string()
    } else {
        local.format("%H:%M").to_string()
    }
}

/// The member's date now.
pub fn today_in(zone: ZoneName, now: DateTime<Utc>) -> NaiveDate {
    now.with_timezone(&zone.tz()).date_naive()
}

/// `say_instant` inside a sentence: "today at 18:00 (Europe/Berlin)", "due tomorrow, Thu
/// 26 Nov at 08:00"; a named day keeps its capital ("Mon 23 Nov").
pub fn say_instant_in_sentence(
    instant: DateTime<Utc>,
    zone: ZoneName,
    now: DateTime<Utc>,
) -> String {
    let said = say_instant(instant, zone, now);
    for word in ["Today", "Tomorrow", "Yesterday"] {
        if let Some(rest) = said.strip_prefix(word) {
            return format!("{}{rest}", word.to_lowercase());
        }
    }
    said
}

/// "Today at 18:00 (Europe/Berlin)", "Tomorrow, Thu 26 Nov at 08:00 (Europe/Berlin)".
pub fn say_instant(instant: DateTime<Utc>, zone: ZoneName, now: DateTime<Utc>) -> String {
    let date = instant.with_timezone(&zone.tz()).date_naive();
    format!(
        "{} at {} ({zone})",
        say_day(date, today_in(zone, now)),
        say_clock(instant, zone)
    )
}

/// An event: "Tue 1 Dec, 15:00-16:00 (Europe/Berlin)"; across midnight
/// "Tue 1 Dec at 22:00 - Wed 2 Dec at 02:00 (Europe/Berlin)".
pub fn say_range(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    zone: ZoneName,
    now: DateTime<Utc>,
) -> String {
    let today = today_in(zone, now);
    let start_date = start.with_timezone(&zone.tz()).date_naive();
    let end_date = end.with_timezone(&zone.tz()).date_naive();
    if start_date == end_date {
        format!(
            "{}, {}-{} ({zone})",
            say_day(start_date, today),
            say_clock(start, zone),
            say_clock(end, zone)
        )
    } else {
        format!(
            "{} at {} - {} at {} ({zone})",
            say_day(start_date, today),
            say_clock(start, zone),
            say_day(end_date, today),
            say_clock(end, zone)
        )
    }
}

/// An all-day event from `first` through `last` (both included): "Tue 1 Dec (all day)",
/// "Tue 1 Dec - Thu 3 Dec (all day)". All-day dates are the same in every zone.
pub fn say_all_day(first: NaiveDate, last: NaiveDate, today: NaiveDate) -> String {
    if last <= first {
        format!("{} (all day)", say_day(first, today))
    } else {
        format!(
            "{} - {} (all day)",
            say_day(first, today),
            say_day(last, today)
        )
    }
}

/// A reminder delivered after its time: "late by 40 s", "late by 12 min",
/// "late by 2 h 5 min", "late by 1 day 3 h".
pub fn say_lateness(late: TimeDelta) -> String {
    let seconds = late.num_seconds().max(0);
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3_600,
        seconds % 3_600 / 60,
    );
    let amount = if seconds < 60 {
        format!("{seconds} s")
    } else if days > 0 {
        let unit = if days == 1 { "day" } else { "days" };
        if hours > 0 {
            format!("{days} {unit} {hours} h")
        } else {
            format!("{days} {unit}")
        }
    } else if hours > 0 {
        if minutes > 0 {
            format!("{hours} h {minutes} min")
        } else {
            format!("{hours} h")
        }
    } else {
        format!("{minutes} min")
    };
    format!("late by {amount}")
}

/// What happened to a wall-clock time the zone skips or repeats, for the tool to say:
/// "02:30 does not exist on Sun 30 Mar 2025 in Europe/Berlin (the clocks go forward), so
/// it is 03:30". `None` for an ordinary time.
pub fn say_shift(resolved: &ResolvedLocal, zone: ZoneName) -> Option<String> {
    let asked = resolved.requested.format("%H:%M");
    let day = resolved.requested.format("%a %-d %b %Y");
    match resolved.shift {
        WallClockShift::Exact => None,
        WallClockShift::SkippedForward { .. } => Some(format!(
            "{asked} does not exist on {day} in {zone} (the clocks go forward), so it is {}",
            resolved.instant.with_timezone(&zone.tz()).format("%H:%M")
        )),
        WallClockShift::RepeatedFirst => Some(format!(
            "{asked} happens twice on {day} in {zone} (the clocks go back); it is the first, {}",
            resolved
                .instant
                .with_timezone(&zone.tz())
                .format("%H:%M %Z")
        )),
    }
}

/// A recurrence in words: "every weekday at 07:00 (Europe/Berlin)", "every Thursday at
/// 17:00 (Europe/Berlin)", "monthly on the 15th at 09:00 (Europe/Berlin)". An RRULE beyond
/// FREQ, INTERVAL, BYDAY, BYMONTHDAY, COUNT and UNTIL is quoted as written.
pub fn say_recurrence(recurring: &RecurringTime) -> String {
    let time = recurring.start.format("%H:%M");
    let zone = recurring.zone;
    let words = match &recurring.recurrence {
        Recurrence::Daily => format!("every day at {time}"),
        Recurrence::Weekdays => format!("every weekday at {time}"),
        Recurrence::Weekly { days } => format!("every {} at {time}", say_weekdays(days)),
        Recurrence::Monthly { day } => {
            format!("monthly on {} at {time}", say_month_day(*day))
        }
        Recurrence::Rrule(rule) => say_rule(rule, recurring),
    };
    format!("{words} ({zone})")
}

fn say_rule(rule: &RecurrenceRule, recurring: &RecurringTime) -> String {
    let time = recurring.start.format("%H:%M");
    let start = recurring.start.date();
    let interval = rule.interval();
    let every = |one: &str, many: &str| {
        if interval == 1 {
            format!("every {one}")
        } else {
            format!("every {interval} {many}")
        }
    };
    let days = rule.plain_weekdays();
    let month_days = rule.month_days();
    let quoted = || {
        format!(
            "by the rule {rule}, from {} at {time}",
            start.format("%Y-%m-%d")
        )
    };
    if rule.has_other_parts() || days.is_none() {
        return quoted();
    }
    let days = days.unwrap_or_default();
    let words = match rule.frequency() {
        Frequency::Hourly if days.is_empty() && month_days.is_empty() => {
            format!("{} from {time}", every("hour", "hours"))
        }
        Frequency::Daily if month_days.is_empty() => {
            let base = every("day", "days");
            if days.is_empty() {
                format!("{base} at {time}")
            } else if interval == 1 {
                format!("every {} at {time}", say_weekdays(&days))
            } else {
                format!("{base} on {} at {time}", say_weekdays(&days))
            }
        }
        Frequency::Weekly if month_days.is_empty() => {
            let days = if days.is_empty() {
                vec![start.weekday()]
            } else {
                days
            };
            if interval == 1 {
                if days == WORKING_DAYS {
                    format!("every weekday at {time}")
                } else {
                    format!("every {} at {time}", say_weekdays(&days))
                }
            } else {
                format!(
                    "every {interval} weeks on {} at {time}",
                    say_weekdays(&days)
                )
            }
        }
        Frequency::Monthly if days.is_empty() => {
            let base = every("month", "months");
            let on = if month_days.is_empty() {
                say_month_day_rfc(i8::try_from(start.day()).unwrap_or(1))
            } else {
                join_words(
                    month_days
                        .iter()
                        .map(|day| say_month_day_rfc(*day))
                        .collect(),
                )
            };
            format!("{base} on {on} at {time}")
        }
        Frequency::Yearly if days.is_empty() && month_days.is_empty() => {
            format!(
                "{} on {} at {time}",
                every("year", "years"),
                start.format("%-d %b")
            )
        }
        _ => return quoted(),
    };
    let limit = match (rule.count(), rule.until()) {
        (Some(1), _) => ", once".to_string(),
        (Some(count), _) => format!(", {count} times"),
        (None, Some(Until::Date(date))) => format!(", until {}", date.format("%a %-d %b %Y")),
        (None, Some(Until::Local(wall))) => {
            format!(", until {}", wall.format("%a %-d %b %Y %H:%M"))
        }
        (None, Some(Until::Instant(instant))) => format!(
            ", until {}",
            instant
                .with_timezone(&recurring.zone.tz())
                .format("%a %-d %b %Y %H:%M")
        ),
        (None, None) => String::new(),
    };
    format!("{words}{limit}")
}

const WORKING_DAYS: [Weekday; 5] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
];

/// "Thursday", "Monday and Thursday", "Monday, Wednesday and Friday".
fn say_weekdays(days: &[Weekday]) -> String {
    join_words(
        days.iter()
            .map(|day| {
                let name = weekday_name(*day);
                let mut characters = name.chars();
                characters
                    .next()
                    .map(|first| first.to_ascii_uppercase().to_string() + characters.as_str())
                    .unwrap_or_default()
            })
            .collect(),
    )
}

fn join_words(mut words: Vec<String>) -> String {
    match words.len() {
        0 => String::new(),
        1 => words.remove(0),
        _ => {
            let last = words.pop().unwrap_or_default();
            format!("{} and {last}", words.join(", "))
        }
    }
}

/// "the 15th"; past the 28th the clamping of `monthly on N` is said too.
fn say_month_day(day: u32) -> String {
    let ordinal = ordinal(day);
    // 29 and 30 still fall on the last day of February; 31 on that of four more months.
    let shorter_months = NaiveDate::from_ymd_opt(2025, 2, 1).map_or(28, days_in_month);
    if day > shorter_months {
        format!("the {ordinal} (the last day in shorter months)")
    } else {
        format!("the {ordinal}")
    }
}

/// RFC 5545 month days: "the 15th", "the last day", "the 2nd to last day"; a month without
/// the day is skipped, as the RFC says.
fn say_month_day_rfc(day: i8) -> String {
    match day {
        -1 => "the last day".to_string(),
        day if day < 0 => format!("the {} to last day", ordinal(u32::from(day.unsigned_abs()))),
        day => format!("the {}", ordinal(u32::from(day.unsigned_abs()))),
    }
}

fn ordinal(number: u32) -> String {
    let suffix = match (number % 10, number % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{number}{suffix}")
}
