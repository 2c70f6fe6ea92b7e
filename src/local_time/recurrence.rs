//! Recurrences as a tool writes them (`daily`, `weekdays`, `weekly on mon,thu`,
//! `monthly on 15`, or an RRULE) and their next occurrence, computed on wall-clock dates in
//! the member's zone: one occurrence per matching local date, so a daily reminder stays at
//! its local time across DST, fires once on a night with a repeated hour and never skips a
//! day.
//!
//! `monthly on 31` fires on the last day of shorter months (30 April, 28 or 29 February):
//! a family's "the 31st" is the month's end, and a skipped month would be a missed reminder.
//! An RRULE follows RFC 5545 instead, where `BYMONTHDAY=31` skips shorter months; write
//! `BYMONTHDAY=-1` there for the last day.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, Days, NaiveDate, NaiveDateTime, TimeDelta, Utc, Weekday};

use super::error::shown;
use super::instants::{parse_weekday, resolve_local};
use super::{LocalTimeError, RecurrenceRule, ZoneName};

/// How often something repeats; the time of day comes from its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recurrence {
    Daily,
    /// Monday to Friday.
    Weekdays,
    /// On each of these days (sorted Monday first, none twice, at least one).
    Weekly {
        days: Vec<Weekday>,
    },
    /// On this day of the month (1 to 31); the last day in months that are shorter.
    Monthly {
        day: u32,
    },
    Rrule(Box<RecurrenceRule>),
}

impl Recurrence {
    /// Parses a tool's recurrence: `daily` (`every day`), `weekdays` (`every weekday`),
    /// `weekly on mon,thu` (days by English name or three letters, separated by commas,
    /// spaces or `and`), `monthly on 15` (`monthly on the 15th`), or an RRULE (`FREQ=...` or
    /// `RRULE:FREQ=...`).
    pub fn parse(text: &str) -> Result<Self, LocalTimeError> {
        let bad = |reason: &str| LocalTimeError::BadRecurrence {
            value: shown(text),
            reason: reason.to_string(),
        };
        let trimmed = text.trim();
        let upper = trimmed.to_ascii_uppercase();
        if upper.starts_with("FREQ=") || upper.starts_with("RRULE:") {
            return RecurrenceRule::parse(text).map(|rule| Recurrence::Rrule(Box::new(rule)));
        }
        let lower = trimmed.to_ascii_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        match words.as_slice() {
            [] => Err(bad("it is empty")),
            ["daily"] | ["every", "day"] => Ok(Recurrence::Daily),
            ["weekdays"] | ["every", "weekday"] | ["on", "weekdays"] => Ok(Recurrence::Weekdays),
            ["weekly", rest @ ..] => Recurrence::weekly(rest, &bad),
            ["every", rest @ ..] if rest.first().is_some_and(|w| parse_day_list(w).is_some()) => {
                Recurrence::weekly(rest, &bad)
            }
            ["monthly", rest @ ..] => {
                let rest: Vec<&str> = rest
                    .iter()
                    .copied()
                    .skip_while(|word| matches!(*word, "on" | "the" | "day"))
                    .collect();
                let [number] = rest.as_slice() else {
                    return Err(bad("name the day of the month, e.g. monthly on 15"));
                };
                let digits = number.trim_end_matches(['s', 't', 'n', 'd', 'r', 'h']);
                match digits.parse::<u32>() {
                    Ok(day) if (1..=31).contains(&day) => Ok(Recurrence::Monthly { day }),
                    _ => Err(bad("the day of the month must be 1 to 31")),
                }
            }
            _ => Err(bad("unknown words")),
        }
    }

    fn weekly(
        words: &[&str],
        bad: &dyn Fn(&str) -> LocalTimeError,
    ) -> Result<Self, LocalTimeError> {
        let words = words.strip_prefix(&["on"]).unwrap_or(words);
        let mut days = Vec::new();
        for word in words {
            if *word == "and" || *word == "&" {
                continue;
            }
            let listed = parse_day_list(word).ok_or_else(|| {
                bad(&format!(
                    "`{}` is not a weekday such as mon or thursday",
                    shown(word)
                ))
            })?;
            days.extend(listed);
        }
        if days.is_empty() {
            return Err(bad("name the days, e.g. weekly on mon,thu"));
        }
        days.sort_by_key(Weekday::num_days_from_monday);
        days.dedup();
        Ok(Recurrence::Weekly { days })
    }

    /// Whether `date` is one of this recurrence's days (not for RRULEs).
    fn matches(&self, date: NaiveDate) -> bool {
        match self {
            Recurrence::Daily => true,
            Recurrence::Weekdays => date.weekday().num_days_from_monday() < 5,
            Recurrence::Weekly { days } => days.contains(&date.weekday()),
            Recurrence::Monthly { day } => date.day() == (*day).min(days_in_month(date)),
            Recurrence::Rrule(_) => false,
        }
    }
}

/// `mon,thu` or `mon,` or `thursday`; `None` when a piece is not a weekday.
fn parse_day_list(word: &str) -> Option<Vec<Weekday>> {
    word.split(',')
        .filter(|piece| !piece.is_empty())
        .map(|piece| parse_weekday(piece.trim_end_matches('s')).or_else(|| parse_weekday(piece)))
        .collect::<Option<Vec<_>>>()
        .filter(|days| !days.is_empty())
}

pub(super) fn days_in_month(date: NaiveDate) -> u32 {
    let first_of_next = if date.month() == 12 {
        NaiveDate::from_ymd_opt(date.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(date.year(), date.month() + 1, 1)
    };
    first_of_next
        .and_then(|next| next.pred_opt())
        .map_or(31, |last| last.day())
}

/// The canonical words, which [`Recurrence::parse`] reads back to the same value.
impl Recurrence {
    /// The same recurrence as an RFC 5545 RRULE value, for a calendar event. "Monthly on
    /// the 31st" is that day or the month's last, as hearth reads it: `BYSETPOS=-1` over
    /// the days from the 28th on.
    pub fn to_rrule(&self) -> String {
        let code = |day: &Weekday| day.to_string()[..2].to_ascii_uppercase();
        match self {
            Recurrence::Daily => "FREQ=DAILY".into(),
            Recurrence::Weekdays => "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR".into(),
            Recurrence::Weekly { days } => format!(
                "FREQ=WEEKLY;BYDAY={}",
                days.iter().map(code).collect::<Vec<_>>().join(",")
            ),
            Recurrence::Monthly { day } if *day <= 28 => {
                format!("FREQ=MONTHLY;BYMONTHDAY={day}")
            }
            Recurrence::Monthly { day } => format!(
                "FREQ=MONTHLY;BYMONTHDAY={};BYSETPOS=-1",
                (28..=*day)
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Recurrence::Rrule(rule) => rule.to_string(),
        }
    }
}

impl fmt::Display for Recurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recurrence::Daily => f.write_str("daily"),
            Recurrence::Weekdays => f.write_str("weekdays"),
            Recurrence::Weekly { days } => {
                let names: Vec<String> = days
                    .iter()
                    .map(|day| day.to_string().to_ascii_lowercase())
                    .collect();
                write!(f, "weekly on {}", names.join(","))
            }
            Recurrence::Monthly { day } => write!(f, "monthly on {day}"),
            Recurrence::Rrule(rule) => write!(f, "{rule}"),
        }
    }
}

impl FromStr for Recurrence {
    type Err = LocalTimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Recurrence::parse(text)
    }
}

/// A recurrence anchored at a local start in a member's zone: what a schedule stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecurringTime {
    pub zone: ZoneName,
    /// The earliest local date and time it may fire; its time of day is the recurrence's.
    pub start: NaiveDateTime,
    pub recurrence: Recurrence,
}

impl RecurringTime {
    /// Checks that the recurrence fires at all from `start` (an RRULE's BY parts, COUNT and
    /// UNTIL can leave nothing).
    pub fn new(
        zone: ZoneName,
        start: NaiveDateTime,
        recurrence: Recurrence,
    ) -> Result<Self, LocalTimeError> {
        let recurring = RecurringTime {
            zone,
            start,
            recurrence,
        };
        let before_start = resolve_local(zone, start).instant - TimeDelta::seconds(1);
        if recurring.next_after(before_start).is_none() {
            return Err(LocalTimeError::NeverFires {
                value: recurring.recurrence.to_string(),
                start: start.format("%Y-%m-%d %H:%M").to_string(),
            });
        }
        Ok(recurring)
    }

    /// The first occurrence strictly after `after` (never before the start), or `None` when
    /// an RRULE's COUNT or UNTIL has ended it.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if let Recurrence::Rrule(rule) = &self.recurrence {
            return rule.next_after(self.zone, self.start, after);
        }
        let time = self.start.time();
        let after_date = after.with_timezone(&self.zone.tz()).date_naive();
        // A day earlier: a skipped time on the previous date may resolve past midnight.
        let from = after_date
            .pred_opt()
            .unwrap_or(after_date)
            .max(self.start.date());
        // Every simple recurrence fires within a month and a half of any date.
        (0..62)
            .filter_map(|offset| from.checked_add_days(Days::new(offset)))
            .filter(|date| self.recurrence.matches(*date))
            .map(|date| resolve_local(self.zone, date.and_time(time)).instant)
            .find(|instant| *instant > after)
    }
}
