use chrono::{TimeDelta, TimeZone, Utc};

use super::*;
use crate::calendar::read_cache::ReadCache;

fn berlin() -> ZoneName {
    ZoneName::parse("Europe/Berlin").unwrap()
}

fn range(words: &[&str]) -> SearchRange {
    let from = Utc.with_ymd_and_hms(2026, 10, 12, 0, 0, 0).unwrap();
    SearchRange {
        from,
        to: from + TimeDelta::days(14),
        zone: berlin(),
        words: words.iter().map(|word| word.to_string()).collect(),
    }
}

fn subscription(name: &str, text: String) -> Fetched {
    Fetched {
        calendar: name.to_owned(),
        text,
        resource: None,
    }
}

fn holidays(events: &str) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nX-WR-CALNAME:School holidays\r\n{events}END:VCALENDAR\r\n"
    )
}

fn event(uid: &str, summary: &str, start: &str, extra: &str) -> String {
    format!(
        "BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTART;TZID=Europe/Berlin:{start}\r\nDURATION:PT1H\r\n{extra}SUMMARY:{summary}\r\nEND:VEVENT\r\n"
    )
}

fn nested(levels: usize) -> String {
    "BEGIN:VCALENDAR\r\n".repeat(levels) + "END:VCALENDAR\r\n".repeat(levels).as_str()
}

#[test]
fn a_calendar_nested_too_deep_is_a_problem_naming_it_and_the_others_are_read() {
    let fetched = vec![
        subscription("feed.example", nested(12_000)),
        subscription(
            "school.example",
            holidays(&event("a", "Swimming", "20261015T170000", "")),
        ),
    ];
    let searched = read_and_expand(
        fetched,
        &range(&[]),
        &ExpansionBudget::for_one_search(),
        &ReadCache::default(),
    );
    assert_eq!(searched.found.len(), 1);
    assert_eq!(searched.found[0].calendar, "School holidays");
    assert_eq!(searched.problems.len(), 1, "{:?}", searched.problems);
    assert!(
        searched.problems[0].starts_with("feed.example: the calendar could not be read (")
            && searched.problems[0].contains("nested more than 8 deep"),
        "{:?}",
        searched.problems
    );
}

#[test]
fn one_event_of_a_caldav_calendar_that_cannot_be_read_is_named_as_an_event() {
    let url = Url::parse("http://127.0.0.1:5232/alice/family/x.ics").unwrap();
    let fetched = vec![Fetched {
        calendar: "Family".into(),
        text: "not a calendar".into(),
        resource: Some((url, Some("\"1\"".into()))),
    }];
    let searched = read_and_expand(
        fetched,
        &range(&[]),
        &ExpansionBudget::for_one_search(),
        &ReadCache::default(),
    );
    assert!(
        searched.problems[0].starts_with("Family: an event could not be read (not an iCalendar"),
        "{:?}",
        searched.problems
    );
}

#[test]
fn a_changed_occurrence_anywhere_in_the_feed_joins_its_event_and_words_filter() {
    let text = holidays(&format!(
        "{}{}{}",
        event(
            "swim",
            "Swimming",
            "20261008T170000",
            "RRULE:FREQ=WEEKLY;BYDAY=TH\r\n"
        ),
        event(
            "piano",
            "Piano",
            "20261014T150000",
            "LOCATION:Music school\r\n"
        ),
        event(
            "swim",
            "Swimming (late)",
            "20261015T183000",
            "RECURRENCE-ID;TZID=Europe/Berlin:20261015T170000\r\n"
        ),
    ));
    let budget = ExpansionBudget::for_one_search();
    // The three searches share one cache: the text is read once and searched three times.
    let cache = ReadCache::default();
    let all = read_and_expand(
        vec![subscription("s", text.clone())],
        &range(&[]),
        &budget,
        &cache,
    );
    let said: Vec<&str> = all
        .found
        .iter()
        .map(|found| found.occurrence.event.summary.as_str())
        .collect();
    assert_eq!(said, ["Piano", "Swimming (late)", "Swimming"]);
    let music = read_and_expand(
        vec![subscription("s", text.clone())],
        &range(&["music"]),
        &budget,
        &cache,
    );
    assert_eq!(music.found.len(), 1);
    let late = read_and_expand(
        vec![subscription("s", text)],
        &range(&["late"]),
        &budget,
        &cache,
    );
    assert_eq!(cache.size().0, 1);
    assert_eq!(late.found[0].occurrence.event.summary, "Swimming (late)");
}

#[test]
fn only_the_earliest_occurrences_are_kept_and_the_rest_counted() {
    // 300 daily events: 14 days of each is 4,200 occurrences.
    let events: String = (0..300)
        .map(|n| {
            event(
                &format!("e{n}"),
                &format!("Event {n}"),
                &format!("20261001T{:02}{:02}00", n / 60 % 24, n % 60),
                "RRULE:FREQ=DAILY\r\n",
            )
        })
        .collect();
    let text = holidays(&events);
    let searched = read_and_expand(
        vec![subscription("s", text.clone())],
        &range(&[]),
        &ExpansionBudget::for_one_search(),
        &ReadCache::default(),
    );
    let asked = range(&[]);
    let mut every: Vec<_> = read_events(&text)
        .unwrap()
        .into_iter()
        .flat_map(|event| {
            let budget = ExpansionBudget::for_one_search();
            occurrences(&[event], asked.from, asked.to, asked.zone, &budget).0
        })
        .map(|occurrence| occurrence.start)
        .collect();
    every.sort();
    assert!(every.len() > 4_000);
    assert_eq!(searched.found.len(), MAX_KEPT);
    assert_eq!(searched.more, every.len() - MAX_KEPT);
    let kept: Vec<_> = searched.found.iter().map(|f| f.occurrence.start).collect();
    assert_eq!(kept, every[..MAX_KEPT]);
}

#[test]
fn work_on_the_blocking_pool_that_panics_or_runs_long_is_an_error() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let panicked = off_the_actors_thread("reading", Duration::from_secs(5), || -> () {
            panic!("a parser's bug")
        })
        .await;
        assert_eq!(panicked, Err(OffThreadError::Failed { what: "reading" }));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let long = off_the_actors_thread("reading", Duration::from_millis(50), move || {
            let _ = wait.recv_timeout(Duration::from_secs(5));
        })
        .await;
        assert_eq!(
            long.unwrap_err().to_string(),
            "reading took longer than 0.05 s"
        );
        drop(release);
        let answered = off_the_actors_thread("reading", Duration::from_secs(5), || 42).await;
        assert_eq!(answered, Ok(42));
    });
}
