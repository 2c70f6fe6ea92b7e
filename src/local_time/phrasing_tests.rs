//! Tests of saying times back in the member's zone and words.

use chrono::{NaiveDate, TimeDelta};

use super::instants_tests::{utc, wall, zone};
use super::phrasing::{
    say_all_day, say_day, say_instant, say_instant_in_sentence, say_lateness, say_range,
    say_recurrence, say_shift,
};
use super::recurrence_tests::recurring;
use super::resolve_local;

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

#[test]
fn an_instant_is_said_relative_to_today_in_the_members_zone() {
    // Wed 25 Nov 2026, 10:00 in Berlin.
    let now = utc("2026-11-25T09:00:00Z");
    let cases = [
        (
            "Europe/Berlin",
            "2026-11-25T17:00:00Z",
            "Today at 18:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-11-26T07:00:00Z",
            "Tomorrow, Thu 26 Nov at 08:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-11-24T07:00:00Z",
            "Yesterday, Tue 24 Nov at 08:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-11-30T07:00:00Z",
            "Mon 30 Nov at 08:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-11-25T22:59:00Z",
            "Today at 23:59 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-11-25T23:00:00Z",
            "Tomorrow, Thu 26 Nov at 00:00 (Europe/Berlin)",
        ),
        // The year shows beyond 300 days ahead and 30 days back.
        (
            "Europe/Berlin",
            "2027-09-21T06:00:00Z",
            "Tue 21 Sep at 08:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2027-09-22T06:00:00Z",
            "Wed 22 Sep 2027 at 08:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-10-26T07:00:00Z",
            "Mon 26 Oct at 08:00 (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-10-24T06:00:00Z",
            "Sat 24 Oct 2026 at 08:00 (Europe/Berlin)",
        ),
        // Which of two 02:30s is meant.
        (
            "Europe/Berlin",
            "2026-10-25T00:30:00Z",
            "Sun 25 Oct 2026 at 02:30 CEST (Europe/Berlin)",
        ),
        (
            "Europe/Berlin",
            "2026-10-25T01:30:00Z",
            "Sun 25 Oct 2026 at 02:30 CET (Europe/Berlin)",
        ),
        // Today is the member's today: 10:00 EST, 20:00 on Lord Howe.
        (
            "America/New_York",
            "2026-11-25T18:00:00Z",
            "Today at 13:00 (America/New_York)",
        ),
        (
            "Australia/Lord_Howe",
            "2026-11-25T14:00:00Z",
            "Tomorrow, Thu 26 Nov at 01:00 (Australia/Lord_Howe)",
        ),
    ];
    for (name, instant, said) in cases {
        assert_eq!(
            say_instant(utc(instant), zone(name), now),
            said,
            "{instant}"
        );
    }
}

#[test]
fn inside_a_sentence_only_a_relative_day_loses_its_capital() {
    let now = utc("2026-11-25T09:00:00Z");
    let berlin = zone("Europe/Berlin");
    let said = |at: &str| say_instant_in_sentence(utc(at), berlin, now);
    assert_eq!(
        said("2026-11-25T17:00:00Z"),
        "today at 18:00 (Europe/Berlin)"
    );
    assert_eq!(
        said("2026-11-26T07:00:00Z"),
        "tomorrow, Thu 26 Nov at 08:00 (Europe/Berlin)"
    );
    assert_eq!(
        said("2026-11-24T07:00:00Z"),
        "yesterday, Tue 24 Nov at 08:00 (Europe/Berlin)"
    );
    assert_eq!(
        said("2026-11-30T07:00:00Z"),
        "Mon 30 Nov at 08:00 (Europe/Berlin)"
    );
}

#[test]
fn ranges_and_all_day_dates_are_said_in_the_members_zone() {
    let berlin = zone("Europe/Berlin");
    let now = utc("2026-11-25T09:00:00Z");
    let cases = [
        (
            "2026-12-01T14:00:00Z",
            "2026-12-01T15:00:00Z",
            "Tue 1 Dec, 15:00-16:00 (Europe/Berlin)",
        ),
        (
            "2026-11-25T17:00:00Z",
            "2026-11-25T18:30:00Z",
            "Today, 18:00-19:30 (Europe/Berlin)",
        ),
        (
            "2026-12-01T21:00:00Z",
            "2026-12-02T01:00:00Z",
            "Tue 1 Dec at 22:00 - Wed 2 Dec at 02:00 (Europe/Berlin)",
        ),
    ];
    for (start, end, said) in cases {
        assert_eq!(say_range(utc(start), utc(end), berlin, now), said);
    }
    let today = date("2026-11-25");
    assert_eq!(
        say_all_day(date("2026-12-01"), date("2026-12-01"), today),
        "Tue 1 Dec (all day)"
    );
    assert_eq!(
        say_all_day(date("2026-12-01"), date("2026-12-03"), today),
        "Tue 1 Dec - Thu 3 Dec (all day)"
    );
    assert_eq!(say_all_day(today, today, today), "Today (all day)");
    assert_eq!(say_day(date("2028-02-29"), today), "Tue 29 Feb 2028");
}

#[test]
fn lateness_is_said_in_its_largest_units() {
    let cases = [
        (TimeDelta::seconds(40), "late by 40 s"),
        (TimeDelta::minutes(12), "late by 12 min"),
        (TimeDelta::seconds(12 * 60 + 30), "late by 12 min"),
        (TimeDelta::minutes(125), "late by 2 h 5 min"),
        (TimeDelta::hours(2), "late by 2 h"),
        (TimeDelta::hours(27), "late by 1 day 3 h"),
        (TimeDelta::hours(48), "late by 2 days"),
        (TimeDelta::seconds(-5), "late by 0 s"),
    ];
    for (late, said) in cases {
        assert_eq!(say_lateness(late), said);
    }
}

#[test]
fn a_skipped_or_repeated_time_is_said_with_what_it_became() {
    let berlin = zone("Europe/Berlin");
    assert_eq!(
        say_shift(&resolve_local(berlin, wall("2025-03-30 02:30")), berlin).as_deref(),
        Some(
            "02:30 does not exist on Sun 30 Mar 2025 in Europe/Berlin (the clocks go forward), so it is 03:30"
        )
    );
    assert_eq!(
        say_shift(&resolve_local(berlin, wall("2025-10-26 02:30")), berlin).as_deref(),
        Some(
            "02:30 happens twice on Sun 26 Oct 2025 in Europe/Berlin (the clocks go back); it is the first, 02:30 CEST"
        )
    );
    assert_eq!(
        say_shift(&resolve_local(berlin, wall("2025-10-26 03:30")), berlin),
        None
    );
}

#[test]
fn recurrences_are_said_in_words() {
    let cases = [
        ("07:00", "daily", "every day at 07:00"),
        ("07:00", "weekdays", "every weekday at 07:00"),
        ("17:00", "weekly on thu", "every Thursday at 17:00"),
        (
            "17:00",
            "weekly on thu,mon",
            "every Monday and Thursday at 17:00",
        ),
        (
            "17:00",
            "weekly on mon,wed,fri",
            "every Monday, Wednesday and Friday at 17:00",
        ),
        ("09:00", "monthly on 15", "monthly on the 15th at 09:00"),
        ("09:00", "monthly on 1", "monthly on the 1st at 09:00"),
        ("09:00", "monthly on 2", "monthly on the 2nd at 09:00"),
        ("09:00", "monthly on 3", "monthly on the 3rd at 09:00"),
        ("09:00", "monthly on 11", "monthly on the 11th at 09:00"),
        ("09:00", "monthly on 12", "monthly on the 12th at 09:00"),
        ("09:00", "monthly on 13", "monthly on the 13th at 09:00"),
        ("09:00", "monthly on 22", "monthly on the 22nd at 09:00"),
        ("09:00", "monthly on 28", "monthly on the 28th at 09:00"),
        (
            "09:00",
            "monthly on 29",
            "monthly on the 29th (the last day in shorter months) at 09:00",
        ),
        (
            "09:00",
            "monthly on 31",
            "monthly on the 31st (the last day in shorter months) at 09:00",
        ),
        (
            "09:00",
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU",
            "every 2 weeks on Tuesday at 09:00",
        ),
        (
            "07:00",
            "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
            "every weekday at 07:00",
        ),
        ("09:00", "FREQ=WEEKLY", "every Wednesday at 09:00"),
        (
            "08:00",
            "FREQ=DAILY;BYDAY=MO,FR",
            "every Monday and Friday at 08:00",
        ),
        (
            "09:00",
            "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=6",
            "every month on the last day at 09:00, 6 times",
        ),
        (
            "09:00",
            "FREQ=MONTHLY;BYMONTHDAY=-2",
            "every month on the 2nd to last day at 09:00",
        ),
        (
            "09:00",
            "FREQ=MONTHLY;BYMONTHDAY=1,15",
            "every month on the 1st and the 15th at 09:00",
        ),
        (
            "09:00",
            "FREQ=MONTHLY;INTERVAL=3",
            "every 3 months on the 25th at 09:00",
        ),
        (
            "08:00",
            "FREQ=DAILY;UNTIL=20261231",
            "every day at 08:00, until Thu 31 Dec 2026",
        ),
        (
            "08:00",
            "FREQ=DAILY;UNTIL=20261231T230000Z",
            "every day at 08:00, until Fri 1 Jan 2027 00:00",
        ),
        (
            "08:00",
            "FREQ=DAILY;UNTIL=20261231T180000",
            "every day at 08:00, until Thu 31 Dec 2026 18:00",
        ),
        (
            "08:00",
            "FREQ=DAILY;INTERVAL=2;COUNT=1",
            "every 2 days at 08:00, once",
        ),
        ("08:00", "FREQ=YEARLY", "every year on 25 Nov at 08:00"),
        (
            "08:00",
            "FREQ=HOURLY;INTERVAL=2",
            "every 2 hours from 08:00",
        ),
        (
            "09:00",
            "FREQ=MONTHLY;BYDAY=1MO",
            "by the rule FREQ=MONTHLY;BYDAY=1MO, from 2026-11-25 at 09:00",
        ),
        (
            "08:00",
            "FREQ=DAILY;BYHOUR=8,20",
            "by the rule FREQ=DAILY;BYHOUR=8,20, from 2026-11-25 at 08:00",
        ),
    ];
    for (time, recurrence, said) in cases {
        // Wed 25 Nov 2026.
        let recurring = recurring("Europe/Berlin", &format!("2026-11-25 {time}"), recurrence);
        assert_eq!(
            say_recurrence(&recurring),
            format!("{said} (Europe/Berlin)"),
            "{recurrence}"
        );
    }
}
