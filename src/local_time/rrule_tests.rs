//! Tests of RRULEs: COUNT, UNTIL in its three forms, BYDAY and BYMONTHDAY, wall-clock
//! expansion across DST, and the rules hearth refuses.

use super::instants_tests::{utc, wall, zone};
use super::recurrence_tests::{occurrences, recurring};
use super::{LocalTimeError, Recurrence, RecurrenceRule, RecurringTime};

#[test]
fn count_ends_a_rule_and_the_days_stay_local_across_dst() {
    let rule = recurring("Europe/Berlin", "2025-03-29 08:00", "FREQ=DAILY;COUNT=3");
    assert_eq!(
        occurrences(&rule, 10),
        [
            "2025-03-29T07:00:00Z",
            "2025-03-30T06:00:00Z",
            "2025-03-31T06:00:00Z"
        ]
    );
    assert_eq!(rule.next_after(utc("2025-03-31T06:00:00Z")), None);
    assert_eq!(rule.next_after(utc("2030-01-01T00:00:00Z")), None);
}

#[test]
fn until_as_a_date_a_local_time_or_an_instant() {
    // Wed 26 Nov 2025 17:00 Berlin; Thu 4 Dec 17:00 is 16:00Z.
    let cases: [(&str, &[&str]); 6] = [
        (
            "FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20251204",
            &[
                "2025-11-27T16:00:00Z",
                "2025-12-01T16:00:00Z",
                "2025-12-04T16:00:00Z",
            ],
        ),
        (
            "FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20251203",
            &["2025-11-27T16:00:00Z", "2025-12-01T16:00:00Z"],
        ),
        (
            "FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20251204T170000",
            &[
                "2025-11-27T16:00:00Z",
                "2025-12-01T16:00:00Z",
                "2025-12-04T16:00:00Z",
            ],
        ),
        (
            "FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20251204T165959",
            &["2025-11-27T16:00:00Z", "2025-12-01T16:00:00Z"],
        ),
        (
            "FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20251204T160000Z",
            &[
                "2025-11-27T16:00:00Z",
                "2025-12-01T16:00:00Z",
                "2025-12-04T16:00:00Z",
            ],
        ),
        (
            "FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20251204T155959Z",
            &["2025-11-27T16:00:00Z", "2025-12-01T16:00:00Z"],
        ),
    ];
    for (rule, expected) in cases {
        let recurring = recurring("Europe/Berlin", "2025-11-26 17:00", rule);
        assert_eq!(occurrences(&recurring, 10), *expected, "{rule}");
    }
}

#[test]
fn month_days_follow_rfc_5545_and_skip_months_without_them() {
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "2025-01-31 09:00",
            "FREQ=MONTHLY;BYMONTHDAY=31;COUNT=3",
            &["2025-01-31", "2025-03-31", "2025-05-31"],
        ),
        (
            "2025-01-31 09:00",
            "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=4",
            &["2025-01-31", "2025-02-28", "2025-03-31", "2025-04-30"],
        ),
        (
            "2025-01-01 09:00",
            "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=2",
            &["2028-02-29", "2032-02-29"],
        ),
        // The first Monday of each month.
        (
            "2025-11-26 09:00",
            "FREQ=MONTHLY;BYDAY=1MO;COUNT=3",
            &["2025-12-01", "2026-01-05", "2026-02-02"],
        ),
        // Every other week on Tuesday, starting on a Wednesday: the start's own week (from
        // Monday, WKST) is the first of the two, its Tuesday already past, so RFC 5545 fires
        // first in the third week.
        (
            "2025-11-26 09:00",
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU;COUNT=3",
            &["2025-12-09", "2025-12-23", "2026-01-06"],
        ),
    ];
    for (start, rule, dates) in cases {
        let recurring = recurring("Europe/Berlin", start, rule);
        let local: Vec<String> = occurrences(&recurring, 10)
            .iter()
            .map(|instant| {
                utc(instant)
                    .with_timezone(&recurring.zone.tz())
                    .format("%Y-%m-%d %H:%M")
                    .to_string()
            })
            .collect();
        let expected: Vec<String> = dates.iter().map(|date| format!("{date} 09:00")).collect();
        assert_eq!(local, expected, "{rule}");
    }
}

#[test]
fn a_rule_runs_on_the_wall_clock_across_a_gap_and_a_repeated_hour() {
    // Daily at 02:30 in Berlin: 03:30 on the spring-forward day, once on the fall-back day.
    let spring = recurring("Europe/Berlin", "2025-03-29 02:30", "FREQ=DAILY");
    assert_eq!(
        occurrences(&spring, 3),
        [
            "2025-03-29T01:30:00Z",
            "2025-03-30T01:30:00Z",
            "2025-03-31T00:30:00Z"
        ]
    );
    let autumn = recurring("Europe/Berlin", "2025-10-25 02:30", "FREQ=DAILY");
    assert_eq!(
        occurrences(&autumn, 3),
        [
            "2025-10-25T00:30:00Z",
            "2025-10-26T00:30:00Z",
            "2025-10-27T01:30:00Z"
        ]
    );
    // Half-hourly through the skipped hour: 02:00 and 02:30 become 03:00 and 03:30, which
    // the wall clock reaches anyway; each instant fires once and in order.
    let half_hourly = recurring(
        "Europe/Berlin",
        "2025-03-30 00:00",
        "FREQ=HOURLY;BYMINUTE=0,30",
    );
    assert_eq!(
        occurrences(&half_hourly, 7),
        [
            "2025-03-29T23:00:00Z",
            "2025-03-29T23:30:00Z",
            "2025-03-30T00:00:00Z",
            "2025-03-30T00:30:00Z",
            "2025-03-30T01:00:00Z",
            "2025-03-30T01:30:00Z",
            "2025-03-30T02:00:00Z",
        ]
    );
    // Hourly through the repeated hour: 02:00 fires once, at the first.
    let hourly = recurring("Europe/Berlin", "2025-10-26 01:00", "FREQ=HOURLY");
    assert_eq!(
        occurrences(&hourly, 3),
        [
            "2025-10-25T23:00:00Z",
            "2025-10-26T00:00:00Z",
            "2025-10-26T02:00:00Z"
        ]
    );
    // Santiago's clocks skip midnight: the day still has its 00:30, at 01:30.
    let santiago = recurring("America/Santiago", "2025-09-06 00:30", "FREQ=DAILY;COUNT=3");
    assert_eq!(
        occurrences(&santiago, 5),
        [
            "2025-09-06T04:30:00Z",
            "2025-09-07T04:30:00Z",
            "2025-09-08T03:30:00Z"
        ]
    );
    // Lord Howe's 30-minute gap.
    let lord_howe = recurring(
        "Australia/Lord_Howe",
        "2025-10-04 02:15",
        "FREQ=DAILY;COUNT=3",
    );
    assert_eq!(
        occurrences(&lord_howe, 5),
        [
            "2025-10-03T15:45:00Z",
            "2025-10-04T15:45:00Z",
            "2025-10-05T15:15:00Z"
        ]
    );
}

#[test]
fn a_start_in_a_skipped_hour_fires_nothing_before_it() {
    // Found by the fuzz target `recurrence`: 02:30 on the spring-forward night is 03:30,
    // and the rule's 03:00 was given as the first occurrence, before the start.
    let rule = recurring(
        "Europe/Berlin",
        "2025-03-30 02:30",
        "FREQ=HOURLY;BYMINUTE=0,15,30,45",
    );
    assert_eq!(
        rule.next_after(utc("2025-03-29T12:00:00Z")),
        Some(utc("2025-03-30T01:30:00Z"))
    );
    assert_eq!(
        occurrences(&rule, 3),
        [
            "2025-03-30T01:30:00Z",
            "2025-03-30T01:45:00Z",
            "2025-03-30T02:00:00Z"
        ]
    );
}

#[test]
fn rules_firing_more_often_than_every_five_minutes_are_refused() {
    let cases = [
        ("FREQ=MINUTELY", "FREQ=MINUTELY"),
        ("FREQ=SECONDLY;COUNT=3", "FREQ=SECONDLY"),
        ("FREQ=HOURLY;BYMINUTE=0,2", "BYMINUTE has minutes 2 apart"),
        ("FREQ=DAILY;BYMINUTE=0,58", "BYMINUTE has minutes 2 apart"),
        (
            "FREQ=DAILY;BYSECOND=0,30",
            "BYSECOND names seconds; times are whole minutes",
        ),
    ];
    for (rule, reason) in cases {
        let error = RecurrenceRule::parse(rule).expect_err(rule);
        assert_eq!(
            error,
            LocalTimeError::RruleTooFrequent {
                value: rule.to_string(),
                reason: reason.to_string(),
                min_minutes: 5
            }
        );
        assert!(error.to_string().contains(&format!("`{rule}`")), "{error}");
    }
    for allowed in [
        "FREQ=HOURLY",
        "FREQ=HOURLY;BYMINUTE=0,5,10,15,20,25,30,35,40,45,50,55",
        "FREQ=DAILY;BYSECOND=0",
    ] {
        RecurrenceRule::parse(allowed).unwrap_or_else(|e| panic!("{allowed}: {e}"));
    }
}

#[test]
fn malformed_rules_are_errors_naming_the_rule() {
    let cases = [
        ("FREQ=FORTNIGHTLY", "not a valid frequency"),
        ("BYDAY=MO", "wasn't found"),
        ("FREQ=WEEKLY;BYDAY=XX", "not a valid weekday"),
        ("FREQ=DAILY;FOO=1", "not a valid property parameter"),
        ("FREQ=MONTHLY;BYMONTHDAY=32", "BYMONTHDAY"),
        ("FREQ=DAILY;COUNT=0", "COUNT=0 never fires"),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL must be at least 1"),
        ("FREQ=DAILY;COUNT=100001", "COUNT is above 100000"),
        (
            "FREQ=DAILY;COUNT=2;UNTIL=20251231",
            "COUNT and UNTIL cannot both be given",
        ),
        (
            "FREQ=DAILY;UNTIL=2025-12-31",
            "UNTIL `2025-12-31` is not YYYYMMDD",
        ),
        (
            "FREQ=DAILY;UNTIL=20251231T2359",
            "UNTIL `20251231T2359` is not YYYYMMDD",
        ),
        (
            "FREQ=DAILY;UNTIL=20251231;UNTIL=20260101",
            "UNTIL appears twice",
        ),
        (
            "DTSTART:20251126T090000Z\nRRULE:FREQ=DAILY",
            "only one RRULE line",
        ),
        ("FREQ=DAILY;;COUNT=2", "`` is not KEY=VALUE"),
        ("FREQ=DAILY;COUNT", "`COUNT` is not KEY=VALUE"),
    ];
    for (rule, reason) in cases {
        let error = RecurrenceRule::parse(rule).expect_err(rule);
        let LocalTimeError::BadRrule { value, reason: got } = &error else {
            panic!("{rule}: {error:?}");
        };
        assert_eq!(value, rule);
        assert!(got.contains(reason), "{rule}: {got}");
        assert!(error.to_string().contains(&format!("`{rule}`")), "{error}");
    }
    // The crate's messages are passed on lowercase and without their period.
    let error = RecurrenceRule::parse("FREQ=FORTNIGHTLY").unwrap_err();
    assert!(
        matches!(&error, LocalTimeError::BadRrule { reason, .. } if reason == "`FORTNIGHTLY` is not a valid frequency"),
        "{error:?}"
    );
    let error = RecurrenceRule::parse("BYDAY=MO").unwrap_err();
    assert!(
        matches!(&error, LocalTimeError::BadRrule { reason, .. } if reason.starts_with("the property `FREQ`")),
        "{error:?}"
    );
    let long = format!("FREQ=DAILY;{}", "BYHOUR=1;".repeat(40));
    assert!(matches!(
        RecurrenceRule::parse(&long),
        Err(LocalTimeError::BadRrule { reason, .. }) if reason.contains("longer than 300")
    ));
}

#[test]
fn a_rule_that_never_fires_from_its_start_is_refused() {
    let berlin = zone("Europe/Berlin");
    for rule in [
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=DAILY;UNTIL=20251101",
        "FREQ=DAILY;UNTIL=20251126T075959",
    ] {
        let error = RecurringTime::new(
            berlin,
            wall("2025-11-26 08:00"),
            Recurrence::parse(rule).unwrap(),
        )
        .expect_err(rule);
        assert_eq!(
            error,
            LocalTimeError::NeverFires {
                value: rule.to_string(),
                start: "2025-11-26 08:00".to_string()
            }
        );
    }
}

#[test]
fn expanding_from_a_later_start_finds_what_walking_from_the_start_finds() {
    let rules = [
        "FREQ=DAILY",
        "FREQ=DAILY;INTERVAL=3",
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,SA",
        "FREQ=WEEKLY;INTERVAL=3",
        "FREQ=WEEKLY;INTERVAL=2;WKST=SU;BYDAY=SU,MO",
        "FREQ=MONTHLY;INTERVAL=5",
        "FREQ=MONTHLY;BYDAY=-1FR",
        "FREQ=MONTHLY;BYMONTHDAY=31",
        "FREQ=MONTHLY;INTERVAL=2;BYDAY=MO,TU;BYSETPOS=1",
        "FREQ=YEARLY;INTERVAL=3",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
        "FREQ=YEARLY;BYMONTH=2,8",
        "FREQ=YEARLY;BYWEEKNO=1;BYDAY=MO",
        "FREQ=YEARLY;INTERVAL=2;BYMONTH=3,10;BYDAY=-1SU",
        "FREQ=HOURLY;INTERVAL=7;BYMINUTE=15,45",
        "FREQ=DAILY;UNTIL=20280101",
    ];
    let berlin = zone("Europe/Berlin");
    // A 31st in a leap year at a time the spring-forward night skips, and a repeated time.
    for start in ["2024-01-31 02:30", "2025-10-26 02:30"] {
        let start = wall(start);
        let first = super::resolve_local(berlin, start).instant;
        for rule_text in rules {
            let rule = RecurrenceRule::parse(rule_text).unwrap();
            for step in 0..60 {
                let after = first
                    + chrono::TimeDelta::days(23 * step)
                    + chrono::TimeDelta::minutes(433 * step);
                assert_eq!(
                    rule.next_after(berlin, start, after),
                    rule.next_after_walking_from_start(berlin, start, after),
                    "{rule_text} from {start} after {after}"
                );
            }
        }
    }
}

#[test]
fn a_month_day_of_zero_is_refused_however_it_is_written() {
    // Found by the fuzz target `recurrence`: `BYMONTHDAY=-0` read as day 0, which RFC 5545
    // does not allow, and its next occurrences depended on where the search started.
    for rule in [
        "FREQ=MONTHLY;BYMONTHDAY=0",
        "FREQ=MONTHLY;BYMONTHDAY=-0",
        "FREQ=MONTHLY;BYMONTHDAY=+0",
    ] {
        let error = Recurrence::parse(rule).unwrap_err();
        assert!(error.to_string().contains("BYMONTHDAY"), "{rule}: {error}");
    }
}
