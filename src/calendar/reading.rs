//! The calendars' texts read and expanded off the actors' thread: what a search fetched is
//! handed to tokio's blocking pool ([`off_the_actors_thread`]) with a time limit, where each
//! calendar is read (checked against `bounds.rs` first; a text read before is taken from
//! the profile's `read_cache.rs` instead), its events grouped by UID and
//! expanded within one [`ExpansionBudget`], and the earliest occurrences kept. A calendar
//! that cannot be read, or whose reading panics, is a problem named by its calendar beside
//! what the others gave; the whole work running past its limit or panicking is an error
//! for the caller, never an abort of the process nor a stall of the thread that awaits it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Url;

use super::events::{EventData, ReadError, read_events};
use super::expand::{ExpansionBudget, NotExpanded, Occurrence, occurrences};
use super::read_cache::ReadCache;
use crate::local_time::ZoneName;

/// How long reading and expanding one search's calendars (or reading one event) may take
/// before the caller is answered with an error; the expansion's own budget is shorter.
pub const READ_TIME_LIMIT: Duration = Duration::from_secs(10);
/// At most this many occurrences are kept for one search (the earliest), however many
/// calendars and events it reads.
pub const MAX_KEPT: usize = 1_000;
/// At most this many notes of events not expanded are kept for one search.
pub const MAX_NOTES: usize = 5;
/// The longest calendar name shown (a feed's `X-WR-CALNAME` is someone else's text).
const MAX_NAME_CHARS: usize = 80;

/// Where an occurrence was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub occurrence: Occurrence,
    pub calendar: String,
    /// The event's resource in a writable calendar (none for a subscription).
    pub resource: Option<(Url, Option<String>)>,
}

/// What a search found, and which calendars could not be read.
#[derive(Debug, Default)]
pub struct Searched {
    /// The earliest occurrences, sorted by start, at most [`MAX_KEPT`].
    pub found: Vec<Found>,
    /// How many more occurrences there were past those kept.
    pub more: usize,
    pub problems: Vec<String>,
    /// Recurring events listed once instead of expanded, at most [`MAX_NOTES`].
    pub not_expanded: Vec<NotExpanded>,
    /// How many more recurring events were not expanded.
    pub more_not_expanded: usize,
}

/// One calendar text a search fetched.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The calendar's name, or for a subscription the name used when its text names none.
    pub calendar: String,
    pub text: String,
    /// The event's resource in a writable calendar; `None` for a whole subscribed calendar.
    pub resource: Option<(Url, Option<String>)>,
}

/// What a search asks: occurrences overlapping `[from, to)`, times read in `zone` where a
/// calendar gave none, whose title or place holds every one of `words` (lowercase).
#[derive(Debug, Clone)]
pub struct SearchRange {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub zone: ZoneName,
    pub words: Vec<String>,
}

/// Why work handed to the blocking pool gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OffThreadError {
    #[error("{what} took longer than {} s", limit.as_secs_f64())]
    TooLong { what: &'static str, limit: Duration },
    #[error("{what} failed inside hearth")]
    Failed { what: &'static str },
}

/// Runs `work` on tokio's blocking pool and waits at most `limit` for it: the awaiting
/// thread (the actors', or a web worker's) stays free, and a panic is an error. Work past
/// its limit goes on to its own end (it is bounded by design) but is no longer awaited.
pub async fn off_the_actors_thread<T, F>(
    what: &'static str,
    limit: Duration,
    work: F,
) -> Result<T, OffThreadError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let task = tokio::task::spawn_blocking(work);
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(error)) => {
            tracing::error!(what, error = %error, "calendar work failed on the blocking pool");
            Err(OffThreadError::Failed { what })
        }
        Err(_) => {
            tracing::warn!(
                what,
                limit_s = limit.as_secs(),
                "calendar work ran past its limit"
            );
            Err(OffThreadError::TooLong { what, limit })
        }
    }
}

/// Reads one calendar object's events off the actors' thread.
pub async fn read_events_off_thread(text: String) -> Result<Vec<EventData>, String> {
    off_the_actors_thread("reading the event", READ_TIME_LIMIT, move || {
        read_events(&text).map_err(|error| error.to_string())
    })
    .await
    .map_err(|error| error.to_string())?
}

/// The calendars in `fetched` read (through `cache`: a text read before is not parsed
/// again) and searched for `range` within `budget` (run it on the blocking pool: its cost
/// grows with the texts).
pub fn read_and_expand(
    fetched: Vec<Fetched>,
    range: &SearchRange,
    budget: &ExpansionBudget,
    cache: &ReadCache,
) -> Searched {
    let mut kept = Kept::default();
    let mut searched = Searched::default();
    for one in fetched {
        let fallback = one.calendar.clone();
        let read = catch_unwind(AssertUnwindSafe(|| {
            read_one(
                &one,
                range,
                budget,
                cache,
                &mut kept,
                &mut searched.not_expanded,
            )
        }));
        match read {
            Ok(Ok(())) => {}
            Ok(Err(problem)) => searched.problems.push(problem),
            Err(_) => {
                tracing::error!(calendar = %fallback, "reading a calendar panicked");
                searched.problems.push(format!(
                    "{fallback}: the calendar could not be read (hearth failed reading it)"
                ));
            }
        }
    }
    (searched.found, searched.more) = kept.finish();
    if searched.not_expanded.len() > MAX_NOTES {
        searched.more_not_expanded = searched.not_expanded.len() - MAX_NOTES;
        searched.not_expanded.truncate(MAX_NOTES);
    }
    searched
}

/// One calendar text's occurrences added to `kept`; the problem in words when it cannot
/// be read.
fn read_one(
    one: &Fetched,
    range: &SearchRange,
    budget: &ExpansionBudget,
    cache: &ReadCache,
    kept: &mut Kept,
    not_expanded: &mut Vec<NotExpanded>,
) -> Result<(), String> {
    let whole_calendar = one.resource.is_none();
    let calendar = match whole_calendar {
        true => calendar_name(&one.text).unwrap_or_else(|| one.calendar.clone()),
        false => one.calendar.clone(),
    };
    let groups = cache
        .read(&one.text)
        .map_err(|error| unreadable(&calendar, whole_calendar, &error))?;
    for group in groups.iter() {
        let (found, cut) = occurrences(group, range.from, range.to, range.zone, budget);
        not_expanded.extend(cut);
        let mut verdicts: Vec<(*const EventData, bool)> = Vec::new();
        for occurrence in found {
            let event = Arc::as_ptr(&occurrence.event);
            let matching = match verdicts.iter().find(|(seen, _)| *seen == event) {
                Some((_, verdict)) => *verdict,
                None => {
                    let verdict = has_words(&occurrence.event, &range.words);
                    verdicts.push((event, verdict));
                    verdict
                }
            };
            if matching {
                kept.push(Found {
                    occurrence,
                    calendar: calendar.clone(),
                    resource: one.resource.clone(),
                });
            }
        }
    }
    Ok(())
}

fn unreadable(calendar: &str, whole_calendar: bool, error: &ReadError) -> String {
    match whole_calendar {
        true => format!("{calendar}: the calendar could not be read ({error})"),
        false => format!("{calendar}: an event could not be read ({error})"),
    }
}

/// Whether the event's title or place holds every word.
fn has_words(event: &EventData, words: &[String]) -> bool {
    if words.is_empty() {
        return true;
    }
    let haystack = format!(
        "{} {}",
        event.summary.to_lowercase(),
        event.location.as_deref().unwrap_or_default().to_lowercase()
    );
    words.iter().all(|word| haystack.contains(word.as_str()))
}

/// A subscribed calendar's own name (`X-WR-CALNAME`), shortened.
pub(super) fn calendar_name(text: &str) -> Option<String> {
    text.lines()
        .take(50)
        .find_map(|line| line.strip_prefix("X-WR-CALNAME:"))
        .map(|name| name.trim().chars().take(MAX_NAME_CHARS).collect::<String>())
        .filter(|name| !name.is_empty())
}

/// The earliest occurrences found so far, at most [`MAX_KEPT`] once finished, and how many
/// later ones were let go.
#[derive(Default)]
struct Kept {
    found: Vec<Found>,
    dropped: usize,
}

impl Kept {
    fn push(&mut self, found: Found) {
        self.found.push(found);
        if self.found.len() >= 2 * MAX_KEPT {
            self.trim();
        }
    }

    fn trim(&mut self) {
        self.found.sort_by_key(|found| found.occurrence.start);
        if self.found.len() > MAX_KEPT {
            self.dropped += self.found.len() - MAX_KEPT;
            self.found.truncate(MAX_KEPT);
        }
    }

    fn finish(mut self) -> (Vec<Found>, usize) {
        self.trim();
        (self.found, self.dropped)
    }
}

#[cfg(test)]
#[path = "reading_tests.rs"]
mod tests;
