use chrono::{NaiveDateTime, TimeZone, Timelike, Utc};

use crate::local_time::RecurrenceRule;

use super::*;
use crate::calendar::events::read_events;

fn berlin() -> ZoneName {
    ZoneName::parse("Europe/Berlin").unwrap()
}

fn budget() -> ExpansionBudget {
    ExpansionBudget::for_one_search()
}

fn weekly_swimming(extra: &str) -> Vec<EventData> {
    let text = format!(
        "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:swim\r\nDTSTART;TZID=Europe/Berlin:20261008T170000\r\nDTEND;TZID=Europe/Berlin:20261008T180000\r\nRRULE:FREQ=WEEKLY;BYDAY=TH\r\n{extra}SUMMARY:Swimming\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    );
    read_events(&text).unwrap()
}

#[test]
fn a_weekly_event_stays_at_its_local_time_across_the_dst_change() {
    // Clocks go back in Berlin on Sun 25 Oct 2026.
    let from = Utc.with_ymd_and_hms(2026, 10, 12, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 11, 9, 0, 0, 0).unwrap();
    let (found, not_expanded) = occurrences(&weekly_swimming(""), from, to, berlin(), &budget());
    assert_eq!(not_expanded, None);
    let local: Vec<String> = found
        .iter()
        .map(|o| {
            o.start
                .with_timezone(&berlin().tz())
                .format("%a %d %b %H:%M")
                .to_string()
        })
        .collect();
    assert_eq!(
        local,
        [
            "Thu 15 Oct 17:00",
            "Thu 22 Oct 17:00",
            "Thu 29 Oct 17:00",
            "Thu 05 Nov 17:00"
        ]
    );
    // In UTC the hour moves: 15:00 in summer time, 16:00 after.
    assert_eq!(found[1].start.hour(), 15);
    assert_eq!(found[2].start.hour(), 16);
    assert!(
        found
            .iter()
            .all(|o| o.end - o.start == TimeDelta::hours(1) && o.recurring)
    );
}

#[test]
fn exdates_are_left_out_and_a_changed_occurrence_takes_its_place() {
    let mut events = weekly_swimming("EXDATE;TZID=Europe/Berlin:20261029T170000\r\n");
    let changed = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:swim\r\nRECURRENCE-ID;TZID=Europe/Berlin:20261022T170000\r\nDTSTART;TZID=Europe/Berlin:20261022T183000\r\nDTEND;TZID=Europe/Berlin:20261022T193000\r\nSUMMARY:Swimming (late)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    events.extend(read_events(changed).unwrap());
    let from = Utc.with_ymd_and_hms(2026, 10, 19, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 11, 2, 0, 0, 0).unwrap();
    let (found, _) = occurrences(&events, from, to, berlin(), &budget());
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].event.summary, "Swimming (late)");
    assert_eq!(
        found[0]
            .start
            .with_timezone(&berlin().tz())
            .format("%H:%M")
            .to_string(),
        "18:30"
    );
}

#[test]
fn an_occurrence_going_on_at_the_range_start_is_found_and_the_first_always_counts() {
    // DTSTART on a Wednesday with BYDAY=TH: RFC 5545 counts the first time anyway.
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART;TZID=Europe/Berlin:20261007T230000\r\nDTEND;TZID=Europe/Berlin:20261008T010000\r\nRRULE:FREQ=WEEKLY;BYDAY=TH;COUNT=3\r\nSUMMARY:Night\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    let from = Utc.with_ymd_and_hms(2026, 10, 7, 22, 30, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
    let (found, _) = occurrences(&events, from, to, berlin(), &budget());
    let starts: Vec<NaiveDateTime> = found
        .iter()
        .map(|o| o.start.with_timezone(&berlin().tz()).naive_local())
        .collect();
    assert_eq!(starts.len(), 4, "{starts:?}");
    assert_eq!(starts[0].format("%a %H:%M").to_string(), "Wed 23:00");
}

#[test]
fn a_rule_hearth_cannot_expand_lists_the_first_time_and_says_why() {
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20261201T090000Z\r\nRRULE:FREQ=MINUTELY\r\nSUMMARY:Spam\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    let from = Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 12, 7, 0, 0, 0).unwrap();
    let (found, not_expanded) = occurrences(&events, from, to, berlin(), &budget());
    assert_eq!(found.len(), 1);
    assert_eq!(not_expanded.unwrap().summary, "Spam");
}

#[test]
fn an_all_day_event_covers_its_dates() {
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:h\r\nDTSTART;VALUE=DATE:20261221\r\nDTEND;VALUE=DATE:20261224\r\nSUMMARY:School holidays\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    let from = Utc.with_ymd_and_hms(2026, 12, 22, 12, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 12, 29, 0, 0, 0).unwrap();
    let (found, _) = occurrences(&events, from, to, berlin(), &budget());
    let (first, last) = found[0].all_day.unwrap();
    assert_eq!(first.to_string(), "2026-12-21");
    assert_eq!(last.to_string(), "2026-12-23");
}

/// What expanding did before each event was walked once: the rule asked for its next
/// time again and again, each answer walking the rule anew.
fn starts_asking_again_and_again(
    event: &EventData,
    rule: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    zone: ZoneName,
) -> Vec<DateTime<Utc>> {
    use crate::local_time::{Recurrence, RecurringTime};
    let (own_zone, wall) = match &event.start {
        EventTime::Zoned(wall, own) => (*own, *wall),
        EventTime::Floating(wall) => (zone, *wall),
        EventTime::Date(date) => (zone, date.and_time(Default::default())),
        EventTime::Utc(instant) => (ZoneName::from(chrono_tz::UTC), instant.naive_utc()),
    };
    let recurring = RecurringTime {
        zone: own_zone,
        start: wall,
        recurrence: Recurrence::Rrule(Box::new(RecurrenceRule::parse(rule).unwrap())),
    };
    let first = event.start.instant(zone);
    let mut starts = vec![first];
    let mut after = (from - event.length(zone) - TimeDelta::seconds(1)).max(first);
    while let Some(next) = recurring.next_after(after) {
        if next >= to || starts.len() >= MAX_OCCURRENCES_PER_EVENT {
            break;
        }
        if next != first {
            starts.push(next);
        }
        after = next;
    }
    starts
}

fn event_with(start: &str, rule: &str) -> EventData {
    let text = format!(
        "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:r\r\n{start}\r\nDURATION:PT45M\r\nRRULE:{rule}\r\nSUMMARY:Rule\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    );
    read_events(&text).unwrap().remove(0)
}

#[test]
fn one_walk_finds_the_times_asking_again_and_again_found() {
    let rules = [
        "FREQ=DAILY",
        "FREQ=DAILY;COUNT=40",
        "FREQ=DAILY;INTERVAL=3;COUNT=200",
        "FREQ=DAILY;UNTIL=20261115",
        "FREQ=DAILY;UNTIL=20261101T020000",
        "FREQ=DAILY;UNTIL=20261029T160000Z",
        "FREQ=WEEKLY;BYDAY=TU,TH",
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,SA;COUNT=30",
        "FREQ=WEEKLY;WKST=SU;INTERVAL=2;BYDAY=SU,MO",
        "FREQ=MONTHLY;BYMONTHDAY=31",
        "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=12",
        "FREQ=MONTHLY;BYDAY=-1FR",
        "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
        "FREQ=YEARLY;BYMONTH=3,10;BYDAY=-1SU",
        "FREQ=YEARLY;COUNT=5",
        "FREQ=HOURLY;INTERVAL=5;BYMINUTE=0,30",
        "FREQ=HOURLY;BYMINUTE=0,20,40;COUNT=600",
        "BYDAY=SA;FREQ=WEEKLY",
    ];
    let starts = [
        "DTSTART;TZID=Europe/Berlin:20260131T023000",
        "DTSTART;TZID=Europe/Berlin:20261025T023000",
        "DTSTART;TZID=America/New_York:20260308T021500",
        "DTSTART:20260301T120000Z",
        "DTSTART:20260315T083000",
        "DTSTART;VALUE=DATE:20260228",
    ];
    let zone = berlin();
    let origin = Utc.with_ymd_and_hms(2026, 1, 20, 0, 0, 0).unwrap();
    let mut compared = 0;
    for start in starts {
        for rule in rules {
            let event = event_with(start, rule);
            for step in 0..10 {
                let from = origin + TimeDelta::days(37 * step) + TimeDelta::hours(7 * step);
                for days in [1, 9, 40] {
                    let to = from + TimeDelta::days(days);
                    let before = starts_asking_again_and_again(&event, rule, from, to, zone);
                    let now = expand(&event, rule, from, to, zone, &budget()).unwrap();
                    assert_eq!(now, before, "{start} {rule} from {from} to {to}");
                    compared += now.len();
                }
            }
        }
    }
    assert!(compared > 10_000, "only {compared} times compared");
}

/// Every five minutes of every hour from 340 days ago, a hundred thousand times, with
/// `more` rule parts (`;BYDAY=...`).
fn costly_event(more: &str) -> Vec<EventData> {
    let start = (Utc::now() - TimeDelta::days(340)).format("%Y%m%dT%H0000Z");
    let minutes: Vec<String> = (0..60).step_by(5).map(|m| m.to_string()).collect();
    let text = format!(
        "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:costly\r\nDTSTART:{start}\r\nDURATION:PT5M\r\nRRULE:FREQ=HOURLY;BYMINUTE={}{more};COUNT=100000\r\nSUMMARY:Costly\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        minutes.join(",")
    );
    read_events(&text).unwrap()
}

/// The same times, but a rule whose COUNT is walked from its start: BYDAY with
/// FREQ=HOURLY is not moved on by whole periods.
fn costly_walked_event() -> Vec<EventData> {
    costly_event(";BYDAY=MO,TU,WE,TH,FR,SA,SU")
}

#[test]
fn a_hundred_thousand_times_every_five_minutes_are_counted_by_periods_and_listed() {
    let from = Utc::now();
    let to = from + TimeDelta::days(7);
    let (found, cut) = occurrences(&costly_event(""), from, to, berlin(), &budget());
    assert_eq!(cut, None);
    // The listed times include its first, 340 days back, outside the range.
    assert_eq!(found.len(), MAX_OCCURRENCES_PER_EVENT - 1);
    // The same times the walk from the start finds, given the room to walk them all.
    let large = ExpansionBudget {
        max_walked_per_event: 200_000,
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(600),
    };
    let (walked, cut) = occurrences(&costly_walked_event(), from, to, berlin(), &large);
    assert_eq!(cut, None);
    let starts = |found: &[Occurrence]| found.iter().map(|o| o.start).collect::<Vec<_>>();
    assert_eq!(starts(&found), starts(&walked));
}

#[test]
fn a_rule_walked_past_the_cap_is_listed_once_with_a_note() {
    let from = Utc::now();
    let to = from + TimeDelta::days(7);
    let (found, cut) = occurrences(&costly_walked_event(), from, to, berlin(), &budget());
    let cut = cut.expect("the rule is cut short");
    assert_eq!(cut.summary, "Costly");
    assert!(
        cut.reason
            .contains(&format!("more than {MAX_WALKED_PER_EVENT} of its times")),
        "{cut:?}"
    );
    // Its first time lies 340 days back, outside the range.
    assert!(found.is_empty(), "{found:?}");
    // A smaller cap cuts an ordinary rule as well; a larger one expands the costly rule.
    let small = ExpansionBudget {
        max_walked_per_event: 10,
        ..budget()
    };
    let daily = vec![event_with(
        "DTSTART:20200101T080000Z",
        "FREQ=DAILY;COUNT=1000",
    )];
    let in_2021 = Utc.with_ymd_and_hms(2021, 3, 1, 0, 0, 0).unwrap();
    let (_, cut) = occurrences(
        &daily,
        in_2021,
        in_2021 + TimeDelta::days(7),
        berlin(),
        &small,
    );
    assert!(cut.is_some_and(|cut| cut.reason.contains("more than 10 of its times")));
    let (found, cut) = occurrences(
        &daily,
        in_2021,
        in_2021 + TimeDelta::days(7),
        berlin(),
        &budget(),
    );
    assert_eq!((found.len(), cut), (7, None));
    let large = ExpansionBudget {
        max_walked_per_event: 200_000,
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(600),
    };
    let (found, cut) = occurrences(&costly_walked_event(), from, to, berlin(), &large);
    assert_eq!(cut, None);
    assert!(!found.is_empty());
}

#[test]
fn a_rule_still_walking_at_the_deadline_is_listed_once_with_a_note() {
    let spent = ExpansionBudget {
        max_walked_per_event: MAX_WALKED_PER_EVENT,
        deadline: std::time::Instant::now(),
    };
    let from = Utc::now();
    let (found, cut) = occurrences(
        &costly_walked_event(),
        from,
        from + TimeDelta::days(7),
        berlin(),
        &spent,
    );
    let cut = cut.expect("the rule is cut short");
    assert!(cut.reason.contains("took longer"), "{cut:?}");
    assert!(found.is_empty());
    // An event that needs only a few steps still expands after the deadline.
    let swim_from = Utc.with_ymd_and_hms(2026, 10, 12, 0, 0, 0).unwrap();
    let (found, cut) = occurrences(
        &weekly_swimming(""),
        swim_from,
        swim_from + TimeDelta::days(14),
        berlin(),
        &spent,
    );
    assert_eq!((found.len(), cut), (2, None));
}

#[test]
fn many_exdates_and_a_long_rule_stay_cheap_and_short() {
    let exdates: Vec<String> = (0..20_000)
        .map(|n| {
            (Utc.with_ymd_and_hms(2020, 1, 1, 10, 0, 0).unwrap() + TimeDelta::days(n))
                .format("%Y%m%dT%H%M%SZ")
                .to_string()
        })
        .collect();
    let mut events = weekly_swimming(&format!("EXDATE:{}\r\n", exdates.join(",")));
    assert_eq!(events[0].exdates.len(), 20_000);
    let from = Utc.with_ymd_and_hms(2026, 10, 12, 0, 0, 0).unwrap();
    let (found, _) = occurrences(
        &events,
        from,
        from + TimeDelta::days(366),
        berlin(),
        &budget(),
    );
    assert_eq!(found.len(), 52);
    events[0].rrule = Some(format!("FREQ=WEEKLY;X-NAME={}", "Y".repeat(5_000)));
    let (_, cut) = occurrences(
        &events,
        from,
        from + TimeDelta::days(7),
        berlin(),
        &budget(),
    );
    assert!(cut.unwrap().rule.chars().count() <= 121);
}

#[test]
fn a_counted_weekly_event_far_from_its_start_keeps_its_exdates_changes_and_local_time() {
    // From Wednesday 1 January 2025, Mondays and Thursdays at 08:30 Berlin, 150 times: the
    // 150th is Monday 8 June 2026. Thursday 26 March 2026 is taken out, Monday 30 March
    // (after the change to summer time on the 29th) moved to 10:00.
    let mut events = vec![event_with(
        "DTSTART;TZID=Europe/Berlin:20250101T083000\r\nEXDATE;TZID=Europe/Berlin:20260326T083000",
        "FREQ=WEEKLY;BYDAY=MO,TH;COUNT=150",
    )];
    events.extend(
        read_events(
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:r\r\nRECURRENCE-ID;TZID=Europe/Berlin:20260330T083000\r\nDTSTART;TZID=Europe/Berlin:20260330T100000\r\nDURATION:PT45M\r\nSUMMARY:Moved\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        )
        .unwrap(),
    );
    let starts = |from: (i32, u32, u32), to: (i32, u32, u32)| -> Vec<String> {
        let from = Utc
            .with_ymd_and_hms(from.0, from.1, from.2, 0, 0, 0)
            .unwrap();
        let to = Utc.with_ymd_and_hms(to.0, to.1, to.2, 0, 0, 0).unwrap();
        let (found, cut) = occurrences(&events, from, to, berlin(), &budget());
        assert_eq!(cut, None);
        found
            .iter()
            .map(|o| format!("{} {}", o.start.format("%m-%d %H:%MZ"), o.event.summary))
            .collect()
    };
    assert_eq!(
        starts((2026, 3, 20), (2026, 4, 6)),
        [
            "03-23 07:30Z Rule",
            "03-30 08:00Z Moved",
            "04-02 06:30Z Rule"
        ]
    );
    assert_eq!(
        starts((2026, 6, 1), (2026, 6, 20)),
        [
            "06-01 06:30Z Rule",
            "06-04 06:30Z Rule",
            "06-08 06:30Z Rule"
        ]
    );
    // The event's first time is its DTSTART, a Wednesday; its COUNT counts the rule's.
    assert_eq!(
        starts((2024, 12, 31), (2025, 1, 7)),
        [
            "01-01 07:30Z Rule",
            "01-02 07:30Z Rule",
            "01-06 07:30Z Rule"
        ]
    );
}
