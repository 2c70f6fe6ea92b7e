//! Calendar events read from and written to iCalendar (RFC 5545) text with the `icalendar`
//! crate: the few properties hearth shows and changes, each time resolved to an instant (or
//! an all-day date), and an event's new text written over its old one so that what another
//! client stored (alarms, attendees, its own properties) stays. Every text is checked
//! against `bounds.rs` before the parser sees it.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, TimeZone, Utc};
use icalendar::{
    Calendar, CalendarComponent, CalendarDateTime, Component, DatePerhapsTime, Event, EventLike,
    Property,
};

use super::bounds::{Refused, checked_for_parsing};
use crate::local_time::{IsoDuration, ZoneName, resolve_local};

/// Why a calendar object's text was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Refused(#[from] Refused),
    #[error("not an iCalendar object ({first_line})")]
    NotICalendar { first_line: String },
}

/// `text` parsed, once `bounds.rs` lets it through.
fn parsed_calendar(text: &str) -> Result<Calendar, ReadError> {
    let checked = checked_for_parsing(text)?;
    let parsed = icalendar::parser::read_calendar(&checked).map_err(|error| {
        let first_line: String = error
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        ReadError::NotICalendar { first_line }
    })?;
    Ok(Calendar::from(parsed))
}

/// When an event starts or ends, as the calendar wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventTime {
    /// An all-day event's date (the same in every zone).
    Date(NaiveDate),
    /// A wall-clock time in a zone: `DTSTART;TZID=Europe/Berlin:...`.
    Zoned(NaiveDateTime, ZoneName),
    /// An instant: `...Z`.
    Utc(DateTime<Utc>),
    /// A floating time, read in the member's zone.
    Floating(NaiveDateTime),
}

impl EventTime {
    /// The instant of a timed value; an all-day date is its midnight in `zone`.
    pub fn instant(&self, zone: ZoneName) -> DateTime<Utc> {
        match self {
            EventTime::Date(date) => resolve_local(zone, date.and_time(Default::default())).instant,
            EventTime::Zoned(wall, own_zone) => resolve_local(*own_zone, *wall).instant,
            EventTime::Utc(instant) => *instant,
            EventTime::Floating(wall) => resolve_local(zone, *wall).instant,
        }
    }

    pub fn is_date(&self) -> bool {
        matches!(self, EventTime::Date(_))
    }

    fn from_ical(value: DatePerhapsTime) -> Self {
        match value {
            DatePerhapsTime::Date(date) => EventTime::Date(date),
            DatePerhapsTime::DateTime(CalendarDateTime::Utc(instant)) => EventTime::Utc(instant),
            DatePerhapsTime::DateTime(CalendarDateTime::Floating(wall)) => {
                EventTime::Floating(wall)
            }
            DatePerhapsTime::DateTime(CalendarDateTime::WithTimezone { date_time, tzid }) => {
                match zone_of_tzid(&tzid) {
                    Some(zone) => EventTime::Zoned(date_time, zone),
                    // A zone only its VTIMEZONE defines: read on the member's wall clock.
                    None => EventTime::Floating(date_time),
                }
            }
        }
    }

    fn to_ical(&self) -> DatePerhapsTime {
        match self {
            EventTime::Date(date) => DatePerhapsTime::Date(*date),
            EventTime::Zoned(wall, zone) => {
                DatePerhapsTime::DateTime(CalendarDateTime::WithTimezone {
                    date_time: *wall,
                    tzid: zone.name().to_owned(),
                })
            }
            EventTime::Utc(instant) => DatePerhapsTime::DateTime(CalendarDateTime::Utc(*instant)),
            EventTime::Floating(wall) => {
                DatePerhapsTime::DateTime(CalendarDateTime::Floating(*wall))
            }
        }
    }
}

/// An IANA zone a TZID names: `Europe/Berlin`, or a client's prefixed form such as
/// `/mozilla.org/20050126_1/Europe/Berlin`.
fn zone_of_tzid(tzid: &str) -> Option<ZoneName> {
    let tzid = tzid.trim().trim_matches('"');
    if let Ok(zone) = ZoneName::parse(tzid) {
        return Some(zone);
    }
    let parts: Vec<&str> = tzid.split('/').filter(|part| !part.is_empty()).collect();
    (1..parts.len()).find_map(|from| ZoneName::parse(&parts[from..].join("/")).ok())
}

/// One VEVENT as hearth reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventData {
    pub uid: String,
    pub summary: String,
    pub location: Option<String>,
    pub description: Option<String>,
    pub start: EventTime,
    /// Exclusive, as in iCalendar: an all-day event of one day ends the next day.
    pub end: EventTime,
    pub rrule: Option<String>,
    /// Occurrences taken out of a recurring event.
    pub exdates: Vec<EventTime>,
    /// Set on a changed occurrence of a recurring event: the start it replaces.
    pub recurrence_id: Option<EventTime>,
}

impl EventData {
    /// How long it lasts, on the clock (at least a minute for a timed event).
    pub fn length(&self, zone: ZoneName) -> TimeDelta {
        let length = self.end.instant(zone) - self.start.instant(zone);
        if self.start.is_date() {
            length.max(TimeDelta::days(1))
        } else {
            length.max(TimeDelta::zero())
        }
    }
}

/// The events of one calendar object (a `.ics` resource, or a whole subscribed calendar):
/// main events before changed occurrences. Components other than VEVENT are ignored.
pub fn read_events(text: &str) -> Result<Vec<EventData>, ReadError> {
    let calendar = parsed_calendar(text)?;
    let mut events: Vec<EventData> = calendar
        .components
        .iter()
        .filter_map(|component| match component {
            CalendarComponent::Event(event) => read_event(event),
            _ => None,
        })
        .collect();
    events.sort_by_key(|event| event.recurrence_id.is_some());
    Ok(events)
}

fn read_event(event: &Event) -> Option<EventData> {
    let start = EventTime::from_ical(event.get_start()?);
    let end = match event.get_end() {
        Some(end) => EventTime::from_ical(end),
        None => match event.property_value("DURATION").and_then(duration_of) {
            Some(length) => shifted(&start, length),
            // RFC 5545: a date lasts the day, a date and time an instant.
            None if start.is_date() => shifted(&start, TimeDelta::days(1)),
            None => start.clone(),
        },
    };
    let exdates = event
        .multi_properties()
        .get("EXDATE")
        .into_iter()
        .flatten()
        .flat_map(exdate_values)
        .collect();
    Some(EventData {
        uid: event.get_uid().unwrap_or_default().to_owned(),
        summary: event.get_summary().unwrap_or("(no title)").to_owned(),
        location: event
            .get_location()
            .map(str::to_owned)
            .filter(|l| !l.is_empty()),
        description: event
            .get_description()
            .map(str::to_owned)
            .filter(|d| !d.is_empty()),
        start,
        end,
        // Some writers repeat the property's name in its value (`RRULE:RRULE:FREQ=...`);
        // the rule is what follows it, as hearth writes it back.
        rrule: event
            .property_value("RRULE")
            .map(|rule| rule.trim_start_matches("RRULE:").to_owned()),
        exdates,
        recurrence_id: event.get_recurrence_id().map(EventTime::from_ical),
    })
}

/// An EXDATE property's values: one or several, comma-separated, with its TZID.
fn exdate_values(property: &Property) -> Vec<EventTime> {
    property
        .value()
        .split(',')
        .filter_map(|value| {
            let mut single = Property::new("EXDATE", value.trim());
            for (key, parameter) in property.params() {
                single.add_parameter(key, parameter.value());
            }
            DatePerhapsTime::from_property(&single).map(EventTime::from_ical)
        })
        .collect()
}

/// An iCalendar DURATION (`PT1H30M`, `P1D`, `P1W`), as exact time.
fn duration_of(text: &str) -> Option<TimeDelta> {
    let text = text.trim().trim_start_matches('+');
    let duration = IsoDuration::parse(text).ok()?;
    Some(
        duration
            .exact_length()
            .unwrap_or_else(|| duration.approximate_length()),
    )
}

fn shifted(time: &EventTime, by: TimeDelta) -> EventTime {
    match time {
        EventTime::Date(date) => EventTime::Date(*date + TimeDelta::days(by.num_days().max(1))),
        EventTime::Zoned(wall, zone) => EventTime::Zoned(*wall + by, *zone),
        EventTime::Utc(instant) => EventTime::Utc(*instant + by),
        EventTime::Floating(wall) => EventTime::Floating(*wall + by),
    }
}

/// What a write sets on an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFields {
    pub summary: String,
    pub location: Option<String>,
    pub description: Option<String>,
    pub start: EventTime,
    pub end: EventTime,
    pub rrule: Option<String>,
}

const PRODUCT: &str = "-//hearth//family assistant//EN";

/// A new calendar object holding one event.
pub fn new_event_text(uid: &str, fields: &EventFields, now: DateTime<Utc>) -> String {
    let mut event = Event::new();
    event.uid(uid);
    event.add_property("SEQUENCE", "0");
    event.timestamp(now);
    apply(&mut event, fields);
    let mut calendar = Calendar::empty();
    calendar.append_property(Property::new("VERSION", "2.0"));
    calendar.append_property(Property::new("PRODID", PRODUCT));
    calendar.append_property(Property::new("CALSCALE", "GREGORIAN"));
    calendar.push(event.done());
    calendar.to_string()
}

/// `text` with its main event changed to `fields`, its sequence counted up, and everything
/// else kept as it was.
pub fn changed_event_text(
    text: &str,
    fields: &EventFields,
    now: DateTime<Utc>,
) -> Result<String, String> {
    let mut calendar = parsed_calendar(text).map_err(|error| error.to_string())?;
    let main = calendar
        .components
        .iter_mut()
        .find_map(|component| match component {
            CalendarComponent::Event(event) if event.get_recurrence_id().is_none() => Some(event),
            _ => None,
        });
    let Some(event) = main else {
        return Err("it holds no event".to_owned());
    };
    let sequence = event.get_sequence().unwrap_or(0);
    event.sequence(sequence.saturating_add(1));
    event.timestamp(now);
    event.remove_property("DURATION");
    apply(event, fields);
    let written = calendar.to_string();
    // `icalendar` does not always write what it read in a form it reads again (a
    // parameter value holding a quote, which RFC 5545 forbids, comes back quoted around
    // its quotes): such an event is left as the other client stored it, never replaced
    // with text no client can read.
    parsed_calendar(&written).map_err(|error| {
        format!("its text as hearth would write it back cannot be read again ({error})")
    })?;
    Ok(written)
}

fn apply(event: &mut Event, fields: &EventFields) {
    event.summary(&fields.summary);
    match &fields.location {
        Some(location) => {
            event.location(location);
        }
        None => {
            event.remove_property("LOCATION");
        }
    }
    match &fields.description {
        Some(description) => {
            event.description(description);
        }
        None => {
            event.remove_property("DESCRIPTION");
        }
    }
    event.starts(fields.start.to_ical());
    event.ends(fields.end.to_ical());
    match &fields.rrule {
        Some(rule) => {
            event.add_property("RRULE", rule.trim_start_matches("RRULE:"));
        }
        None => {
            event.remove_property("RRULE");
        }
    }
}

/// A zone's wall clock at an instant, for writing a time the member gave in their zone.
pub fn wall_clock(instant: DateTime<Utc>, zone: ZoneName) -> NaiveDateTime {
    zone.tz()
        .from_utc_datetime(&instant.naive_utc())
        .naive_local()
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
