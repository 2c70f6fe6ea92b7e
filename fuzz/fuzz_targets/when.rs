//! A member's time phrases as a tool passes them (`hearth::local_time`): ISO 8601 delays,
//! days (`2025-11-26`, `tomorrow`, `thursday`), times of day (`08:00`) and zone names.
//!
//! Input: `key: value` lines; `zone` and `now` set the member's zone and the clock, each
//! `duration`, `date` (with the next `time`) and `time` is tried.
//!
//! Properties: what reads writes back to itself (`IsoDuration`, `LocalWhen`, `ZoneName`);
//! a delay or a local time resolves to an instant after now and at most ten years ahead,
//! or says why not; an exact delay is exactly that long; a local time lands on the asked
//! wall-clock time, or later by the gap of a skipped hour, on the day it names; what is
//! said back names the zone; a refusal names the value that was wrong.
#![no_main]

use chrono::{DateTime, Datelike, Days, TimeDelta, Utc};
use hearth::local_time::phrasing::{say_instant, say_shift, today_in};
use hearth::local_time::{
    IsoDuration, LocalDay, LocalTimeError, LocalWhen, WallClockShift, ZoneName, latest_allowed,
};
use hearth_fuzz_checks::fields::Fields;
use libfuzzer_sys::fuzz_target;

const DEFAULT_NOW: &str = "2025-03-29T12:00:00Z";

/// The clock: hearth only runs in this century and the next.
fn now(fields: &Fields) -> DateTime<Utc> {
    let now = fields.instant("now", DEFAULT_NOW);
    if (2000..2100).contains(&now.year()) {
        now
    } else {
        DEFAULT_NOW.parse().expect("the default clock reads")
    }
}

fn zone(fields: &Fields) -> ZoneName {
    let Some(text) = fields.get("zone") else {
        return ZoneName::parse("Europe/Berlin").unwrap();
    };
    match ZoneName::parse(text) {
        Ok(zone) => {
            assert_eq!(
                ZoneName::parse(zone.name()),
                Ok(zone),
                "a zone's name reads back"
            );
            assert_eq!(zone.to_string(), zone.name());
            zone
        }
        Err(error) => {
            assert!(
                matches!(error, LocalTimeError::UnknownZone { .. }),
                "{error:?}"
            );
            ZoneName::parse("Europe/Berlin").unwrap()
        }
    }
}

/// A refusal says what was wrong in the member's words, naming the value (its start, when
/// long).
fn check_refusal(error: &LocalTimeError, value: &str) {
    let said = error.to_string();
    let start: String = value.chars().take(20).collect();
    assert!(
        said.contains(&start) || said.contains(start.trim()),
        "the refusal {said:?} does not name {value:?}"
    );
}

fn check_duration(text: &str, zone: ZoneName, now: DateTime<Utc>) {
    let duration = match IsoDuration::parse(text) {
        Ok(duration) => duration,
        Err(error) => return check_refusal(&error, text),
    };
    assert_eq!(
        IsoDuration::parse(&duration.to_string()).as_ref(),
        Ok(&duration)
    );
    assert!(duration.approximate_length() > TimeDelta::zero());
    if let Some(exact) = duration.exact_length() {
        assert!(exact > TimeDelta::zero(), "{text:?} is {exact}");
    }
    match duration.after(zone, now) {
        Ok(end) => {
            assert!(end > now, "{text:?} after {now} is {end}");
            assert!(end <= latest_allowed(zone, now), "{text:?} reaches {end}");
            if let Some(exact) = duration.exact_length() {
                assert_eq!(end - now, exact, "{text:?} is exact");
            }
            assert!(say_instant(end, zone, now).contains(zone.name()));
        }
        Err(error) => {
            assert!(
                matches!(error, LocalTimeError::TooFarAhead { .. }),
                "{error:?}"
            );
            check_refusal(&error, &duration.to_string());
        }
    }
}

fn check_when(day: Option<&str>, time: &str, zone: ZoneName, now: DateTime<Utc>) {
    let when = match LocalWhen::parse(day, time) {
        Ok(when) => when,
        Err(error) => {
            let wrong = match &error {
                LocalTimeError::BadDate { .. } => day.unwrap_or_default(),
                _ => time,
            };
            return check_refusal(&error, wrong);
        }
    };
    let written = when.to_string();
    let (day_written, time_written) = match written.rsplit_once(' ') {
        Some((day, time)) => (Some(day), time),
        None => (None, written.as_str()),
    };
    assert_eq!(
        LocalWhen::parse(day_written, time_written),
        Ok(when),
        "{written:?} reads back"
    );
    let today = today_in(zone, now);
    let resolved = match when.resolve(zone, now) {
        Ok(resolved) => resolved,
        Err(error) => {
            assert!(
                matches!(
                    error,
                    LocalTimeError::InPast { .. } | LocalTimeError::TooFarAhead { .. }
                ),
                "{error:?}"
            );
            return check_refusal(&error, &written);
        }
    };
    assert!(
        resolved.instant > now,
        "{written:?} resolved to {} before {now}",
        resolved.instant
    );
    assert!(resolved.instant <= latest_allowed(zone, now));
    assert_eq!(resolved.requested.time(), when.time);
    let date = resolved.requested.date();
    match when.day {
        Some(LocalDay::Date(asked)) => assert_eq!(date, asked),
        Some(LocalDay::Today) => assert_eq!(date, today),
        Some(LocalDay::Tomorrow) => assert_eq!(Some(date), today.checked_add_days(Days::new(1))),
        Some(LocalDay::Next(weekday)) => {
            assert_eq!(date.weekday(), weekday);
            assert!(
                date >= today && date <= today + Days::new(7),
                "{written:?} is {date}"
            );
        }
        None => assert!(date == today || Some(date) == today.checked_add_days(Days::new(1))),
    }
    let local = resolved.instant.with_timezone(&zone.tz()).naive_local();
    match resolved.shift {
        WallClockShift::Exact | WallClockShift::RepeatedFirst => {
            assert_eq!(local, resolved.requested, "{written:?} in {zone}");
        }
        WallClockShift::SkippedForward { gap } => {
            assert!(gap > TimeDelta::zero());
            assert_eq!(local, resolved.requested + gap, "{written:?} in {zone}");
            assert!(say_shift(&resolved, zone).is_some());
        }
    }
    assert!(say_instant(resolved.instant, zone, now).contains(zone.name()));
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let fields = Fields::read(text, &["zone", "now", "duration", "date", "time"]);
    let zone = zone(&fields);
    let now = now(&fields);
    for duration in fields.all("duration") {
        check_duration(duration, zone, now);
    }
    let dates = fields.all("date");
    for (index, time) in fields.all("time").into_iter().enumerate() {
        check_when(dates.get(index).copied(), time, zone, now);
    }
});
