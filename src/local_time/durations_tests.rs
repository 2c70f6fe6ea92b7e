//! Tests of ISO 8601 durations: parsing, refusing, and nominal days against exact hours.

use chrono::TimeDelta;

use super::instants_tests::{utc, zone};
use super::{IsoDuration, LocalTimeError};

#[test]
fn durations_parse_to_their_exact_length() {
    let cases = [
        ("PT90S", TimeDelta::seconds(90)),
        ("PT45M", TimeDelta::minutes(45)),
        ("PT2H", TimeDelta::hours(2)),
        ("PT1H30M", TimeDelta::minutes(90)),
        ("PT1.5H", TimeDelta::minutes(90)),
        ("PT1,5H", TimeDelta::minutes(90)),
        ("PT1H1.5M", TimeDelta::seconds(3690)),
        ("PT0.5S", TimeDelta::milliseconds(500)),
        ("PT0.25M", TimeDelta::seconds(15)),
        ("pt2h", TimeDelta::hours(2)),
        (" PT10M ", TimeDelta::minutes(10)),
        ("PT0H5M", TimeDelta::minutes(5)),
    ];
    for (text, length) in cases {
        let duration = IsoDuration::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(duration.exact_length(), Some(length), "{text}");
    }
    assert_eq!(IsoDuration::parse("pt2h").unwrap().to_string(), "PT2H");
    for nominal in ["P1D", "P1W", "P1M", "P1Y", "P1DT2H", "P1Y2M3W4DT5H6M7S"] {
        assert_eq!(
            IsoDuration::parse(nominal).unwrap().exact_length(),
            None,
            "{nominal}"
        );
    }
}

#[test]
fn malformed_durations_are_errors_naming_the_value() {
    let cases = [
        ("", "it is empty"),
        ("P", "nothing follows P"),
        ("PT", "nothing follows T"),
        ("P1DT", "nothing follows T"),
        ("1h", "it must start with P"),
        ("90", "it must start with P"),
        ("T1H", "it must start with P"),
        (
            "P1.5M",
            "years, months, weeks and days take whole numbers; write a fraction in hours, e.g. PT36H",
        ),
        (
            "P1.5D",
            "years, months, weeks and days take whole numbers; write a fraction in hours, e.g. PT36H",
        ),
        (
            "P0.5W",
            "years, months, weeks and days take whole numbers; write a fraction in hours, e.g. PT36H",
        ),
        ("PT1.5H30M", "only the last part may have a fraction"),
        ("PT1.5H0.5M", "only the last part may have a fraction"),
        ("PT5M1H", "`H` is out of order or repeated"),
        ("P1D1Y", "`Y` is out of order or repeated"),
        ("P1Y1Y", "`Y` is out of order or repeated"),
        ("P1H", "`H` is not a designator here"),
        ("PT1D", "`D` is not a designator here"),
        ("P1DT1HT1M", "T appears twice"),
        ("PT5", "`5` has no designator after it"),
        ("PTH", "`H` needs a number before H"),
        ("P.5D", "`.5D` needs a number before D"),
        ("PT1..5H", "`1..5H` needs a number before H"),
        ("PT1.H", "`1.H` needs a number before H"),
        ("P1 D", "` ` is not a designator here"),
        ("PT0.0001S", "it is more precise than a millisecond"),
        ("PT0.0000001H", "it is more precise than a millisecond"),
        ("+PT5M", "it must start with P"),
        (
            "P99999999999999999999Y",
            "`99999999999999999999` is too large",
        ),
    ];
    for (text, reason) in cases {
        let error = IsoDuration::parse(text).expect_err(text);
        assert_eq!(
            error,
            LocalTimeError::BadDuration {
                value: text.to_string(),
                reason: reason.to_string()
            },
            "{text}"
        );
        let message = error.to_string();
        assert!(message.contains(&format!("`{text}`")), "{message}");
        assert!(message.contains("PT90S"), "{message}");
    }
}

#[test]
fn zero_negative_and_oversized_durations_are_refused() {
    for zero in ["PT0S", "P0D", "P0Y0M0W0DT0H0M0S", "PT0.000S"] {
        assert_eq!(
            IsoDuration::parse(zero),
            Err(LocalTimeError::ZeroDuration {
                value: zero.to_string()
            })
        );
    }
    for negative in ["-PT5M", "-P1D"] {
        assert_eq!(
            IsoDuration::parse(negative),
            Err(LocalTimeError::NegativeDuration {
                value: negative.to_string()
            })
        );
    }
    for too_long in [
        "P11Y",
        "P121M",
        "P524W",
        "P3700D",
        "PT100000H",
        "PT999999999999S",
    ] {
        assert_eq!(
            IsoDuration::parse(too_long),
            Err(LocalTimeError::TooFarAhead {
                value: too_long.to_string(),
                limit_years: 10
            }),
            "{too_long}"
        );
    }
}

#[test]
fn a_day_is_nominal_in_the_zone_and_hours_are_exact() {
    // (zone, now, duration, expected)
    let cases = [
        // Berlin springs forward on 30 Mar 2025: P1D is 23 hours, PT24H lands at 09:00.
        (
            "Europe/Berlin",
            "2025-03-29T07:00:00Z",
            "P1D",
            "2025-03-30T06:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2025-03-29T07:00:00Z",
            "PT24H",
            "2025-03-30T07:00:00Z",
        ),
        // ... and falls back on 26 Oct 2025: P1D is 25 hours.
        (
            "Europe/Berlin",
            "2025-10-25T06:00:00Z",
            "P1D",
            "2025-10-26T07:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2025-10-25T06:00:00Z",
            "PT24H",
            "2025-10-26T06:00:00Z",
        ),
        // A day after 02:30 lands in the gap and moves forward to 03:30.
        (
            "Europe/Berlin",
            "2025-03-29T01:30:00Z",
            "P1D",
            "2025-03-30T01:30:00Z",
        ),
        // A day after 02:30 the night before a repeated hour is the first 02:30.
        (
            "Europe/Berlin",
            "2025-10-25T00:30:00Z",
            "P1D",
            "2025-10-26T00:30:00Z",
        ),
        (
            "America/New_York",
            "2025-11-01T16:00:00Z",
            "P1D",
            "2025-11-02T17:00:00Z",
        ),
        (
            "America/New_York",
            "2025-03-08T17:00:00Z",
            "P1W",
            "2025-03-15T16:00:00Z",
        ),
        (
            "America/New_York",
            "2025-03-08T17:00:00Z",
            "P1DT1H",
            "2025-03-09T17:00:00Z",
        ),
        // Lord Howe moves its clocks by 30 minutes.
        (
            "Australia/Lord_Howe",
            "2025-10-04T01:30:00Z",
            "P1D",
            "2025-10-05T01:00:00Z",
        ),
        (
            "Australia/Lord_Howe",
            "2025-04-05T01:00:00Z",
            "P1D",
            "2025-04-06T01:30:00Z",
        ),
        (
            "Australia/Lord_Howe",
            "2025-10-04T01:30:00Z",
            "PT24H",
            "2025-10-05T01:30:00Z",
        ),
        // Months keep the day, or take the last day of a shorter month.
        (
            "Europe/Berlin",
            "2025-01-31T09:00:00Z",
            "P1M",
            "2025-02-28T09:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2024-01-31T09:00:00Z",
            "P1M",
            "2024-02-29T09:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2024-02-29T09:00:00Z",
            "P1Y",
            "2025-02-28T09:00:00Z",
        ),
        (
            "Europe/Berlin",
            "2025-02-28T09:00:00Z",
            "P1M",
            "2025-03-28T09:00:00Z",
        ),
        (
            "UTC",
            "2025-11-26T09:15:00Z",
            "PT90S",
            "2025-11-26T09:16:30Z",
        ),
        (
            "UTC",
            "2025-11-26T09:15:00Z",
            "PT0.5S",
            "2025-11-26T09:15:00.500Z",
        ),
    ];
    for (name, now, duration, expected) in cases {
        let end = IsoDuration::parse(duration)
            .unwrap()
            .after(zone(name), utc(now))
            .unwrap();
        assert_eq!(end, utc(expected), "{duration} after {now} in {name}");
    }
}

#[test]
fn exact_time_from_the_second_of_two_repeated_hours_stays_exact() {
    // 01:40Z on 26 Oct 2025 is the second 02:40 in Berlin (CET); ten minutes on is 01:50Z,
    // not ten minutes after the first 02:40.
    let end = IsoDuration::parse("PT10M")
        .unwrap()
        .after(zone("Europe/Berlin"), utc("2025-10-26T01:40:00Z"))
        .unwrap();
    assert_eq!(end, utc("2025-10-26T01:50:00Z"));
}

#[test]
fn a_duration_may_reach_exactly_ten_years_and_no_further() {
    let berlin = zone("Europe/Berlin");
    let now = utc("2025-11-26T09:15:00Z");
    let ten_years = IsoDuration::parse("P10Y")
        .unwrap()
        .after(berlin, now)
        .unwrap();
    assert_eq!(ten_years, utc("2035-11-26T09:15:00Z"));
    for too_far in ["P10YT1S", "P9Y12M1D", "P3653DT1H"] {
        assert_eq!(
            IsoDuration::parse(too_far).unwrap().after(berlin, now),
            Err(LocalTimeError::TooFarAhead {
                value: too_far.to_string(),
                limit_years: 10
            }),
            "{too_far}"
        );
    }
}
