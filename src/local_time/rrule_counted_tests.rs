//! Tests of rules with COUNT moved on by whole periods: the same times as walking every
//! occurrence from the start (COUNT, UNTIL, BYDAY, BYMONTHDAY, across the DST changes of
//! Europe/Berlin), which rules are moved and which are walked from their start, and the
//! rule of a hundred thousand times every five minutes answered without walking them.

use chrono::{NaiveDateTime, TimeDelta, TimeZone, Utc};

use super::instants_tests::{utc, wall, zone};
use super::rrule_counted::{CountedStart, counted_start};
use super::{RecurrenceRule, WalkLimits, ZoneName, resolve_local};

const RULES: &[&str] = &[
    "FREQ=DAILY;COUNT=400",
    "FREQ=DAILY;INTERVAL=3;COUNT=90",
    "FREQ=DAILY;BYHOUR=8,18;BYMINUTE=0,30;COUNT=700",
    "FREQ=DAILY;COUNT=3",
    "FREQ=WEEKLY;BYDAY=MO,TH;COUNT=150",
    "FREQ=WEEKLY;INTERVAL=2;WKST=SU;BYDAY=SU,MO,SA;COUNT=100",
    "FREQ=WEEKLY;COUNT=60",
    "FREQ=MONTHLY;BYMONTHDAY=15;COUNT=24",
    "FREQ=MONTHLY;INTERVAL=2;BYMONTHDAY=1,28;COUNT=30",
    "FREQ=MONTHLY;COUNT=40",
    "FREQ=MONTHLY;BYMONTHDAY=31;COUNT=20",
    "FREQ=MONTHLY;BYDAY=-1FR;COUNT=20",
    "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=20",
    "FREQ=YEARLY;COUNT=5",
    "FREQ=HOURLY;INTERVAL=7;BYMINUTE=15,45;COUNT=500",
    "FREQ=HOURLY;BYMINUTE=0,20,40;COUNT=3000",
    "FREQ=HOURLY;BYHOUR=9,17;COUNT=200",
    "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;UNTIL=20270101",
    "FREQ=DAILY;UNTIL=20260329T023000",
];

/// Starts on a 31st at a time the spring-forward night skips, on a repeated time, on the
/// skipped hour itself and on an ordinary 15th.
const STARTS: &[&str] = &[
    "2024-01-31 02:30",
    "2025-10-26 02:30",
    "2025-03-30 02:30",
    "2025-03-15 08:00",
];

fn berlin() -> ZoneName {
    zone("Europe/Berlin")
}

fn no_limits() -> WalkLimits {
    WalkLimits {
        max_walked: usize::MAX,
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(600),
    }
}

#[test]
fn a_moved_counted_rule_answers_what_walking_from_the_start_answers() {
    let mut compared = 0;
    for start in STARTS {
        let start = wall(start);
        let first = resolve_local(berlin(), start).instant;
        for text in RULES {
            let rule = RecurrenceRule::parse(text).unwrap();
            for step in 0..40 {
                let after = first + TimeDelta::days(19 * step) + TimeDelta::minutes(433 * step);
                let walked = rule.next_after_walking_from_start(berlin(), start, after);
                assert_eq!(
                    rule.next_after(berlin(), start, after),
                    walked,
                    "{text} from {start} after {after}"
                );
                compared += usize::from(walked.is_some());
            }
        }
    }
    assert!(compared > 1_500, "only {compared} answers compared");
}

#[test]
fn a_range_walked_from_a_moved_counted_start_holds_every_time_of_the_plain_walk() {
    let mut compared = 0;
    for start in STARTS {
        let start = wall(start);
        let first = resolve_local(berlin(), start).instant;
        for text in RULES {
            let rule = RecurrenceRule::parse(text).unwrap();
            for step in 0..12 {
                let after = first + TimeDelta::days(41 * step) + TimeDelta::hours(5 * step);
                for days in [1, 10, 45] {
                    let before = after + TimeDelta::days(days);
                    let moved = rule
                        .occurrences_between(berlin(), start, after, before, 10_000, no_limits())
                        .unwrap();
                    let walked = rule
                        .occurrences_between_walking_from_start(
                            berlin(),
                            start,
                            after,
                            before,
                            10_000,
                            no_limits(),
                        )
                        .unwrap();
                    assert_eq!(moved, walked, "{text} from {start}, {after} to {before}");
                    compared += walked.len();
                }
            }
        }
    }
    assert!(compared > 10_000, "only {compared} times compared");
}

#[test]
fn a_range_from_a_start_in_a_skipped_hour_holds_nothing_before_it() {
    // 02:30 on the spring-forward night is 03:30: the rule's 03:00 is before its start, as
    // `next_after` says too.
    let start = wall("2025-03-30 02:30");
    let rule = RecurrenceRule::parse("FREQ=HOURLY;BYMINUTE=0,15,30,45").unwrap();
    let after = utc("2025-03-29T12:00:00Z");
    let before = utc("2025-03-30T12:00:00Z");
    let listed = rule
        .occurrences_between(berlin(), start, after, before, 3, no_limits())
        .unwrap();
    let expected = [
        utc("2025-03-30T01:30:00Z"),
        utc("2025-03-30T01:45:00Z"),
        utc("2025-03-30T02:00:00Z"),
    ];
    assert_eq!(listed, expected);
    assert_eq!(rule.next_after(berlin(), start, after), Some(expected[0]));
}

#[test]
fn only_rules_that_repeat_by_whole_periods_are_moved() {
    let start = wall("2025-03-15 08:00");
    let later = wall("2026-03-15 08:00");
    let kind = |text: &str, start: NaiveDateTime| {
        let rule = RecurrenceRule::parse(text).unwrap();
        match counted_start(&rule.with_start_parts_written_out(start), start, later) {
            CountedStart::Moved(moved, at) => {
                format!("moved to {at}, {:?} left", moved.get_count())
            }
            CountedStart::Ended => "ended".to_owned(),
            CountedStart::FromStart => "from its start".to_owned(),
        }
    };
    // 365 days, 52 weeks of a Monday and a Thursday, 12 months, 8,760 hours of two times.
    assert_eq!(
        kind("FREQ=DAILY;COUNT=1000", start),
        "moved to 2026-03-15 08:00:00, Some(635) left"
    );
    assert_eq!(
        kind("FREQ=WEEKLY;BYDAY=MO,TH;COUNT=208", start),
        "moved to 2026-03-14 08:00:00, Some(104) left"
    );
    assert_eq!(
        kind("FREQ=MONTHLY;COUNT=24", start),
        "moved to 2026-03-15 08:00:00, Some(12) left"
    );
    assert_eq!(
        kind("FREQ=HOURLY;BYMINUTE=0,30;COUNT=20000", start),
        "moved to 2026-03-15 08:00:00, Some(2480) left"
    );
    assert_eq!(kind("FREQ=DAILY;COUNT=365", start), "ended");
    assert_eq!(kind("FREQ=DAILY;COUNT=10", start), "ended");
    for walked in [
        "FREQ=MONTHLY;BYMONTHDAY=29;COUNT=30",
        "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=30",
        "FREQ=MONTHLY;BYDAY=2TU;COUNT=30",
        "FREQ=MONTHLY;BYDAY=MO;COUNT=30",
        "FREQ=WEEKLY;BYDAY=MO;BYMONTH=1,2;COUNT=30",
        "FREQ=DAILY;BYDAY=MO,TU;COUNT=300",
        "FREQ=DAILY;BYSETPOS=1;BYHOUR=8,9;COUNT=300",
        "FREQ=HOURLY;BYHOUR=8;COUNT=300",
        "FREQ=YEARLY;COUNT=30",
    ] {
        assert_eq!(kind(walked, start), "from its start", "{walked}");
    }
    // A monthly rule from the 29th takes its day from the start: not every month has it.
    assert_eq!(
        kind("FREQ=MONTHLY;COUNT=30", wall("2025-01-29 08:00")),
        "from its start"
    );
    // Without COUNT, the other path moves the rule.
    assert_eq!(kind("FREQ=DAILY", start), "from its start");
}

#[test]
fn a_hundred_thousand_times_every_five_minutes_are_counted_not_walked() {
    let minutes: Vec<String> = (0..60).step_by(5).map(|m| m.to_string()).collect();
    let text = format!("FREQ=HOURLY;BYMINUTE={};COUNT=100000", minutes.join(","));
    let rule = RecurrenceRule::parse(&text).unwrap();
    let utc_zone = ZoneName::from(chrono_tz::UTC);
    let start = wall("2025-01-01 00:00");
    // The last time is the 100,000th: 8,333 hours and three times (15 minutes) on.
    let last = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap()
        + TimeDelta::hours(8_333)
        + TimeDelta::minutes(15);
    assert_eq!(
        rule.next_after(utc_zone, start, last - TimeDelta::seconds(1)),
        Some(last)
    );
    assert_eq!(rule.next_after(utc_zone, start, last), None);
    // A week near its end, walked from the moved start: far fewer than 20,000 steps.
    let limits = WalkLimits {
        max_walked: 5_000,
        ..no_limits()
    };
    let week = rule
        .occurrences_between(
            utc_zone,
            start,
            last - TimeDelta::days(7),
            last + TimeDelta::days(7),
            5_000,
            limits,
        )
        .unwrap();
    assert_eq!(week.len(), 7 * 24 * 12);
    assert_eq!(week.last(), Some(&last));
    let plain = rule.next_after_walking_from_start(utc_zone, start, utc("2025-11-20T10:07:00Z"));
    assert_eq!(
        rule.next_after(utc_zone, start, utc("2025-11-20T10:07:00Z")),
        plain
    );
    assert_eq!(plain, Some(utc("2025-11-20T10:10:00Z")));
}

#[test]
fn a_reminder_counted_from_decades_ago_is_answered_from_a_moved_start() {
    // A reminder's next time after now, for a rule started in 1960: moved to within days of
    // the asked time with the COUNT left, not walked through 24,000 days.
    let start = wall("1960-01-01 07:00");
    let after = utc("2026-12-05T12:00:00Z");
    let after_wall = after.with_timezone(&berlin().tz()).naive_local();
    let rule = RecurrenceRule::parse("FREQ=DAILY;COUNT=100000").unwrap();
    let CountedStart::Moved(moved, at) = counted_start(
        &rule.with_start_parts_written_out(start),
        start,
        after_wall - TimeDelta::days(3),
    ) else {
        panic!("a daily rule is moved");
    };
    assert!(after_wall - at < TimeDelta::days(4), "moved to {at}");
    let days_passed = (at - start).num_days() as u32;
    assert_eq!(moved.get_count(), Some(100_000 - days_passed));
    let next = rule.next_after(berlin(), start, after);
    assert_eq!(next, Some(utc("2026-12-06T06:00:00Z")));
    assert_eq!(
        next,
        rule.next_after_walking_from_start(berlin(), start, after)
    );
    // Used up long ago: no walk at all.
    let used_up = RecurrenceRule::parse("FREQ=HOURLY;BYMINUTE=0,30;COUNT=100000").unwrap();
    assert_eq!(used_up.next_after(berlin(), start, after), None);
    // And a COUNT beyond what hearth walks is refused when the rule is read.
    assert!(RecurrenceRule::parse("FREQ=DAILY;COUNT=2000000").is_err());
}
