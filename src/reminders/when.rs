//! When a reminder or a task fires, from what a tool was given: either a delay (an ISO 8601
//! duration) or a local time with an optional date, and an optional recurrence, all in the
//! member's zone. hearth computes the instants (the model never does date arithmetic) and
//! keeps what a recurrence needs to go on: its zone, its local start and its rule.

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};

use crate::local_time::{
    IsoDuration, LocalTimeError, LocalWhen, Recurrence, RecurringTime, ResolvedLocal, ZoneName,
    phrasing,
};

/// How a stored local start is written (`start_local`).
const START_FORMAT: &str = "%Y-%m-%dT%H:%M";

/// What a tool call says about time.
#[derive(Debug, Clone, Copy, Default)]
pub struct WhenArguments<'a> {
    pub delay: Option<&'a str>,
    pub date: Option<&'a str>,
    pub time: Option<&'a str>,
    pub recurrence: Option<&'a str>,
}

/// Why the arguments name no time to fire at; nothing is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    #[error(
        "give either `delay` (an ISO 8601 duration such as PT2H) or `time` (HH:MM, with an optional `date`), not both"
    )]
    DelayAndTime,
    #[error(
        "say when: give `delay` (an ISO 8601 duration such as PT10M or P1D) or `time` (HH:MM on the 24-hour clock, with an optional `date` YYYY-MM-DD)"
    )]
    Nothing,
    #[error("`date` {date:?} needs a `time` (HH:MM on the 24-hour clock)")]
    DateWithoutTime { date: String },
    #[error(transparent)]
    LocalTime(#[from] LocalTimeError),
}

/// When something fires: its first instant and, when it repeats, how it goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    pub zone: ZoneName,
    pub first: DateTime<Utc>,
    pub recurring: Option<RecurringTime>,
    /// Said back when the asked wall-clock time was skipped or repeated in the zone.
    pub shift_note: Option<String>,
}

fn blank(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

impl Timing {
    /// The timing the arguments name for a member in `zone` at `now`: in the future, at most
    /// `local_time::MAX_YEARS_AHEAD` years ahead, a recurrence that fires at all.
    pub fn plan(
        arguments: WhenArguments<'_>,
        zone: ZoneName,
        now: DateTime<Utc>,
    ) -> Result<Timing, WhenError> {
        let (delay, date, time) = (
            blank(arguments.delay),
            blank(arguments.date),
            blank(arguments.time),
        );
        let recurrence = blank(arguments.recurrence)
            .map(Recurrence::parse)
            .transpose()?;
        let (resolved, first) = match (delay, time) {
            (Some(_), Some(_)) => return Err(WhenError::DelayAndTime),
            (None, None) => {
                return Err(match date {
                    Some(date) => WhenError::DateWithoutTime { date: date.into() },
                    None => WhenError::Nothing,
                });
            }
            (Some(delay), None) => {
                if date.is_some() {
                    return Err(WhenError::DelayAndTime);
                }
                (None, IsoDuration::parse(delay)?.after(zone, now)?)
            }
            (None, Some(time)) => {
                let resolved = LocalWhen::parse(date, time)?.resolve(zone, now)?;
                (Some(resolved), resolved.instant)
            }
        };
        let shift_note = resolved
            .as_ref()
            .and_then(|resolved| phrasing::say_shift(resolved, zone));
        let Some(recurrence) = recurrence else {
            return Ok(Timing {
                zone,
                first,
                recurring: None,
                shift_note,
            });
        };
        // The recurrence runs at the asked wall-clock time (a skipped 02:30 is still 02:30
        // on the nights that have one), from the first day asked.
        let start = resolved.map_or_else(
            || first.with_timezone(&zone.tz()).naive_local(),
            |resolved: ResolvedLocal| resolved.requested,
        );
        let recurring = RecurringTime::new(zone, start, recurrence)?;
        let first = recurring
            .next_after(now.max(first - TimeDelta::seconds(1)))
            .ok_or_else(|| LocalTimeError::NeverFires {
                value: recurring.recurrence.to_string(),
                start: start.format("%Y-%m-%d %H:%M").to_string(),
            })?;
        Ok(Timing {
            zone,
            first,
            recurring: Some(recurring),
            shift_note,
        })
    }

    /// The recurrence as stored (`recurrence`, `start_local`).
    pub fn stored_recurrence(&self) -> (Option<String>, Option<String>) {
        match &self.recurring {
            Some(recurring) => (
                Some(recurring.recurrence.to_string()),
                Some(recurring.start.format(START_FORMAT).to_string()),
            ),
            None => (None, None),
        }
    }

    /// "Tomorrow, Thu 26 Nov at 08:00 (Europe/Berlin)", then "every day at 08:00
    /// (Europe/Berlin)" for a recurrence, and what happened to a shifted time.
    pub fn in_words(&self, now: DateTime<Utc>) -> String {
        let mut words = phrasing::say_instant(self.first, self.zone, now);
        if let Some(recurring) = &self.recurring {
            words.push_str(", then ");
            words.push_str(&phrasing::say_recurrence(recurring));
        }
        if let Some(note) = &self.shift_note {
            words.push_str(&format!(" ({note})"));
        }
        words
    }
}

/// A stored recurrence read back; `None` for a schedule that fires once (or whose stored
/// recurrence no longer reads, which is logged: it then fires no more).
pub fn stored_recurring(
    zone: &str,
    recurrence: Option<&str>,
    start_local: Option<&str>,
) -> Option<RecurringTime> {
    let (recurrence, start) = (recurrence?, start_local?);
    let read = || -> Result<RecurringTime, String> {
        let zone = ZoneName::parse(zone).map_err(|error| error.to_string())?;
        let start = NaiveDateTime::parse_from_str(start, START_FORMAT)
            .map_err(|error| format!("start {start:?}: {error}"))?;
        let recurrence = Recurrence::parse(recurrence).map_err(|error| error.to_string())?;
        Ok(RecurringTime {
            zone,
            start,
            recurrence,
        })
    };
    match read() {
        Ok(recurring) => Some(recurring),
        Err(error) => {
            tracing::error!(%error, "a stored recurrence cannot be read; it fires no more");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn berlin() -> ZoneName {
        ZoneName::parse("Europe/Berlin").unwrap()
    }

    /// Wed 25 Nov 2026, 10:15 in Berlin.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 25, 9, 15, 0).unwrap()
    }

    fn plan(arguments: WhenArguments<'_>) -> Result<Timing, WhenError> {
        Timing::plan(arguments, berlin(), now())
    }

    #[test]
    fn a_delay_is_counted_from_now() {
        let timing = plan(WhenArguments {
            delay: Some("PT90S"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(timing.first, now() + TimeDelta::seconds(90));
        assert_eq!(timing.recurring, None);
        assert_eq!(timing.stored_recurrence(), (None, None));
        assert_eq!(
            timing.in_words(now()),
            "Today at 10:16 (Europe/Berlin)",
            "seconds are not said"
        );
    }

    #[test]
    fn a_time_without_a_date_is_the_next_time_the_clock_shows_it() {
        let at_eight = plan(WhenArguments {
            time: Some("08:00"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            at_eight.first,
            Utc.with_ymd_and_hms(2026, 11, 26, 7, 0, 0).unwrap()
        );
        assert_eq!(
            at_eight.in_words(now()),
            "Tomorrow, Thu 26 Nov at 08:00 (Europe/Berlin)"
        );
    }

    #[test]
    fn a_daily_recurrence_starts_at_the_next_matching_time() {
        let timing = plan(WhenArguments {
            time: Some("18:00"),
            recurrence: Some("daily"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            timing.first,
            Utc.with_ymd_and_hms(2026, 11, 25, 17, 0, 0).unwrap()
        );
        assert_eq!(
            timing.in_words(now()),
            "Today at 18:00 (Europe/Berlin), then every day at 18:00 (Europe/Berlin)"
        );
        let (recurrence, start) = timing.stored_recurrence();
        assert_eq!(recurrence.as_deref(), Some("daily"));
        assert_eq!(start.as_deref(), Some("2026-11-25T18:00"));
        let again = stored_recurring("Europe/Berlin", recurrence.as_deref(), start.as_deref());
        assert_eq!(again, timing.recurring);
    }

    #[test]
    fn a_weekly_recurrence_on_a_date_starts_on_its_first_matching_day() {
        let timing = plan(WhenArguments {
            date: Some("2026-11-30"),
            time: Some("07:00"),
            recurrence: Some("weekly on thu"),
            ..Default::default()
        })
        .unwrap();
        // Mon 30 Nov is not a Thursday: the first is Thu 3 Dec.
        assert_eq!(
            timing.first,
            Utc.with_ymd_and_hms(2026, 12, 3, 6, 0, 0).unwrap()
        );
    }

    #[test]
    fn what_names_no_time_is_refused_naming_what_to_give() {
        let error = |arguments| plan(arguments).unwrap_err().to_string();
        assert!(error(WhenArguments::default()).starts_with("say when"));
        assert!(
            error(WhenArguments {
                delay: Some("PT1H"),
                time: Some("08:00"),
                ..Default::default()
            })
            .starts_with("give either")
        );
        assert_eq!(
            error(WhenArguments {
                date: Some("2026-12-01"),
                ..Default::default()
            }),
            "`date` \"2026-12-01\" needs a `time` (HH:MM on the 24-hour clock)"
        );
        assert!(
            error(WhenArguments {
                delay: Some("PT0S"),
                ..Default::default()
            })
            .contains("is zero")
        );
        assert!(
            error(WhenArguments {
                date: Some("2026-11-25"),
                time: Some("09:00"),
                ..Default::default()
            })
            .contains("in the past")
        );
        assert!(
            error(WhenArguments {
                time: Some("09:00"),
                recurrence: Some("FREQ=SOMETIMES"),
                ..Default::default()
            })
            .contains("not a usable RRULE")
        );
    }

    #[test]
    fn a_skipped_wall_clock_time_is_said_back() {
        let zone = berlin();
        let before = Utc.with_ymd_and_hms(2026, 3, 28, 12, 0, 0).unwrap();
        let timing = Timing::plan(
            WhenArguments {
                date: Some("2026-03-29"),
                time: Some("02:30"),
                ..Default::default()
            },
            zone,
            before,
        )
        .unwrap();
        assert_eq!(
            timing.first,
            Utc.with_ymd_and_hms(2026, 3, 29, 1, 30, 0).unwrap()
        );
        assert!(
            timing.in_words(before).contains("does not exist"),
            "{}",
            timing.in_words(before)
        );
    }
}
