//! Events said back in the member's words and zone: "Swimming, Thu 3 Dec, 17:00-18:00
//! (Europe/Berlin), every Thursday at 17:00 (Europe/Berlin), at City pool", so a wrong
//! guess of the model shows at once.

use chrono::{DateTime, TimeDelta, Utc};

use super::events::{EventData, EventTime, wall_clock};
use super::expand::Occurrence;
use crate::local_time::phrasing::{say_all_day, say_range, say_recurrence, today_in};
use crate::local_time::{Recurrence, RecurringTime, ZoneName};

/// The longest title or place said: a calendar's text is someone else's, and a search's
/// answer goes to the model whole.
const MAX_SAID_CHARS: usize = 200;

/// `text`, cut at [`MAX_SAID_CHARS`] with `…`.
pub fn shortened(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_SAID_CHARS) {
        None => std::borrow::Cow::Borrowed(text),
        Some((at, _)) => std::borrow::Cow::Owned(format!("{}…", &text[..at])),
    }
}

/// When an event (its first occurrence) is, and how it repeats.
pub fn say_event(event: &EventData, zone: ZoneName, now: DateTime<Utc>) -> String {
    let start = event.start.instant(zone);
    let end = start + event.length(zone);
    let mut words = format!(
        "{}, {}",
        shortened(&event.summary),
        say_when(start, end, event, zone, now)
    );
    if let Some(rule) = &event.rrule {
        words.push_str(", ");
        words.push_str(&say_repeats(event, rule, zone));
    }
    if let Some(location) = &event.location {
        words.push_str(&format!(", at {}", shortened(location)));
    }
    words
}

/// One occurrence found by a search.
pub fn say_occurrence(occurrence: &Occurrence, zone: ZoneName, now: DateTime<Utc>) -> String {
    let event = &occurrence.event;
    let when = match occurrence.all_day {
        Some((first, last)) => say_all_day(first, last, today_in(zone, now)),
        None => say_range(occurrence.start, occurrence.end, zone, now),
    };
    let mut words = format!("{when}: {}", shortened(&event.summary));
    if let Some(location) = &event.location {
        words.push_str(&format!(", at {}", shortened(location)));
    }
    if occurrence.recurring {
        words.push_str(" (repeats)");
    }
    words
}

fn say_when(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    event: &EventData,
    zone: ZoneName,
    now: DateTime<Utc>,
) -> String {
    match (&event.start, &event.end) {
        (EventTime::Date(first), EventTime::Date(after)) => {
            let last = (*after - TimeDelta::days(1)).max(*first);
            say_all_day(*first, last, today_in(zone, now))
        }
        (EventTime::Date(first), _) => say_all_day(*first, *first, today_in(zone, now)),
        _ => say_range(start, end, zone, now),
    }
}

/// "every Thursday at 17:00 (Europe/Berlin)", or the rule as written when hearth does not
/// read it.
fn say_repeats(event: &EventData, rule: &str, zone: ZoneName) -> String {
    let (own_zone, wall) = match &event.start {
        EventTime::Zoned(wall, own) => (*own, *wall),
        EventTime::Floating(wall) => (zone, *wall),
        EventTime::Date(date) => (zone, date.and_time(Default::default())),
        EventTime::Utc(instant) => (zone, wall_clock(*instant, zone)),
    };
    let recurring = Recurrence::parse(rule)
        .ok()
        .and_then(|recurrence| RecurringTime::new(own_zone, wall, recurrence).ok());
    match recurring {
        Some(recurring) if event.start.is_date() => {
            let words = say_recurrence(&recurring);
            // An all-day event has no time of day: drop "at 00:00 (zone)".
            words.split(" at ").next().unwrap_or(&words).to_owned()
        }
        Some(recurring) => say_recurrence(&recurring),
        None => format!("repeating ({rule})"),
    }
}
