//! Tests of the simple recurrences: their words, and next occurrences across DST changes,
//! month ends and leap days.

use chrono::{DateTime, NaiveDate, TimeDelta, Utc, Weekday};

use super::instants_tests::{utc, wall, zone};
use super::{LocalTimeError, Recurrence, RecurringTime, ZoneName, resolve_local};

/// The first `count` occurrences from the start, each strictly after the one before.
pub(super) fn occurrences(recurring: &RecurringTime, count: usize) -> Vec<String> {
    let mut after = super::resolve_local(recurring.zone, recurring.start).instant
        - chrono::TimeDelta::seconds(1);
    let mut found = Vec::new();
    while found.len() < count {
        let Some(next) = recurring.next_after(after) else {
            break;
        };
        assert!(next > after, "{next} is not after {after}");
        found.push(next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        after = next;
    }
    found
}

pub(super) fn recurring(zone_name: &str, start: &str, recurrence: &str) -> RecurringTime {
    RecurringTime::new(
        zone(zone_name),
        wall(start),
        Recurrence::parse(recurrence).unwrap_or_else(|e| panic!("{recurrence}: {e}")),
    )
    .unwrap_or_else(|e| panic!("{recurrence}: {e}"))
}

#[test]
fn recurrence_words_parse_and_print_back_the_same() {
    let weekly = |days: &[Weekday]| Recurrence::Weekly {
        days: days.to_vec(),
    };
    let cases = [
        ("daily", Recurrence::Daily, "daily"),
        ("Every day", Recurrence::Daily, "daily"),
        ("weekdays", Recurrence::Weekdays, "weekdays"),
        ("every weekday", Recurrence::Weekdays, "weekdays"),
        (
            "weekly on mon,thu",
            weekly(&[Weekday::Mon, Weekday::Thu]),
            "weekly on mon,thu",
        ),
        (
            "weekly on Thursday and Monday",
            weekly(&[Weekday::Mon, Weekday::Thu]),
            "weekly on mon,thu",
        ),
        (
            "weekly mon, thu, mon",
            weekly(&[Weekday::Mon, Weekday::Thu]),
            "weekly on mon,thu",
        ),
        ("every friday", weekly(&[Weekday::Fri]), "weekly on fri"),
        ("every Sundays", weekly(&[Weekday::Sun]), "weekly on sun"),
        (
            "monthly on 15",
            Recurrence::Monthly { day: 15 },
            "monthly on 15",
        ),
        (
            "monthly on the 1st",
            Recurrence::Monthly { day: 1 },
            "monthly on 1",
        ),
        (
            "Monthly on day 31",
            Recurrence::Monthly { day: 31 },
            "monthly on 31",
        ),
        (
            "monthly 22nd",
            Recurrence::Monthly { day: 22 },
            "monthly on 22",
        ),
    ];
    for (text, expected, canonical) in cases {
        let parsed = Recurrence::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed, expected, "{text}");
        assert_eq!(parsed.to_string(), canonical, "{text}");
        assert_eq!(
            Recurrence::parse(canonical).unwrap(),
            expected,
            "{canonical}"
        );
    }
    let rule = Recurrence::parse("rrule:freq=weekly;byday=mo").unwrap();
    assert_eq!(rule.to_string(), "FREQ=WEEKLY;BYDAY=MO");
    assert_eq!(Recurrence::parse(&rule.to_string()).unwrap(), rule);
}

#[test]
fn unknown_recurrence_words_are_errors_naming_them_and_what_to_write() {
    let cases = [
        ("", "it is empty"),
        ("weekly", "name the days, e.g. weekly on mon,thu"),
        ("weekly on", "name the days, e.g. weekly on mon,thu"),
        (
            "weekly on funday",
            "`funday` is not a weekday such as mon or thursday",
        ),
        ("monthly", "name the day of the month, e.g. monthly on 15"),
        ("monthly on 32", "the day of the month must be 1 to 31"),
        ("monthly on 0", "the day of the month must be 1 to 31"),
        (
            "monthly on the last",
            "the day of the month must be 1 to 31",
        ),
        (
            "monthly on 1 and 15",
            "name the day of the month, e.g. monthly on 15",
        ),
        ("fortnightly", "unknown words"),
        ("hourly", "unknown words"),
        ("every 2 days", "unknown words"),
    ];
    for (text, reason) in cases {
        let error = Recurrence::parse(text).expect_err(text);
        assert_eq!(
            error,
            LocalTimeError::BadRecurrence {
                value: text.to_string(),
                reason: reason.to_string()
            },
            "{text}"
        );
        let message = error.to_string();
        assert!(message.contains(&format!("`{text}`")), "{message}");
        assert!(message.contains("weekly on mon,thu"), "{message}");
    }
}

#[test]
fn daily_stays_at_its_local_time_across_dst_and_never_skips_or_repeats_a_day() {
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "Europe/Berlin",
            "2025-03-28 08:00",
            &[
                "2025-03-28T07:00:00Z",
                "2025-03-29T07:00:00Z",
                "2025-03-30T06:00:00Z",
                "2025-03-31T06:00:00Z",
            ],
        ),
        // 02:30 does not exist on 30 Mar: that day it fires at 03:30, and the next at 02:30.
        (
            "Europe/Berlin",
            "2025-03-29 02:30",
            &[
                "2025-03-29T01:30:00Z",
                "2025-03-30T01:30:00Z",
                "2025-03-31T00:30:00Z",
            ],
        ),
        // 02:30 happens twice on 26 Oct: it fires once, at the first.
        (
            "Europe/Berlin",
            "2025-10-25 02:30",
            &[
                "2025-10-25T00:30:00Z",
                "2025-10-26T00:30:00Z",
                "2025-10-27T01:30:00Z",
            ],
        ),
        (
            "America/New_York",
            "2025-11-01 01:30",
            &[
                "2025-11-01T05:30:00Z",
                "2025-11-02T05:30:00Z",
                "2025-11-03T06:30:00Z",
            ],
        ),
        (
            "America/New_York",
            "2025-03-08 02:10",
            &[
                "2025-03-08T07:10:00Z",
                "2025-03-09T07:10:00Z",
                "2025-03-10T06:10:00Z",
            ],
        ),
        // Lord Howe skips 02:00-02:30 on 5 Oct: 02:15 that day is 02:45 (+11).
        (
            "Australia/Lord_Howe",
            "2025-10-04 02:15",
            &[
                "2025-10-03T15:45:00Z",
                "2025-10-04T15:45:00Z",
                "2025-10-05T15:15:00Z",
            ],
        ),
    ];
    for (zone_name, start, expected) in cases {
        let daily = recurring(zone_name, start, "daily");
        assert_eq!(
            occurrences(&daily, expected.len()),
            *expected,
            "{start} in {zone_name}"
        );
    }
    // Santiago skips from midnight to 01:00 on 7 Sep 2025: 00:30 that day is 01:30 (-03).
    let santiago = recurring("America/Santiago", "2025-09-06 00:30", "daily");
    assert_eq!(
        occurrences(&santiago, 3),
        [
            "2025-09-06T04:30:00Z",
            "2025-09-07T04:30:00Z",
            "2025-09-08T03:30:00Z"
        ]
    );
    // Lord Howe repeats 01:30-02:00 on 6 Apr: 01:45 fires once, at the first (+11).
    let lord_howe = recurring("Australia/Lord_Howe", "2025-04-05 01:45", "daily");
    assert_eq!(
        occurrences(&lord_howe, 3),
        [
            "2025-04-04T14:45:00Z",
            "2025-04-05T14:45:00Z",
            "2025-04-06T15:15:00Z"
        ]
    );
}

#[test]
fn weekdays_and_weekly_fire_on_their_days_across_dst() {
    let weekdays = recurring("Europe/Berlin", "2025-10-24 07:00", "weekdays");
    assert_eq!(
        occurrences(&weekdays, 4),
        [
            "2025-10-24T05:00:00Z", // Fri, CEST
            "2025-10-27T06:00:00Z", // Mon, CET
            "2025-10-28T06:00:00Z",
            "2025-10-29T06:00:00Z",
        ]
    );
    // Starting on a Wednesday, weekly on Monday and Thursday begins on Thursday.
    let weekly = recurring("America/New_York", "2025-10-29 17:00", "weekly on mon,thu");
    assert_eq!(
        occurrences(&weekly, 4),
        [
            "2025-10-30T21:00:00Z", // Thu, EDT
            "2025-11-03T22:00:00Z", // Mon, EST
            "2025-11-06T22:00:00Z",
            "2025-11-10T22:00:00Z",
        ]
    );
    let sunday = recurring("Europe/Berlin", "2025-03-23 02:30", "every sunday");
    assert_eq!(
        occurrences(&sunday, 3),
        [
            "2025-03-23T01:30:00Z",
            "2025-03-30T01:30:00Z",
            "2025-04-06T00:30:00Z"
        ]
    );
}

#[test]
fn monthly_on_a_day_shorter_months_lack_fires_on_their_last_day() {
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "2025-01-31 09:00",
            "monthly on 31",
            &[
                "2025-01-31",
                "2025-02-28",
                "2025-03-31",
                "2025-04-30",
                "2025-05-31",
            ],
        ),
        (
            "2024-01-29 09:00",
            "monthly on 29",
            &["2024-01-29", "2024-02-29", "2024-03-29"],
        ),
        (
            "2025-01-30 09:00",
            "monthly on 30",
            &["2025-01-30", "2025-02-28", "2025-03-30"],
        ),
        // Starting after the 15th, the first is next month's.
        (
            "2025-11-20 09:00",
            "monthly on 15",
            &["2025-12-15", "2026-01-15", "2026-02-15"],
        ),
    ];
    for (start, recurrence, dates) in cases {
        let monthly = recurring("Europe/Berlin", start, recurrence);
        let local_dates: Vec<String> = occurrences(&monthly, dates.len())
            .iter()
            .map(|instant| {
                utc(instant)
                    .with_timezone(&monthly.zone.tz())
                    .format("%Y-%m-%d %H:%M")
                    .to_string()
            })
            .collect();
        let expected: Vec<String> = dates.iter().map(|date| format!("{date} 09:00")).collect();
        assert_eq!(local_dates, expected, "{recurrence} from {start}");
    }
}

#[test]
fn the_next_occurrence_after_a_late_instant_skips_the_missed_ones() {
    let daily = recurring("Europe/Berlin", "2025-11-01 08:00", "daily");
    let cases = [
        ("2025-10-01T00:00:00Z", "2025-11-01T07:00:00Z"),
        ("2025-11-01T06:59:59Z", "2025-11-01T07:00:00Z"),
        ("2025-11-01T07:00:00Z", "2025-11-02T07:00:00Z"),
        ("2025-11-26T09:15:00Z", "2025-11-27T07:00:00Z"),
        ("2025-11-26T06:00:00Z", "2025-11-26T07:00:00Z"),
    ];
    for (after, expected) in cases {
        let next: Option<DateTime<Utc>> = daily.next_after(utc(after));
        assert_eq!(next, Some(utc(expected)), "after {after}");
    }
}

#[test]
fn each_recurrence_is_written_as_an_rrule_that_reads_back_the_same() {
    for (written, rrule) in [
        ("daily", "FREQ=DAILY"),
        ("weekdays", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"),
        ("weekly on thu", "FREQ=WEEKLY;BYDAY=TH"),
        ("weekly on mon and fri", "FREQ=WEEKLY;BYDAY=MO,FR"),
        ("monthly on 15", "FREQ=MONTHLY;BYMONTHDAY=15"),
        (
            "monthly on 30",
            "FREQ=MONTHLY;BYMONTHDAY=28,29,30;BYSETPOS=-1",
        ),
        (
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=SA",
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=SA",
        ),
    ] {
        let recurrence = Recurrence::parse(written).unwrap();
        assert_eq!(recurrence.to_rrule(), rrule, "{written}");
        assert!(Recurrence::parse(&recurrence.to_rrule()).is_ok(), "{rrule}");
    }
}

#[test]
fn monthly_on_the_30th_as_an_rrule_fires_on_the_days_hearth_fires_it() {
    let zone = ZoneName::parse("Europe/Berlin").unwrap();
    let start = NaiveDate::from_ymd_opt(2027, 1, 30)
        .unwrap()
        .and_hms_opt(9, 0, 0)
        .unwrap();
    let ours = RecurringTime::new(zone, start, Recurrence::Monthly { day: 30 }).unwrap();
    let as_rrule = RecurringTime::new(
        zone,
        start,
        Recurrence::parse(&Recurrence::Monthly { day: 30 }.to_rrule()).unwrap(),
    )
    .unwrap();
    let mut after = resolve_local(zone, start).instant - TimeDelta::seconds(1);
    for _ in 0..14 {
        let next = ours.next_after(after).unwrap();
        assert_eq!(as_rrule.next_after(after), Some(next));
        after = next;
    }
}
