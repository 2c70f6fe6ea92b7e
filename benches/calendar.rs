//! The calendar benchmark: one subscribed calendar of 500 events served over loopback HTTP
//! (450 single events across two years, 50 recurring ones with COUNT or UNTIL running over
//! those two years: daily, weekly, monthly, some with EXDATEs and a changed occurrence)
//! plus two hostile events from 340 days ago, `FREQ=HOURLY;BYMINUTE=0,5,...,55;COUNT=100000`
//! (counted by whole periods, so expanded) and the same with `BYDAY` (walked from its start
//! to the cap at every search); then searches of varied ranges (a day to a year, some for
//! words) through `ProfileCalendars::search`, in process, one at a time: the fetch, the
//! reading and the expansion on the blocking pool, as a member's search runs them.
//!
//! Two rows: cold searches, each by a new `ProfileCalendars` whose cache of readings is
//! empty (the fetched text parsed, as at a profile's first search or after the feed
//! changed), and warm searches by one `ProfileCalendars` (the same text fetched again is
//! not parsed again). The target is on the warm row; the cold row and the time to read the
//! text alone are printed beside it.
//!
//! Run with `cargo bench --bench calendar`. `HEARTH_BENCH_SEARCHES` (default 300) sets the
//! number of warm searches, `HEARTH_BENCH_COLD_SEARCHES` (default 30) the cold ones,
//! `HEARTH_BENCH_SEED` picks other ranges. Prints each row's latency as p50/p99/max beside
//! the target, and exits non-zero when the warm p99 misses it.
//!
//! Measured on the 2-core machine, quiet: cold p50 8.5 ms / p99 11.3 ms, warm p50 5.1 ms /
//! p99 7.7 ms, reading the 101 KB text alone 3.2 ms (before CRLF line ends, the cache of
//! readings and counted rules: p50 79 ms / p99 82 ms, with one hostile rule).

#[path = "../tests/support/background_server.rs"]
mod background_server;
#[path = "../tests/support/calendar_server.rs"]
mod calendar_server;
#[path = "../tests/support/measure.rs"]
mod measure;

use std::sync::Arc;
use std::time::{Duration, Instant};

use calendar_server::CalendarServer;
use chrono::{DateTime, TimeDelta, Utc};
use hearth::calendar::{ProfileCalendars, SearchRange, read_events};
use hearth::config::CalendarConfig;
use hearth::local_time::ZoneName;
use hearth::readiness::Readiness;
use measure::{env_number, percentile, verdict};

const TARGET_P99_MS: f64 = 50.0;
const EVENTS: usize = 500;
const RECURRING: usize = 50;

const TITLES: &[&str] = &[
    "Dentist",
    "Swimming",
    "Piano lesson",
    "Parents' evening",
    "Football training",
    "Birthday party",
    "School trip",
    "Doctor",
    "Book club",
    "Car service",
    "Grandma's visit",
    "Ballet",
];
const PLACES: &[&str] = &["City pool", "Music school", "Town hall", "Clinic", ""];

/// The same seed serves the same calendar and asks the same searches.
type Seeded = fastrand::Rng;

fn pick<'a>(seeded: &mut Seeded, from: &[&'a str]) -> &'a str {
    from[seeded.usize(..from.len())]
}

fn compact(instant: DateTime<Utc>) -> String {
    instant.format("%Y%m%dT%H%M%SZ").to_string()
}

/// One VEVENT: `lines` after its UID, DTSTART, DURATION and SUMMARY.
fn vevent(uid: &str, start: DateTime<Utc>, minutes: i64, summary: &str, lines: &str) -> String {
    format!(
        "BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:{}\r\nDURATION:PT{minutes}M\r\nSUMMARY:{summary}\r\n{lines}END:VEVENT\r\n",
        compact(start)
    )
}

/// The calendar: events from a year ago to a year ahead of `now`, and the hostile one.
fn calendar_text(now: DateTime<Utc>, seeded: &mut Seeded) -> String {
    let year_ago = now - TimeDelta::days(365);
    let mut text = String::from(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Bench//EN\r\nX-WR-CALNAME:Family\r\n",
    );
    for n in 0..EVENTS - RECURRING {
        let start = year_ago
            + TimeDelta::days(seeded.usize(..730) as i64)
            + TimeDelta::minutes(15 * seeded.usize(..96) as i64);
        let place = pick(seeded, PLACES);
        let location = match place.is_empty() {
            true => String::new(),
            false => format!("LOCATION:{place}\r\n"),
        };
        let alarm = "BEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:-PT30M\r\nEND:VALARM\r\n";
        text.push_str(&vevent(
            &format!("single-{n}"),
            start,
            30 + 15 * seeded.usize(..8) as i64,
            pick(seeded, TITLES),
            &format!("{location}{alarm}"),
        ));
    }
    let until = compact(now + TimeDelta::days(365));
    for n in 0..RECURRING {
        let start = year_ago + TimeDelta::hours(7 + seeded.usize(..24 * 30) as i64);
        let rule = match n % 5 {
            0 => "FREQ=DAILY;COUNT=730".to_owned(),
            1 => "FREQ=WEEKLY;BYDAY=MO,TH;COUNT=208".to_owned(),
            2 => "FREQ=MONTHLY;BYMONTHDAY=15;COUNT=24".to_owned(),
            3 => format!("FREQ=WEEKLY;INTERVAL=2;BYDAY=SA;UNTIL={until}"),
            _ => format!("FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR;UNTIL={until}"),
        };
        let uid = format!("recurring-{n}");
        let exdate = compact(start + TimeDelta::days(14));
        text.push_str(&vevent(
            &uid,
            start,
            60,
            pick(seeded, TITLES),
            &format!("RRULE:{rule}\r\nEXDATE:{exdate}\r\n"),
        ));
        if n % 10 == 0 {
            // One of its times moved by an hour.
            let moved = start + TimeDelta::days(7);
            text.push_str(&vevent(
                &uid,
                moved + TimeDelta::hours(1),
                60,
                "Moved",
                &format!("RECURRENCE-ID:{}\r\n", compact(moved)),
            ));
        }
    }
    let minutes: Vec<String> = (0..60).step_by(5).map(|m| m.to_string()).collect();
    let hostile_start = (now - TimeDelta::days(340))
        .format("%Y%m%dT%H0000Z")
        .to_string();
    for (uid, days) in [
        ("hostile", ""),
        ("hostile-walked", ";BYDAY=MO,TU,WE,TH,FR,SA,SU"),
    ] {
        text.push_str(&format!(
            "BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTART:{hostile_start}\r\nDURATION:PT5M\r\nRRULE:FREQ=HOURLY;BYMINUTE={}{days};COUNT=100000\r\nSUMMARY:Every five minutes\r\nEND:VEVENT\r\n",
            minutes.join(",")
        ));
    }
    text.push_str("END:VCALENDAR\r\n");
    text
}

/// A search a member might ask: a day, a week, two weeks, a month or a year, somewhere in
/// the two years, sometimes for words.
fn asked(now: DateTime<Utc>, zone: ZoneName, seeded: &mut Seeded) -> SearchRange {
    let days = [1, 7, 7, 14, 31, 366][seeded.usize(..6)];
    let from = now - TimeDelta::days(365) + TimeDelta::days(seeded.usize(..730 - days) as i64);
    let words = match seeded.usize(..4) {
        0 => vec![
            pick(seeded, TITLES)
                .split(' ')
                .next()
                .unwrap_or("x")
                .to_lowercase(),
        ],
        _ => Vec::new(),
    };
    SearchRange {
        from,
        to: from + TimeDelta::days(days as i64),
        zone,
        words,
    }
}

/// One search's latency, after checking that it read the calendar; what it found and how
/// many hostile events it cut short are added up.
async fn timed_search(
    calendars: &ProfileCalendars,
    range: SearchRange,
    tally: &mut (usize, usize),
) -> Duration {
    let started = Instant::now();
    let searched = calendars.search(range).await.expect("the calendar is read");
    let took = started.elapsed();
    assert!(
        searched.problems.is_empty(),
        "the calendar is read: {:?}",
        searched.problems
    );
    tally.0 += searched.found.len() + searched.more;
    tally.1 += searched
        .not_expanded
        .iter()
        .filter(|note| note.summary == "Every five minutes")
        .count();
    took
}

/// p50, p99 and max of `latencies` in words, and the p99.
fn row(latencies: &mut [Duration]) -> (String, f64) {
    latencies.sort_unstable();
    let p99 = percentile(latencies, 0.99);
    let said = format!(
        "p50 {:.2} ms, p99 {p99:.2} ms, max {:.2} ms",
        percentile(latencies, 0.5),
        percentile(latencies, 1.0)
    );
    (said, p99)
}

fn main() {
    let searches = env_number("HEARTH_BENCH_SEARCHES", 300);
    let cold_searches = env_number("HEARTH_BENCH_COLD_SEARCHES", 30).max(1);
    let seed = env_number("HEARTH_BENCH_SEED", 20_261_204) as u64;
    let mut seeded = Seeded::with_seed(seed);
    let now = Utc::now();
    let text = calendar_text(now, &mut seeded);
    println!(
        "calendar benchmark: {EVENTS} events ({RECURRING} recurring) and two hostile ones, {} KB, {cold_searches} cold and {searches} warm searches, seed {seed}",
        text.len() / 1024
    );
    let mut reading: Vec<Duration> = (0..5)
        .map(|_| {
            let started = Instant::now();
            let events = read_events(&text).expect("the calendar reads");
            assert_eq!(events.len(), EVENTS + RECURRING / 10 + 2);
            started.elapsed()
        })
        .collect();
    let server = CalendarServer::feed(text);
    let config = CalendarConfig {
        caldav: None,
        ical_urls: vec![server.url("/family.ics")],
    };
    let readiness = Arc::new(Readiness::default());
    let profile = || ProfileCalendars::new("bench", &config, None, Arc::clone(&readiness));
    let zone = ZoneName::parse("Europe/Berlin").expect("a zone");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");

    let mut cold: Vec<Duration> = Vec::with_capacity(cold_searches);
    let mut warm: Vec<Duration> = Vec::with_capacity(searches);
    let mut cold_tally = (0usize, 0usize);
    let mut tally = (0usize, 0usize);
    runtime.block_on(async {
        // One search first, so connections and the zone's tables are warm.
        profile()
            .search(asked(now, zone, &mut seeded))
            .await
            .expect("the calendar is read");
        for _ in 0..cold_searches {
            let range = asked(now, zone, &mut seeded);
            cold.push(timed_search(&profile(), range, &mut cold_tally).await);
        }
        let calendars = profile();
        calendars
            .search(asked(now, zone, &mut seeded))
            .await
            .expect("the calendar is read");
        for _ in 0..searches {
            let range = asked(now, zone, &mut seeded);
            warm.push(timed_search(&calendars, range, &mut tally).await);
        }
    });
    drop(server);
    let (found, cut_short) = tally;
    println!(
        "occurrences found by the warm searches: {found} in all; hostile events cut short {cut_short} times in {searches} searches"
    );
    let (reading, _) = row(&mut reading);
    println!("reading the calendar's text alone: {reading}");
    let (cold, _) = row(&mut cold);
    println!("cold search (text fetched and parsed, cache empty): {cold}");
    let (warm, p99) = row(&mut warm);
    let meets = p99 < TARGET_P99_MS;
    println!(
        "warm search (text fetched, its reading kept): {warm} (target p99 < {TARGET_P99_MS} ms: {})",
        verdict(meets)
    );
    if !meets {
        std::process::exit(1);
    }
}
