//! A calendar tool's arguments read into what an event will be: title, local date and time
//! in the member's zone (or all day), end time or duration, recurrence, location. A change
//! takes what it does not name from the event as it is. The model never computes a date:
//! it passes the member's words (`tomorrow`, `thursday`, `2026-12-03`, `17:00`, `PT90M`).

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Utc};
use serde_json::Value;

use super::events::{EventData, EventFields, EventTime, wall_clock};
use crate::local_time::phrasing::today_in;
use crate::local_time::{IsoDuration, Recurrence, ZoneName, parse_local_day, parse_local_time};

pub const MAX_TITLE_CHARS: usize = 200;
/// The longest description an event is given.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// The longest event: a year.
const MAX_LENGTH: TimeDelta = TimeDelta::days(366);
const DEFAULT_LENGTH: TimeDelta = TimeDelta::hours(1);

/// A text argument: absent, or a string (anything else is a mistake named to the model).
pub fn text<'a>(arguments: &'a Value, name: &str) -> Result<Option<&'a str>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim())),
        Some(other) => Err(format!("`{name}` must be a string, got {other}")),
    }
}

fn flag(arguments: &Value, name: &str) -> Result<Option<bool>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(value)) => Ok(Some(*value)),
        Some(other) => Err(format!("`{name}` must be true or false, got {other}")),
    }
}

fn date(arguments: &Value, name: &str, today: NaiveDate) -> Result<Option<NaiveDate>, String> {
    text(arguments, name)?
        .filter(|text| !text.is_empty())
        .map(|text| {
            parse_local_day(text)
                .map(|day| day.date_from(today))
                .map_err(|error| format!("`{name}`: {error}"))
        })
        .transpose()
}

fn time(arguments: &Value, name: &str) -> Result<Option<NaiveTime>, String> {
    text(arguments, name)?
        .filter(|text| !text.is_empty())
        .map(|text| parse_local_time(text).map_err(|error| format!("`{name}`: {error}")))
        .transpose()
}

/// The event a write makes: from `arguments` alone (`base` is `None`, a new event) or the
/// event `base` with what `arguments` change.
pub fn event_fields(
    arguments: &Value,
    base: Option<&EventData>,
    zone: ZoneName,
    now: DateTime<Utc>,
) -> Result<EventFields, String> {
    let today = today_in(zone, now);
    let summary = match (text(arguments, "title")?, base) {
        (Some(title), _) if !title.is_empty() => title.to_owned(),
        (_, Some(base)) => base.summary.clone(),
        _ => return Err("`title` must say what the event is".into()),
    };
    if summary.chars().count() > MAX_TITLE_CHARS {
        return Err(format!(
            "`title` is longer than {MAX_TITLE_CHARS} characters; say it shorter"
        ));
    }
    let location = match text(arguments, "location")? {
        Some("") => None,
        Some(location) if location.chars().count() > MAX_TITLE_CHARS => {
            return Err(format!(
                "`location` is longer than {MAX_TITLE_CHARS} characters"
            ));
        }
        Some(location) => Some(location.to_owned()),
        None => base.and_then(|base| base.location.clone()),
    };
    let description = match text(arguments, "description")? {
        Some("") => None,
        Some(description) if description.chars().count() > MAX_DESCRIPTION_CHARS => {
            return Err(format!(
                "`description` is longer than {MAX_DESCRIPTION_CHARS} characters; say it shorter"
            ));
        }
        Some(description) => Some(description.to_owned()),
        None => base.and_then(|base| base.description.clone()),
    };
    let rrule = match text(arguments, "recurrence")? {
        Some(written) if written.is_empty() || written.eq_ignore_ascii_case("none") => None,
        Some(written) => Some(
            Recurrence::parse(written)
                .map_err(|error| format!("`recurrence`: {error}"))?
                .to_rrule(),
        ),
        None => base.and_then(|base| base.rrule.clone()),
    };

    let new_date = date(arguments, "date", today)?;
    let new_time = time(arguments, "time")?;
    let end_time = time(arguments, "end_time")?;
    let end_date = date(arguments, "end_date", today)?;
    let duration = text(arguments, "duration")?
        .filter(|text| !text.is_empty())
        .map(|text| {
            IsoDuration::parse(text)
                .map(|duration| duration.approximate_length())
                .map_err(|error| format!("`duration`: {error}"))
        })
        .transpose()?;
    let all_day = flag(arguments, "all_day")?;
    let changes_timing = new_date.is_some()
        || new_time.is_some()
        || end_time.is_some()
        || end_date.is_some()
        || duration.is_some()
        || all_day.is_some();

    let (start, end) = match base {
        Some(base) if !changes_timing => (base.start.clone(), base.end.clone()),
        _ => {
            // What the change leaves alone comes from the event as the member sees it.
            let (base_wall, base_length) = match base {
                Some(base) => (
                    Some(local_start(&base.start, zone)),
                    Some(base.length(zone)),
                ),
                None => (None, None),
            };
            let day = new_date
                .or(base_wall.map(|wall| wall.date()))
                .ok_or("`date` must say which day: YYYY-MM-DD, today, tomorrow or a weekday")?;
            let is_all_day = match (all_day, new_time) {
                (Some(true), Some(_)) => {
                    return Err("an all-day event has no `time`; leave one of them out".into());
                }
                (Some(value), _) => value,
                (None, Some(_)) => false,
                (None, None) => base.map(|base| base.start.is_date()).unwrap_or(true),
            };
            if is_all_day {
                let last = end_date.unwrap_or(day);
                if last < day {
                    return Err(format!(
                        "`end_date` {last} is before the event's date {day}"
                    ));
                }
                if (last - day) > MAX_LENGTH {
                    return Err("an event may last at most a year".into());
                }
                (
                    EventTime::Date(day),
                    EventTime::Date(last + TimeDelta::days(1)),
                )
            } else {
                let at = new_time
                    .or(base_wall
                        .filter(|_| base.is_some_and(|b| !b.start.is_date()))
                        .map(|wall| wall.time()))
                    .ok_or("`time` must say when it starts (HH:MM), or set all_day")?;
                let start_wall = day.and_time(at);
                let length = match (end_time, duration, end_date) {
                    (Some(_), Some(_), _) => {
                        return Err("give `end_time` or `duration`, not both".into());
                    }
                    (Some(end), None, end_day) => {
                        let mut end_wall = end_day.unwrap_or(day).and_time(end);
                        if end_wall <= start_wall && end_day.is_none() {
                            // "22:00 to 01:00" ends the next day.
                            end_wall += TimeDelta::days(1);
                        }
                        if end_wall <= start_wall {
                            return Err(format!(
                                "the end {} is not after the start {}",
                                end_wall.format("%Y-%m-%d %H:%M"),
                                start_wall.format("%Y-%m-%d %H:%M")
                            ));
                        }
                        end_wall - start_wall
                    }
                    (None, Some(length), _) => length,
                    (None, None, _) => base_length
                        .filter(|_| base.is_some_and(|b| !b.start.is_date()))
                        .unwrap_or(DEFAULT_LENGTH),
                };
                if length > MAX_LENGTH {
                    return Err("an event may last at most a year".into());
                }
                (
                    EventTime::Zoned(start_wall, zone),
                    EventTime::Zoned(start_wall + length, zone),
                )
            }
        }
    };
    Ok(EventFields {
        summary,
        location,
        description,
        start,
        end,
        rrule,
    })
}

/// The wall-clock start of an event as the member reads it: in its own zone when it has
/// one (so a change of title keeps 17:00 at 17:00), else in the member's.
fn local_start(start: &EventTime, zone: ZoneName) -> NaiveDateTime {
    match start {
        EventTime::Date(date) => date.and_time(NaiveTime::MIN),
        EventTime::Zoned(wall, _) | EventTime::Floating(wall) => *wall,
        EventTime::Utc(instant) => wall_clock(*instant, zone),
    }
}

/// The fields of an event as it is, for saying it back or comparing.
pub fn as_event(uid: &str, fields: &EventFields) -> EventData {
    EventData {
        uid: uid.to_owned(),
        summary: fields.summary.clone(),
        location: fields.location.clone(),
        description: fields.description.clone(),
        start: fields.start.clone(),
        end: fields.end.clone(),
        rrule: fields.rrule.clone(),
        exdates: Vec::new(),
        recurrence_id: None,
    }
}

#[cfg(test)]
#[path = "timing_tests.rs"]
mod tests;
