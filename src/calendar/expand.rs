//! A calendar object's occurrences within a range: a single event once, a recurring one
//! expanded on its own zone's wall clock (so a weekly 17:00 stays 17:00 across a DST
//! change) with its EXDATEs left out and its changed occurrences put in their place.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};

use super::events::{EventData, EventTime};
use crate::local_time::{Recurrence, RecurringTime, ZoneName};

/// At most this many occurrences of one event are listed for one range.
pub const MAX_OCCURRENCES_PER_EVENT: usize = 400;

/// One occurrence of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// For an all-day event, its dates (first and last, both included).
    pub all_day: Option<(NaiveDate, NaiveDate)>,
    /// The event it belongs to (a changed occurrence's own data).
    pub event: EventData,
    /// Whether it is one of a recurring event's.
    pub recurring: bool,
}

/// Why a recurring event was shown only once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotExpanded {
    pub summary: String,
    pub rule: String,
    pub reason: String,
}

/// The occurrences of `events` (one calendar object: its main event, then its changed
/// occurrences) that overlap `[from, to)`, times read in `zone` where the calendar gave
/// none, sorted by start.
pub fn occurrences(
    events: &[EventData],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: ZoneName,
) -> (Vec<Occurrence>, Option<NotExpanded>) {
    let Some(main) = events.iter().find(|event| event.recurrence_id.is_none()) else {
        // Only changed occurrences (an invitation to one): each is an event of its own.
        let found = events
            .iter()
            .map(|event| single(event, zone, true))
            .filter(|occurrence| overlaps(occurrence, from, to))
            .collect();
        return (found, None);
    };
    let changed: Vec<&EventData> = events
        .iter()
        .filter(|event| event.recurrence_id.is_some() && event.uid == main.uid)
        .collect();
    let mut found = Vec::new();
    let mut not_expanded = None;
    match &main.rrule {
        None => found.push(single(main, zone, false)),
        Some(rule) => match expand(main, rule, from, to, zone) {
            Ok(starts) => {
                let length = main.length(zone);
                for start in starts {
                    let replaced = changed.iter().any(|event| {
                        event
                            .recurrence_id
                            .as_ref()
                            .is_some_and(|id| id.instant(zone) == start)
                    });
                    let excluded = main
                        .exdates
                        .iter()
                        .any(|exdate| same_occurrence(exdate, start, &main.start, zone));
                    if !replaced && !excluded {
                        found.push(at(main, start, start + length, zone, true));
                    }
                }
            }
            Err(reason) => {
                not_expanded = Some(NotExpanded {
                    summary: main.summary.clone(),
                    rule: rule.clone(),
                    reason,
                });
                found.push(single(main, zone, true));
            }
        },
    }
    found.extend(changed.iter().map(|event| single(event, zone, true)));
    found.retain(|occurrence| overlaps(occurrence, from, to));
    found.sort_by_key(|occurrence| occurrence.start);
    (found, not_expanded)
}

fn overlaps(occurrence: &Occurrence, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
    occurrence.start < to && (occurrence.end > from || occurrence.start >= from)
}

fn single(event: &EventData, zone: ZoneName, recurring: bool) -> Occurrence {
    let start = event.start.instant(zone);
    at(event, start, start + event.length(zone), zone, recurring)
}

fn at(
    event: &EventData,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    zone: ZoneName,
    recurring: bool,
) -> Occurrence {
    let all_day = event.start.is_date().then(|| {
        let first = start.with_timezone(&zone.tz()).date_naive();
        let days = (end - start).num_days().max(1);
        (first, first + TimeDelta::days(days - 1))
    });
    Occurrence {
        start,
        end,
        all_day,
        event: event.clone(),
        recurring,
    }
}

/// Whether an EXDATE names the occurrence starting at `start` (a date EXDATE names the
/// occurrence on that date).
fn same_occurrence(
    exdate: &EventTime,
    start: DateTime<Utc>,
    event_start: &EventTime,
    zone: ZoneName,
) -> bool {
    match exdate {
        EventTime::Date(date) => {
            let own_zone = match event_start {
                EventTime::Zoned(_, own) => *own,
                _ => zone,
            };
            start.with_timezone(&own_zone.tz()).date_naive() == *date
        }
        other => other.instant(zone) == start,
    }
}

/// The starts of a recurring event's occurrences that may overlap `[from, to)`, the first
/// (its DTSTART) always included as RFC 5545 says.
fn expand(
    event: &EventData,
    rule: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: ZoneName,
) -> Result<Vec<DateTime<Utc>>, String> {
    let recurrence = Recurrence::parse(rule).map_err(|error| error.to_string())?;
    let (own_zone, wall) = match &event.start {
        EventTime::Zoned(wall, own) => (*own, *wall),
        EventTime::Floating(wall) => (zone, *wall),
        EventTime::Date(date) => (zone, date.and_time(Default::default())),
        EventTime::Utc(instant) => (ZoneName::from(chrono_tz::UTC), instant.naive_utc()),
    };
    let recurring =
        RecurringTime::new(own_zone, wall, recurrence).map_err(|error| error.to_string())?;
    let first = event.start.instant(zone);
    let mut starts = vec![first];
    // An occurrence that began before `from` may still be going on.
    let mut after = (from - event.length(zone) - TimeDelta::seconds(1)).max(first);
    while let Some(next) = recurring.next_after(after) {
        if next >= to || starts.len() >= MAX_OCCURRENCES_PER_EVENT {
            break;
        }
        if next != first {
            starts.push(next);
        }
        after = next;
    }
    Ok(starts)
}

#[cfg(test)]
#[path = "expand_tests.rs"]
mod tests;
