use chrono::{NaiveDateTime, TimeZone, Timelike, Utc};

use super::*;
use crate::calendar::events::read_events;

fn berlin() -> ZoneName {
    ZoneName::parse("Europe/Berlin").unwrap()
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
    let (found, not_expanded) = occurrences(&weekly_swimming(""), from, to, berlin());
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
    let (found, _) = occurrences(&events, from, to, berlin());
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
    let (found, _) = occurrences(&events, from, to, berlin());
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
    let (found, not_expanded) = occurrences(&events, from, to, berlin());
    assert_eq!(found.len(), 1);
    assert_eq!(not_expanded.unwrap().summary, "Spam");
}

#[test]
fn an_all_day_event_covers_its_dates() {
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:h\r\nDTSTART;VALUE=DATE:20261221\r\nDTEND;VALUE=DATE:20261224\r\nSUMMARY:School holidays\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    let from = Utc.with_ymd_and_hms(2026, 12, 22, 12, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 12, 29, 0, 0, 0).unwrap();
    let (found, _) = occurrences(&events, from, to, berlin());
    let (first, last) = found[0].all_day.unwrap();
    assert_eq!(first.to_string(), "2026-12-21");
    assert_eq!(last.to_string(), "2026-12-23");
}
