//! Tests of resolving local times across DST and of a tool's day and time words.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};

use super::{
    LocalDay, LocalTimeError, LocalWhen, WallClockShift, ZoneName, latest_allowed, parse_local_day,
    parse_local_time, resolve_local,
};

pub(super) fn zone(name: &str) -> ZoneName {
    ZoneName::parse(name).expect("a known zone")
}

pub(super) fn utc(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("an RFC 3339 instant")
        .with_timezone(&Utc)
}

pub(super) fn wall(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("a local date and time")
}

fn skipped(minutes: i64) -> WallClockShift {
    WallClockShift::SkippedForward {
        gap: TimeDelta::minutes(minutes),
    }
}

#[test]
fn local_times_resolve_with_a_gap_moving_forward_and_a_repeat_taking_the_first() {
    use WallClockShift::{Exact, RepeatedFirst};
    let cases = [
        // Europe/Berlin 2025: forward 30 Mar 02:00 CET -> 03:00 CEST, back 26 Oct 03:00 -> 02:00.
        (
            "Europe/Berlin",
            "2025-03-30 01:59",
            "2025-03-30T00:59:00Z",
            Exact,
        ),
        (
            "Europe/Berlin",
            "2025-03-30 02:00",
            "2025-03-30T01:00:00Z",
            skipped(60),
        ),
        (
            "Europe/Berlin",
            "2025-03-30 02:30",
            "2025-03-30T01:30:00Z",
            skipped(60),
        ),
        (
            "Europe/Berlin",
            "2025-03-30 03:30",
            "2025-03-30T01:30:00Z",
            Exact,
        ),
        (
            "Europe/Berlin",
            "2025-10-26 01:59",
            "2025-10-25T23:59:00Z",
            Exact,
        ),
        (
            "Europe/Berlin",
            "2025-10-26 02:30",
            "2025-10-26T00:30:00Z",
            RepeatedFirst,
        ),
        (
            "Europe/Berlin",
            "2025-10-26 03:00",
            "2025-10-26T02:00:00Z",
            Exact,
        ),
        // America/New_York 2025: forward 9 Mar 02:00 EST -> 03:00 EDT, back 2 Nov 02:00 -> 01:00.
        (
            "America/New_York",
            "2025-03-09 02:30",
            "2025-03-09T07:30:00Z",
            skipped(60),
        ),
        (
            "America/New_York",
            "2025-03-09 03:00",
            "2025-03-09T07:00:00Z",
            Exact,
        ),
        (
            "America/New_York",
            "2025-11-02 01:30",
            "2025-11-02T05:30:00Z",
            RepeatedFirst,
        ),
        (
            "America/New_York",
            "2025-11-02 02:00",
            "2025-11-02T07:00:00Z",
            Exact,
        ),
        // Australia/Lord_Howe moves by 30 minutes: forward 5 Oct 2025 02:00 -> 02:30 (+10:30
        // to +11), back 6 Apr 2025 02:00 -> 01:30.
        (
            "Australia/Lord_Howe",
            "2025-10-05 02:15",
            "2025-10-04T15:45:00Z",
            skipped(30),
        ),
        (
            "Australia/Lord_Howe",
            "2025-10-05 02:30",
            "2025-10-04T15:30:00Z",
            Exact,
        ),
        (
            "Australia/Lord_Howe",
            "2025-04-06 01:45",
            "2025-04-05T14:45:00Z",
            RepeatedFirst,
        ),
        (
            "Australia/Lord_Howe",
            "2025-04-06 02:00",
            "2025-04-05T15:30:00Z",
            Exact,
        ),
        // America/Santiago springs forward at midnight (7 Sep 2025 00:00 -04 -> 01:00 -03):
        // the day has no midnight.
        (
            "America/Santiago",
            "2025-09-07 00:00",
            "2025-09-07T04:00:00Z",
            skipped(60),
        ),
        (
            "America/Santiago",
            "2025-09-07 00:30",
            "2025-09-07T04:30:00Z",
            skipped(60),
        ),
        (
            "America/Santiago",
            "2025-09-07 01:00",
            "2025-09-07T04:00:00Z",
            Exact,
        ),
        // Samoa skipped all of 30 Dec 2011: a time that day moves forward by the whole day.
        (
            "Pacific/Apia",
            "2011-12-30 10:00",
            "2011-12-30T20:00:00Z",
            skipped(24 * 60),
        ),
        ("UTC", "2025-03-30 02:30", "2025-03-30T02:30:00Z", Exact),
    ];
    for (name, local, expected, shift) in cases {
        let resolved = resolve_local(zone(name), wall(local));
        assert_eq!(resolved.instant, utc(expected), "{local} in {name}");
        assert_eq!(resolved.shift, shift, "{local} in {name}");
        assert_eq!(resolved.requested, wall(local));
    }
}

#[test]
fn a_skipped_time_reads_on_the_wall_clock_later_by_the_gap() {
    let cases = [
        ("Europe/Berlin", "2025-03-30 02:30", "03:30"),
        ("America/New_York", "2025-03-09 02:05", "03:05"),
        ("Australia/Lord_Howe", "2025-10-05 02:15", "02:45"),
    ];
    for (name, local, shown) in cases {
        let resolved = resolve_local(zone(name), wall(local));
        let on_wall = resolved.instant.with_timezone(&zone(name).tz());
        assert_eq!(
            on_wall.format("%H:%M").to_string(),
            shown,
            "{local} in {name}"
        );
    }
}

#[test]
fn zone_names_are_iana_names_and_an_unknown_one_is_named_in_the_error() {
    assert_eq!(zone("Europe/Berlin").name(), "Europe/Berlin");
    assert_eq!(zone(" europe/berlin ").name(), "Europe/Berlin");
    assert_eq!(zone("UTC").to_string(), "UTC");
    for bad in ["Europe/Berln", "CET+1", "", "Berlin", "GMT+25"] {
        let error = ZoneName::parse(bad).expect_err(bad);
        assert_eq!(
            error,
            LocalTimeError::UnknownZone {
                value: bad.to_string()
            }
        );
        assert!(error.to_string().contains(&format!("`{bad}`")), "{error}");
        assert!(error.to_string().contains("Europe/Berlin"), "{error}");
    }
}

#[test]
fn days_and_times_are_read_strictly() {
    let date = |text: &str| LocalDay::Date(NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap());
    assert_eq!(parse_local_day("2025-11-26").unwrap(), date("2025-11-26"));
    assert_eq!(parse_local_day("2028-02-29").unwrap(), date("2028-02-29"));
    assert_eq!(parse_local_day("Today").unwrap(), LocalDay::Today);
    assert_eq!(parse_local_day("tomorrow").unwrap(), LocalDay::Tomorrow);
    assert_eq!(
        parse_local_day("thu").unwrap(),
        LocalDay::Next(chrono::Weekday::Thu)
    );
    assert_eq!(
        parse_local_day("Saturday").unwrap(),
        LocalDay::Next(chrono::Weekday::Sat)
    );
    for bad in [
        "2025-13-01",
        "2025-02-29",
        "2025-2-1",
        "26.11.2025",
        "20251126",
        "tomorow",
        "next week",
        "+2025-11-26",
        "",
    ] {
        let error = parse_local_day(bad).expect_err(bad);
        assert!(matches!(&error, LocalTimeError::BadDate { value } if value == bad));
        assert!(error.to_string().contains("YYYY-MM-DD"), "{error}");
    }
    assert_eq!(parse_local_time("08:00").unwrap().to_string(), "08:00:00");
    assert_eq!(parse_local_time("8:05").unwrap().to_string(), "08:05:00");
    assert_eq!(parse_local_time("23:59").unwrap().to_string(), "23:59:00");
    for bad in [
        "24:00", "8", "08:00:00", "8:5", "-1:00", "08h00", "8 pm", "12:60", "",
    ] {
        let error = parse_local_time(bad).expect_err(bad);
        assert!(matches!(&error, LocalTimeError::BadTime { value } if value == bad));
        assert!(error.to_string().contains("HH:MM"), "{error}");
    }
}

#[test]
fn a_local_when_resolves_relative_to_now_in_the_members_zone() {
    let berlin = zone("Europe/Berlin");
    // Wed 26 Nov 2025, 10:15 in Berlin.
    let now = utc("2025-11-26T09:15:00Z");
    let cases = [
        (Some("today"), "18:00", "2025-11-26T17:00:00Z"),
        (Some("tomorrow"), "08:00", "2025-11-27T07:00:00Z"),
        (None, "18:00", "2025-11-26T17:00:00Z"),
        (None, "08:00", "2025-11-27T07:00:00Z"),
        (None, "10:16", "2025-11-26T09:16:00Z"),
        // Today is a Wednesday: its evening is still ahead, its morning has passed.
        (Some("wednesday"), "18:00", "2025-11-26T17:00:00Z"),
        (Some("wed"), "08:00", "2025-12-03T07:00:00Z"),
        (Some("thursday"), "08:00", "2025-11-27T07:00:00Z"),
        (Some("tue"), "08:00", "2025-12-02T07:00:00Z"),
        (Some("2025-12-24"), "18:30", "2025-12-24T17:30:00Z"),
        // The limit is ten calendar years from now on the wall clock.
        (Some("2035-11-26"), "10:15", "2035-11-26T09:15:00Z"),
    ];
    for (day, time, expected) in cases {
        let when = LocalWhen::parse(day, time).unwrap();
        let resolved = when.resolve(berlin, now).unwrap();
        assert_eq!(resolved.instant, utc(expected), "{day:?} {time}");
    }
}

#[test]
fn a_time_in_the_past_is_an_error_naming_it_and_the_members_current_time() {
    let berlin = zone("Europe/Berlin");
    let now = utc("2025-11-26T09:15:00Z");
    for (day, time, named) in [
        (Some("2025-11-20"), "08:00", "2025-11-20 08:00"),
        (Some("today"), "10:00", "today 10:00"),
        // Exactly now is not ahead.
        (Some("today"), "10:15", "today 10:15"),
        (Some("2024-11-26"), "12:00", "2024-11-26 12:00"),
    ] {
        let error = LocalWhen::parse(day, time)
            .unwrap()
            .resolve(berlin, now)
            .expect_err(named);
        assert_eq!(
            error,
            LocalTimeError::InPast {
                value: named.to_string(),
                zone: "Europe/Berlin".to_string(),
                now_local: "Wed 26 Nov 2025 10:15".to_string(),
            }
        );
        let message = error.to_string();
        assert!(message.contains(&format!("`{named}`")), "{message}");
        assert!(
            message.contains("it is now Wed 26 Nov 2025 10:15 there"),
            "{message}"
        );
    }
}

#[test]
fn a_time_more_than_ten_years_ahead_is_an_error() {
    let berlin = zone("Europe/Berlin");
    let now = utc("2025-11-26T09:15:00Z");
    for (day, time) in [
        ("2035-11-26", "10:16"),
        ("2036-01-01", "00:00"),
        ("9999-12-31", "23:59"),
    ] {
        let error = LocalWhen::parse(Some(day), time)
            .unwrap()
            .resolve(berlin, now)
            .expect_err(day);
        assert!(
            matches!(&error, LocalTimeError::TooFarAhead { value, limit_years: 10 } if value == &format!("{day} {time}")),
            "{error:?}"
        );
    }
    assert_eq!(latest_allowed(berlin, now), utc("2035-11-26T09:15:00Z"));
}

#[test]
fn a_skipped_local_when_says_how_it_moved() {
    let berlin = zone("Europe/Berlin");
    let now = utc("2025-03-29T12:00:00Z");
    let resolved = LocalWhen::parse(Some("2025-03-30"), "02:30")
        .unwrap()
        .resolve(berlin, now)
        .unwrap();
    assert_eq!(resolved.instant, utc("2025-03-30T01:30:00Z"));
    assert_eq!(resolved.shift, skipped(60));
    let repeated = LocalWhen::parse(Some("2025-10-26"), "02:30")
        .unwrap()
        .resolve(berlin, now)
        .unwrap();
    assert_eq!(repeated.instant, utc("2025-10-26T00:30:00Z"));
    assert_eq!(repeated.shift, WallClockShift::RepeatedFirst);
}

#[test]
fn bad_words_of_a_local_when_are_errors_before_anything_is_resolved() {
    assert!(matches!(
        LocalWhen::parse(Some("someday"), "08:00"),
        Err(LocalTimeError::BadDate { .. })
    ));
    assert!(matches!(
        LocalWhen::parse(Some("2025-11-26"), "8am"),
        Err(LocalTimeError::BadTime { .. })
    ));
    // An empty date is no date: the next time the clock shows the time.
    assert_eq!(LocalWhen::parse(Some(" "), "08:00").unwrap().day, None);
}

#[test]
fn oversized_input_is_named_by_its_beginning_only() {
    let huge_number = "9".repeat(10_000);
    let inputs: Vec<(String, super::LocalTimeError)> = vec![
        (
            format!("P{huge_number}D"),
            super::IsoDuration::parse(&format!("P{huge_number}D")).unwrap_err(),
        ),
        (
            format!("PT{huge_number}"),
            super::IsoDuration::parse(&format!("PT{huge_number}")).unwrap_err(),
        ),
        (
            format!("weekly on {}", "x".repeat(10_000)),
            super::Recurrence::parse(&format!("weekly on {}", "x".repeat(10_000))).unwrap_err(),
        ),
        (
            format!("FREQ=DAILY;{}", "A".repeat(10_000)),
            super::Recurrence::parse(&format!("FREQ=DAILY;{}", "A".repeat(10_000))).unwrap_err(),
        ),
        (
            "z".repeat(10_000),
            ZoneName::parse(&"z".repeat(10_000)).unwrap_err(),
        ),
        (
            "1".repeat(10_000),
            parse_local_day(&"1".repeat(10_000)).unwrap_err(),
        ),
        (
            "1".repeat(10_000),
            parse_local_time(&"1".repeat(10_000)).unwrap_err(),
        ),
    ];
    for (input, error) in inputs {
        let message = error.to_string();
        assert!(
            message.len() < 500,
            "{} characters for {}...",
            message.len(),
            &input[..20]
        );
        assert!(
            message.contains(&format!("`{}...`", &input[..80])),
            "{message}"
        );
    }
}
