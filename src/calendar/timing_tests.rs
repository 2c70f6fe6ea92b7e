use chrono::{TimeZone, Utc};
use serde_json::json;

use super::*;

fn berlin() -> ZoneName {
    ZoneName::parse("Europe/Berlin").unwrap()
}

fn now() -> DateTime<Utc> {
    // Thu 26 Nov 2026, 13:00 in Berlin.
    Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap()
}

fn wall(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
}

#[test]
fn a_new_event_is_read_from_the_members_words_in_their_zone() {
    let fields = event_fields(
        &json!({"title": "Swimming", "date": "thursday", "time": "17:00", "recurrence": "weekly on thu"}),
        None,
        berlin(),
        now(),
    )
    .unwrap();
    assert_eq!(
        fields.start,
        EventTime::Zoned(wall("2026-11-26 17:00"), berlin())
    );
    assert_eq!(
        fields.end,
        EventTime::Zoned(wall("2026-11-26 18:00"), berlin())
    );
    assert_eq!(fields.rrule.as_deref(), Some("FREQ=WEEKLY;BYDAY=TH"));

    let late = event_fields(
        &json!({"title": "Party", "date": "2026-12-31", "time": "22:00", "end_time": "01:00"}),
        None,
        berlin(),
        now(),
    )
    .unwrap();
    assert_eq!(
        late.end,
        EventTime::Zoned(wall("2027-01-01 01:00"), berlin())
    );

    let all_day = event_fields(
        &json!({"title": "Trip", "date": "2026-12-27", "end_date": "2026-12-29"}),
        None,
        berlin(),
        now(),
    )
    .unwrap();
    assert_eq!(
        all_day.start,
        EventTime::Date(NaiveDate::from_ymd_opt(2026, 12, 27).unwrap())
    );
    assert_eq!(
        all_day.end,
        EventTime::Date(NaiveDate::from_ymd_opt(2026, 12, 30).unwrap())
    );
}

#[test]
fn mistakes_are_named_and_nothing_is_made() {
    for (arguments, expected) in [
        (json!({"date": "tomorrow", "time": "10:00"}), "`title`"),
        (json!({"title": "x", "time": "10:00"}), "`date`"),
        (
            json!({"title": "x", "date": "31.12.", "time": "10:00"}),
            "`date`",
        ),
        (
            json!({"title": "x", "date": "tomorrow", "time": "25:00"}),
            "`time`",
        ),
        (
            json!({"title": "x", "date": "tomorrow", "time": "10:00", "duration": "PT0S"}),
            "`duration`",
        ),
        (
            json!({"title": "x", "date": "tomorrow", "time": "10:00", "end_time": "11:00", "duration": "PT1H"}),
            "not both",
        ),
        (
            json!({"title": "x", "date": "tomorrow", "time": "10:00", "all_day": true}),
            "all-day",
        ),
        (
            json!({"title": "x", "date": "tomorrow", "recurrence": "FREQ=SECONDLY"}),
            "`recurrence`",
        ),
        (json!({"title": "x", "date": 5}), "must be a string"),
        (
            json!({"title": "x".repeat(201), "date": "tomorrow"}),
            "longer than 200",
        ),
    ] {
        let error = event_fields(&arguments, None, berlin(), now()).unwrap_err();
        assert!(error.contains(expected), "{arguments}: {error}");
    }
}

#[test]
fn a_change_keeps_what_it_does_not_name() {
    let base = as_event(
        "u",
        &EventFields {
            summary: "Swimming".into(),
            location: Some("Pool".into()),
            description: Some("Bring goggles".into()),
            start: EventTime::Zoned(wall("2026-12-03 17:00"), berlin()),
            end: EventTime::Zoned(wall("2026-12-03 18:30"), berlin()),
            rrule: Some("FREQ=WEEKLY;BYDAY=TH".into()),
        },
    );
    let retitled =
        event_fields(&json!({"title": "Swim club"}), Some(&base), berlin(), now()).unwrap();
    assert_eq!(
        (retitled.start.clone(), retitled.end.clone()),
        (base.start.clone(), base.end.clone())
    );
    assert_eq!(retitled.location.as_deref(), Some("Pool"));
    assert_eq!(retitled.description.as_deref(), Some("Bring goggles"));
    assert_eq!(retitled.rrule, base.rrule);

    let later = event_fields(
        &json!({"time": "18:00", "recurrence": "none", "location": ""}),
        Some(&base),
        berlin(),
        now(),
    )
    .unwrap();
    assert_eq!(
        later.start,
        EventTime::Zoned(wall("2026-12-03 18:00"), berlin())
    );
    // The length stays 90 minutes.
    assert_eq!(
        later.end,
        EventTime::Zoned(wall("2026-12-03 19:30"), berlin())
    );
    assert_eq!(later.rrule, None);
    assert_eq!(later.location, None);
    assert_eq!(later.summary, "Swimming");

    let moved = event_fields(&json!({"date": "2026-12-10"}), Some(&base), berlin(), now()).unwrap();
    assert_eq!(
        moved.start,
        EventTime::Zoned(wall("2026-12-10 17:00"), berlin())
    );
}
