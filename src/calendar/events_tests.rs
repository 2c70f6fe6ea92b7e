use chrono::{NaiveDate, TimeZone, Utc};

use super::*;

fn berlin() -> ZoneName {
    ZoneName::parse("Europe/Berlin").unwrap()
}

fn wall(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
}

const FROM_ANOTHER_CLIENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Other//EN\r\nBEGIN:VEVENT\r\nUID:abc@other\r\nDTSTAMP:20261101T100000Z\r\nDTSTART;TZID=/mozilla.org/20050126_1/Europe/Berlin:20261015T170000\r\nDURATION:PT90M\r\nRRULE:FREQ=WEEKLY;BYDAY=TH\r\nEXDATE;TZID=Europe/Berlin:20261029T170000,20261105T170000\r\nSUMMARY:Swimming\r\nLOCATION:City pool\r\nX-OTHER-CLIENT:keep me\r\nSEQUENCE:3\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:Pack towels\r\nTRIGGER:-PT30M\r\nEND:VALARM\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:abc@other\r\nRECURRENCE-ID;TZID=Europe/Berlin:20261022T170000\r\nDTSTART;TZID=Europe/Berlin:20261022T180000\r\nDTEND;TZID=Europe/Berlin:20261022T190000\r\nSUMMARY:Swimming (late)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

#[test]
fn another_clients_event_is_read_with_its_zone_duration_exdates_and_changed_occurrence() {
    let events = read_events(FROM_ANOTHER_CLIENT).unwrap();
    assert_eq!(events.len(), 2);
    let main = &events[0];
    assert_eq!(main.summary, "Swimming");
    assert_eq!(main.location.as_deref(), Some("City pool"));
    assert_eq!(
        main.start,
        EventTime::Zoned(wall("2026-10-15 17:00"), berlin())
    );
    assert_eq!(
        main.end,
        EventTime::Zoned(wall("2026-10-15 18:30"), berlin())
    );
    assert_eq!(main.rrule.as_deref(), Some("FREQ=WEEKLY;BYDAY=TH"));
    assert_eq!(
        main.exdates,
        vec![
            EventTime::Zoned(wall("2026-10-29 17:00"), berlin()),
            EventTime::Zoned(wall("2026-11-05 17:00"), berlin())
        ]
    );
    assert_eq!(
        events[1].recurrence_id,
        Some(EventTime::Zoned(wall("2026-10-22 17:00"), berlin()))
    );
}

#[test]
fn line_feeds_carriage_returns_and_folds_read_to_the_same_events() {
    let crlf = read_events(FROM_ANOTHER_CLIENT).unwrap();
    let lf = read_events(&FROM_ANOTHER_CLIENT.replace("\r\n", "\n")).unwrap();
    assert_eq!(lf, crlf);
    let folded = FROM_ANOTHER_CLIENT
        .replace("SUMMARY:Swimming\r\n", "SUMMARY:Swim\n ming\r\n")
        .replace("LOCATION:City pool", "LOCATION:City\r\n  pool");
    assert_eq!(read_events(&folded).unwrap(), crlf);
    // No value keeps a carriage return, and a text without a final line end reads whole.
    for event in &crlf {
        assert!(!format!("{event:?}").contains('\r'), "{event:?}");
    }
    let unended = FROM_ANOTHER_CLIENT.trim_end_matches("\r\n");
    assert_eq!(read_events(unended).unwrap(), crlf);
}

#[test]
fn all_day_utc_and_floating_times_resolve_as_the_calendar_means_them() {
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART;VALUE=DATE:20261224\r\nSUMMARY:Christmas Eve\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\nDTSTART:20261201T140000Z\r\nDTEND:20261201T150000Z\r\nSUMMARY:Call\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:c\r\nDTSTART:20261201T090000\r\nSUMMARY:Floating\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    let day = NaiveDate::from_ymd_opt(2026, 12, 24).unwrap();
    assert_eq!(events[0].start, EventTime::Date(day));
    assert_eq!(events[0].end, EventTime::Date(day.succ_opt().unwrap()));
    assert_eq!(events[0].length(berlin()), TimeDelta::days(1));
    assert_eq!(
        events[1].start.instant(berlin()),
        Utc.with_ymd_and_hms(2026, 12, 1, 14, 0, 0).unwrap()
    );
    // Floating: 09:00 on the member's clock.
    assert_eq!(
        events[2].start.instant(berlin()),
        Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
    );
    assert_eq!(events[2].end, events[2].start);
}

#[test]
fn what_is_not_icalendar_is_refused_in_words() {
    let error = read_events("<html>").unwrap_err().to_string();
    assert!(error.starts_with("not an iCalendar object"), "{error}");
}

#[test]
fn a_calendar_nested_deeper_than_the_bound_is_refused_before_the_parser_sees_it() {
    // Twelve thousand levels overflowed the parser's stack and aborted the process.
    let levels = 12_000;
    let text = "BEGIN:VCALENDAR\r\n".repeat(levels) + "END:VCALENDAR\r\n".repeat(levels).as_str();
    let error = read_events(&text).unwrap_err();
    assert!(
        matches!(error, ReadError::Refused(Refused::TooDeep { .. })),
        "{error}"
    );
    assert!(changed_event_text(&text, &fields(), Utc::now()).is_err());
    // Folded lines and mixed line ends are read as before.
    let folded = FROM_ANOTHER_CLIENT
        .replace("SUMMARY:Swimming\r\n", "SUMMARY:Swim\r\n ming\r\n")
        .replace("LOCATION:City pool\r\n", "LOCATION:City pool\n");
    assert_eq!(
        read_events(&folded).unwrap(),
        read_events(FROM_ANOTHER_CLIENT).unwrap()
    );
}

fn fields() -> EventFields {
    EventFields {
        summary: "Dentist; Max, 2nd".into(),
        location: None,
        description: None,
        start: EventTime::Zoned(wall("2026-12-01 15:00"), berlin()),
        end: EventTime::Zoned(wall("2026-12-01 16:00"), berlin()),
        rrule: None,
    }
}

#[test]
fn a_new_event_reads_back_as_written() {
    let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
    let text = new_event_text("hearth-1", &fields(), now);
    let events = read_events(&text).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].uid, "hearth-1");
    assert_eq!(events[0].summary, "Dentist; Max, 2nd");
    assert_eq!(events[0].start, fields().start);
    assert_eq!(events[0].end, fields().end);
    assert!(
        text.contains("PRODID:-//hearth//family assistant//EN"),
        "{text}"
    );
    assert_eq!(text.matches("PRODID").count(), 1, "{text}");
    assert_eq!(text.matches("VERSION:2.0").count(), 1, "{text}");
}

#[test]
fn a_change_keeps_what_another_client_stored_and_counts_the_sequence_up() {
    let now = Utc.with_ymd_and_hms(2026, 11, 26, 12, 0, 0).unwrap();
    let mut changed = fields();
    changed.rrule = Some("FREQ=WEEKLY;BYDAY=TU".into());
    let text = changed_event_text(FROM_ANOTHER_CLIENT, &changed, now).unwrap();
    assert!(text.contains("X-OTHER-CLIENT:keep me"), "{text}");
    assert!(text.contains("Pack towels"), "{text}");
    assert!(text.contains("SEQUENCE:4"), "{text}");
    assert!(!text.contains("DURATION"), "{text}");
    let events = read_events(&text).unwrap();
    assert_eq!(events[0].uid, "abc@other");
    assert_eq!(events[0].summary, "Dentist; Max, 2nd");
    assert_eq!(events[0].location, None);
    assert_eq!(events[0].rrule.as_deref(), Some("FREQ=WEEKLY;BYDAY=TU"));
    // The changed occurrence is still there, untouched.
    assert_eq!(events[1].summary, "Swimming (late)");
}

#[test]
fn an_event_whose_text_would_not_read_again_is_left_as_it_is() {
    // Found by the fuzz target `icalendar`: a parameter value holding quotes, which
    // `icalendar` reads but writes back quoted around them, unreadable.
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:q\r\nDTSTART:20261203T100000Z\r\nSUMMARY:Dentist\r\nATTENDEE;CN=\"Alice, Mum\";ROLE=CHAI=\"Alice, Mum\"R:mailto:a@example.org\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    assert_eq!(events[0].summary, "Dentist");
    let error = changed_event_text(text, &fields(), Utc::now()).unwrap_err();
    assert!(error.contains("cannot be read again"), "{error}");
}

#[test]
fn an_event_without_a_uid_is_written_over_with_one_and_otherwise_the_same() {
    // Found by the fuzz target `icalendar`: an event with no UID (a line that only looks
    // like one) read back, written over, with a UID. RFC 5545 requires one; `icalendar`
    // writes a fresh one, and the event keeps everything else it said.
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUIXXXXRT;TZID=America/New_York:20261231T22000D:y1\r\nDTSTART;VALUE=DATE:20240229\r\nRRULE:FREQ=YEARLY\r\nSUMMARY:Leap birthday\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    assert_eq!(events[0].uid, "");
    let main = &events[0];
    let own_fields = EventFields {
        summary: main.summary.clone(),
        location: main.location.clone(),
        description: main.description.clone(),
        start: main.start.clone(),
        end: main.end.clone(),
        rrule: main.rrule.clone(),
    };
    let written = changed_event_text(text, &own_fields, Utc::now()).unwrap();
    let read = read_events(&written).unwrap();
    assert_eq!(read.len(), 1);
    assert!(!read[0].uid.is_empty(), "{written}");
    assert_eq!(
        read[0],
        EventData {
            uid: read[0].uid.clone(),
            ..main.clone()
        }
    );
}

#[test]
fn a_rule_whose_value_repeats_its_name_reads_as_the_rule_hearth_writes_back() {
    // Found by the fuzz target `icalendar`: `RRULE:RRULE:FREQ=...` read with the name in
    // its value, written back without it, and so read back otherwise.
    let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:m1\r\nDTSTART:20261231T220000Z\r\nRRULE:RRULE:FREQ=MONTHLY;BYMONTHDAY=31;COUNT=12\r\nSUMMARY:Month end\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let events = read_events(text).unwrap();
    assert_eq!(
        events[0].rrule.as_deref(),
        Some("FREQ=MONTHLY;BYMONTHDAY=31;COUNT=12")
    );
}
