//! A calendar object's occurrences within a range: a single event once, a recurring one
//! expanded on its own zone's wall clock (so a weekly 17:00 stays 17:00 across a DST
//! change) with its EXDATEs left out and its changed occurrences put in their place.
//!
//! Each recurring event is expanded once per search, its rule walked a single time up to
//! the range's end, within an [`ExpansionBudget`]: at most so many occurrences walked per
//! event and a deadline for the whole search. An event cut short by either is listed once
//! with a note ([`NotExpanded`]), never a search that does not end.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};

use super::events::{EventData, EventTime};
use super::phrasing::shortened;
use crate::local_time::{RecurrenceRule, WalkLimits, ZoneName};

/// At most this many occurrences of one event are listed for one range.
pub const MAX_OCCURRENCES_PER_EVENT: usize = 400;
/// At most this many occurrences of one event's rule are walked for one search: a rule
/// with COUNT is walked from its start, and a weekly event of forty years is 2,100.
pub const MAX_WALKED_PER_EVENT: usize = 20_000;
/// How long expanding one search's events may take in all.
pub const SEARCH_EXPANSION_TIME: Duration = Duration::from_secs(2);
/// The longest rule text a note quotes.
const SHOWN_RULE_CHARS: usize = 120;

/// What expanding one search's events may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpansionBudget {
    /// The most occurrences of one event's rule walked.
    pub max_walked_per_event: usize,
    /// When every event not yet expanded is listed once instead.
    pub deadline: Instant,
}

impl ExpansionBudget {
    /// The budget of one search starting now: [`MAX_WALKED_PER_EVENT`] and
    /// [`SEARCH_EXPANSION_TIME`].
    pub fn for_one_search() -> Self {
        ExpansionBudget {
            max_walked_per_event: MAX_WALKED_PER_EVENT,
            deadline: Instant::now() + SEARCH_EXPANSION_TIME,
        }
    }
}

/// One occurrence of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// For an all-day event, its dates (first and last, both included).
    pub all_day: Option<(NaiveDate, NaiveDate)>,
    /// The event it belongs to (a changed occurrence's own data), shared by all of its
    /// occurrences.
    pub event: Arc<EventData>,
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
/// none, sorted by start; a recurring event expanded within `budget`.
pub fn occurrences(
    events: &[EventData],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: ZoneName,
    budget: &ExpansionBudget,
) -> (Vec<Occurrence>, Option<NotExpanded>) {
    let Some(main) = events.iter().find(|event| event.recurrence_id.is_none()) else {
        // Only changed occurrences (an invitation to one): each is an event of its own.
        let found = events
            .iter()
            .map(|event| single(&Arc::new(event.clone()), zone, true))
            .filter(|occurrence| overlaps(occurrence, from, to))
            .collect();
        return (found, None);
    };
    let changed: Vec<Arc<EventData>> = events
        .iter()
        .filter(|event| event.recurrence_id.is_some() && event.uid == main.uid)
        .map(|event| Arc::new(event.clone()))
        .collect();
    let main = Arc::new(main.clone());
    let mut found = Vec::new();
    let mut not_expanded = None;
    match &main.rrule {
        None => found.push(single(&main, zone, false)),
        Some(rule) => match expand(&main, rule, from, to, zone, budget) {
            Ok(starts) => {
                let replaced: HashSet<DateTime<Utc>> = changed
                    .iter()
                    .filter_map(|event| event.recurrence_id.as_ref())
                    .map(|id| id.instant(zone))
                    .collect();
                let excluded = Exclusions::of(&main, zone);
                let length = main.length(zone);
                for start in starts {
                    if !replaced.contains(&start) && !excluded.names(start) {
                        found.push(at(&main, start, start + length, zone, true));
                    }
                }
            }
            Err(reason) => {
                not_expanded = Some(NotExpanded {
                    summary: shortened(&main.summary).into_owned(),
                    rule: shown_rule(rule),
                    reason,
                });
                found.push(single(&main, zone, true));
            }
        },
    }
    found.extend(changed.iter().map(|event| single(event, zone, true)));
    found.retain(|occurrence| overlaps(occurrence, from, to));
    found.sort_by_key(|occurrence| occurrence.start);
    (found, not_expanded)
}

fn shown_rule(rule: &str) -> String {
    if rule.chars().count() <= SHOWN_RULE_CHARS {
        return rule.to_owned();
    }
    let mut shown: String = rule.chars().take(SHOWN_RULE_CHARS).collect();
    shown.push('…');
    shown
}

fn overlaps(occurrence: &Occurrence, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
    occurrence.start < to && (occurrence.end > from || occurrence.start >= from)
}

fn single(event: &Arc<EventData>, zone: ZoneName, recurring: bool) -> Occurrence {
    let start = event.start.instant(zone);
    at(event, start, start + event.length(zone), zone, recurring)
}

fn at(
    event: &Arc<EventData>,
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
        event: Arc::clone(event),
        recurring,
    }
}

/// A recurring event's EXDATEs, looked up once per occurrence: a date EXDATE names the
/// occurrence on that date in the event's own zone, a timed one the occurrence starting
/// then.
struct Exclusions {
    instants: HashSet<DateTime<Utc>>,
    dates: HashSet<NaiveDate>,
    own_zone: ZoneName,
}

impl Exclusions {
    fn of(event: &EventData, zone: ZoneName) -> Self {
        let own_zone = match &event.start {
            EventTime::Zoned(_, own) => *own,
            _ => zone,
        };
        let mut exclusions = Exclusions {
            instants: HashSet::new(),
            dates: HashSet::new(),
            own_zone,
        };
        for exdate in &event.exdates {
            match exdate {
                EventTime::Date(date) => exclusions.dates.insert(*date),
                other => exclusions.instants.insert(other.instant(zone)),
            };
        }
        exclusions
    }

    fn names(&self, start: DateTime<Utc>) -> bool {
        self.instants.contains(&start)
            || (!self.dates.is_empty()
                && self
                    .dates
                    .contains(&start.with_timezone(&self.own_zone.tz()).date_naive()))
    }
}

/// The starts of a recurring event's occurrences that may overlap `[from, to)`, the first
/// (its DTSTART) always included as RFC 5545 says: the rule walked once, within `budget`.
fn expand(
    event: &EventData,
    rule: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: ZoneName,
    budget: &ExpansionBudget,
) -> Result<Vec<DateTime<Utc>>, String> {
    let rule = RecurrenceRule::parse(rule).map_err(|error| error.to_string())?;
    let (own_zone, wall) = match &event.start {
        EventTime::Zoned(wall, own) => (*own, *wall),
        EventTime::Floating(wall) => (zone, *wall),
        EventTime::Date(date) => (zone, date.and_time(Default::default())),
        EventTime::Utc(instant) => (ZoneName::from(chrono_tz::UTC), instant.naive_utc()),
    };
    let first = event.start.instant(zone);
    // An occurrence that began before `from` may still be going on.
    let after = (from - event.length(zone) - TimeDelta::seconds(1)).max(first);
    let limits = WalkLimits {
        max_walked: budget.max_walked_per_event,
        deadline: budget.deadline,
    };
    // One more than listed: the first may be among them.
    let walked = rule
        .occurrences_between(
            own_zone,
            wall,
            after,
            to,
            MAX_OCCURRENCES_PER_EVENT + 1,
            limits,
        )
        .map_err(|cut| cut.to_string())?;
    let mut starts = vec![first];
    for start in walked {
        if starts.len() >= MAX_OCCURRENCES_PER_EVENT {
            break;
        }
        if start != first {
            starts.push(start);
        }
    }
    Ok(starts)
}

#[cfg(test)]
#[path = "expand_tests.rs"]
mod tests;
