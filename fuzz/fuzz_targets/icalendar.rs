//! A calendar object as a subscribed feed or a CalDAV server hands it to hearth, read
//! through hearth's own calendar path: `hearth::calendar::read_events` (the bounds checked
//! before `icalendar`'s parser), each event written again as the calendar tools write it
//! (`hearth::fuzzing::new_event_text`, `changed_event_text`), and a search's reading and
//! expansion (`hearth::calendar::read_and_expand`).
//!
//! Input: the `.ics` text.
//!
//! Properties: no input panics or overflows the stack; the text is refused in words or
//! read; each event read, written as a new event and read again, is the same event; the
//! calendar written over with its main event's own fields reads the same (an event that
//! had no UID gets one, as RFC 5545 requires); a search of the
//! year from the first event's start finds occurrences sorted, inside the range, at most
//! `MAX_KEPT`, no problem for a calendar
//! that reads, and ends within the expansion's time budget (plus the reading's time).
#![no_main]

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use hearth::calendar::{
    EventData, ExpansionBudget, Fetched, MAX_KEPT, MAX_WALKED_PER_EVENT, ReadCache,
    SEARCH_EXPANSION_TIME, SearchRange, read_and_expand, read_events,
};
use hearth::fuzzing::{EventFields, changed_event_text, new_event_text};
use hearth::local_time::ZoneName;
use libfuzzer_sys::fuzz_target;

/// How much longer than the expansion's budget a search may take: the reading of the
/// text, which is linear and bounded before the parser, and a loaded machine's slack.
const READING_ALLOWANCE: Duration = Duration::from_secs(2);

fn zone() -> ZoneName {
    ZoneName::parse("Europe/Berlin").expect("a zone")
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 9, 30, 0).unwrap()
}

fn fields_of(event: &EventData) -> EventFields {
    EventFields {
        summary: event.summary.clone(),
        location: event.location.clone(),
        description: event.description.clone(),
        start: event.start.clone(),
        end: event.end.clone(),
        rrule: event.rrule.clone(),
    }
}

/// The event as a new calendar object holds it: the same fields, no exclusions, not a
/// changed occurrence.
fn as_new(event: &EventData) -> EventData {
    EventData {
        exdates: Vec::new(),
        recurrence_id: None,
        ..event.clone()
    }
}

fn check_rewritten(event: &EventData) {
    let uid = if event.uid.is_empty() {
        "fuzz-uid"
    } else {
        &event.uid
    };
    let written = new_event_text(uid, &fields_of(event), now());
    let read = read_events(&written).unwrap_or_else(|error| {
        panic!("hearth's own text of {event:?} is refused ({error}):\n{written}")
    });
    let expected = EventData {
        uid: uid.to_owned(),
        ..as_new(event)
    };
    assert_eq!(
        read,
        vec![expected],
        "written as a new event and read again, the event differs:\n{written}"
    );
}

fn check_changed_in_place(text: &str, events: &[EventData]) {
    let Some(main) = events.iter().find(|event| event.recurrence_id.is_none()) else {
        return;
    };
    let Ok(written) = changed_event_text(text, &fields_of(main), now()) else {
        return;
    };
    let read = read_events(&written).unwrap_or_else(|error| {
        panic!("the calendar written over is refused ({error}):\n{written}")
    });
    // The tools change the first VEVENT without a RECURRENCE-ID; one without a start is
    // not read at all, and written over it is read as one more event.
    if read.len() != events.len() {
        return;
    }
    // An event without a UID is written with one, as RFC 5545 requires; nothing else of
    // it changes.
    let expected: Vec<EventData> = events
        .iter()
        .zip(&read)
        .map(
            |(event, read)| match event.uid.is_empty() && !read.uid.is_empty() {
                true => EventData {
                    uid: read.uid.clone(),
                    ..event.clone()
                },
                false => event.clone(),
            },
        )
        .collect();
    assert_eq!(
        read, expected,
        "written over with its own fields, the calendar reads otherwise:\n{written}"
    );
}

fn check_search(text: &str, events: &[EventData]) {
    let zone = zone();
    let Some(first) = events.first() else {
        return;
    };
    let start = first.start.instant(zone);
    let (Some(from), Some(to)) = (
        start.checked_sub_signed(TimeDelta::days(1)),
        start.checked_add_signed(TimeDelta::days(366)),
    ) else {
        return;
    };
    let range = SearchRange {
        from,
        to,
        zone,
        words: Vec::new(),
    };
    let began = Instant::now();
    let budget = ExpansionBudget {
        max_walked_per_event: MAX_WALKED_PER_EVENT,
        deadline: began + SEARCH_EXPANSION_TIME,
    };
    let fetched = vec![Fetched {
        calendar: "fuzzed".into(),
        text: text.to_owned(),
        resource: None,
    }];
    // A fresh cache: the text is read, not found among earlier inputs' readings.
    let searched = read_and_expand(fetched, &range, &budget, &ReadCache::default());
    let took = began.elapsed();
    assert!(
        took <= SEARCH_EXPANSION_TIME + READING_ALLOWANCE,
        "the search took {took:?}"
    );
    assert!(
        searched.problems.is_empty(),
        "a calendar that reads gave problems: {:?}",
        searched.problems
    );
    assert!(searched.found.len() <= MAX_KEPT);
    for pair in searched.found.windows(2) {
        assert!(pair[0].occurrence.start <= pair[1].occurrence.start);
    }
    for found in &searched.found {
        let occurrence = &found.occurrence;
        assert!(occurrence.start < to, "{occurrence:?} starts after {to}");
        assert!(
            occurrence.end > from || occurrence.start >= from,
            "{occurrence:?} is over before {from}"
        );
        assert!(occurrence.end >= occurrence.start, "{occurrence:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let events = match read_events(text) {
        Ok(events) => events,
        Err(error) => {
            assert!(
                !error.to_string().trim().is_empty(),
                "refused without a reason"
            );
            return;
        }
    };
    for event in &events {
        check_rewritten(event);
    }
    check_changed_in_place(text, &events);
    check_search(text, &events);
});
