//! RFC 5545 RRULEs as a tool's recurrence, expanded with the `rrule` crate on wall-clock
//! times: the rule runs on the member's local dates and times (read as if they were UTC, a
//! zone without DST), and each local occurrence is then resolved in the member's zone with
//! the module's rules. So `FREQ=DAILY` at 08:00 stays 08:00 local across DST.
//!
//! `UNTIL` is taken out before the crate sees the rule, because the crate would read a
//! floating `UNTIL` in the server's own zone: `UNTIL=20251231T235959Z` is an instant, a
//! floating `UNTIL=20251231T235959` and a date `UNTIL=20251231` are the member's wall clock.
//!
//! As in python-dateutil (and unlike a calendar's DTSTART), the start is the earliest time
//! the rule may fire, and fires only when it matches the rule; `COUNT` counts the matches.
//!
//! A reminder asks for its next time ([`RecurrenceRule::next_after`]); a calendar search
//! asks for every time in a range ([`RecurrenceRule::occurrences_between`]), walked once
//! for the whole range, at most so many occurrences and until a deadline ([`WalkLimits`]),
//! since a rule with COUNT may have to be walked from its start and someone else wrote it.
//! Both begin walking where the rule allows it: a rule without COUNT from a start moved on
//! by whole periods, one with COUNT likewise when it holds the same times in every period
//! (`rrule_counted.rs`).

use std::fmt;

use chrono::{
    DateTime, Datelike, Month, Months, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, TimeZone,
    Utc, Weekday,
};
use rrule::{Frequency, NWeekday, RRule, Unvalidated};

use super::error::shown;
use super::instants::resolve_local;
use super::rrule_counted::{CountedStart, counted_start};
use super::{LocalTimeError, ZoneName};

/// The shortest spacing an RRULE may fire at.
pub const MIN_RECURRENCE_SPACING_MINUTES: u32 = 5;
/// Longer rules are not something a member writes.
const MAX_RULE_LENGTH: usize = 300;
/// How far past the first occurrence after the asked instant to look for an earlier one:
/// a time in a skipped hour moves forward by the gap (never more than a day), past times
/// the rule yields after it.
const GAP_LOOKAHEAD: TimeDelta = TimeDelta::hours(26);
/// The largest COUNT: a rule with COUNT is walked from its start for every answer.
const MAX_COUNT: u32 = 100_000;
/// A bound on the occurrences walked for one answer, above [`MAX_COUNT`] and above what a
/// rule without COUNT walks from its moved start (see `expansion_start`).
const MAX_OCCURRENCES_WALKED: usize = 2_000_000;

/// How many occurrences a bounded walk passes between looks at the clock.
const DEADLINE_EVERY: usize = 64;

/// Bounds on one walk of a rule over a range ([`RecurrenceRule::occurrences_between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// The most occurrences passed, counted from where the walk starts (with COUNT, the
    /// rule's start, unless the rule repeats by whole periods: see `rrule_counted.rs`).
    pub max_walked: usize,
    /// When the walk gives up.
    pub deadline: std::time::Instant,
}

/// Why a bounded walk stopped before the end of its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WalkCut {
    #[error("more than {walked} of its times would have to be counted")]
    TooMany { walked: usize },
    #[error("counting its times took longer than one search may take")]
    OutOfTime,
}

/// Where an RRULE's `UNTIL` ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
    /// `UNTIL=20251231T230000Z`: an instant.
    Instant(DateTime<Utc>),
    /// `UNTIL=20251231T235959`: the member's wall clock.
    Local(NaiveDateTime),
    /// `UNTIL=20251231`: through that local date.
    Date(NaiveDate),
}

/// A checked RRULE, kept with the text it was written as (uppercase, without `RRULE:`).
#[derive(Debug, Clone)]
pub struct RecurrenceRule {
    text: String,
    /// The rule without `UNTIL`.
    rule: RRule<Unvalidated>,
    until: Option<Until>,
}

impl PartialEq for RecurrenceRule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for RecurrenceRule {}

impl RecurrenceRule {
    /// Parses one RRULE line (`FREQ=WEEKLY;BYDAY=MO,TH` or `RRULE:FREQ=...`), refusing what
    /// hearth does not run: other iCalendar lines, `FREQ=SECONDLY`/`MINUTELY`, times closer
    /// than [`MIN_RECURRENCE_SPACING_MINUTES`], seconds, `COUNT` with `UNTIL`, zero counts and
    /// intervals, counts above 100,000.
    pub fn parse(text: &str) -> Result<Self, LocalTimeError> {
        let bad = |reason: String| LocalTimeError::BadRrule {
            value: shown(text),
            reason,
        };
        let upper = text.trim().to_ascii_uppercase();
        let body = upper.strip_prefix("RRULE:").unwrap_or(&upper).trim();
        if body.len() > MAX_RULE_LENGTH {
            return Err(bad(format!("longer than {MAX_RULE_LENGTH} characters")));
        }
        if body.contains(['\n', '\r', ':']) {
            return Err(bad(
                "only one RRULE line, without DTSTART, EXDATE or RDATE".to_string()
            ));
        }
        let mut until = None;
        let mut rest = Vec::new();
        for part in body.split(';') {
            let Some((key, value)) = part.split_once('=') else {
                return Err(bad(format!("`{part}` is not KEY=VALUE")));
            };
            if key == "UNTIL" {
                if until.is_some() {
                    return Err(bad("UNTIL appears twice".to_string()));
                }
                until = Some(parse_until(value).ok_or_else(|| {
                    bad(format!(
                        "UNTIL `{value}` is not YYYYMMDD, YYYYMMDDTHHMMSS or YYYYMMDDTHHMMSSZ"
                    ))
                })?);
            } else {
                rest.push(part);
            }
        }
        let rule: RRule<Unvalidated> = rest
            .join(";")
            .parse()
            .map_err(|error| bad(crate_message(&error)))?;
        if until.is_some() && rule.get_count().is_some() {
            return Err(bad("COUNT and UNTIL cannot both be given".to_string()));
        }
        if rule.get_count() == Some(0) {
            return Err(bad("COUNT=0 never fires".to_string()));
        }
        if rule.get_count().is_some_and(|count| count > MAX_COUNT) {
            return Err(bad(format!("COUNT is above {MAX_COUNT}")));
        }
        if rule.get_interval() == 0 {
            return Err(bad("INTERVAL must be at least 1".to_string()));
        }
        check_spacing(&rule).map_err(|reason| LocalTimeError::RruleTooFrequent {
            value: shown(text),
            reason,
            min_minutes: MIN_RECURRENCE_SPACING_MINUTES,
        })?;
        // RFC 5545 has no day, week or position 0; the crate drops a 0 from BYMONTHDAY
        // before its own checks, while the rule hearth walks keeps it.
        for (part, values) in [
            (
                "BYMONTHDAY",
                rule.get_by_month_day()
                    .iter()
                    .map(|&v| i32::from(v))
                    .collect::<Vec<_>>(),
            ),
            (
                "BYYEARDAY",
                rule.get_by_year_day()
                    .iter()
                    .map(|&v| i32::from(v))
                    .collect(),
            ),
            (
                "BYWEEKNO",
                rule.get_by_week_no()
                    .iter()
                    .map(|&v| i32::from(v))
                    .collect(),
            ),
            ("BYSETPOS", rule.get_by_set_pos().to_vec()),
        ] {
            if values.contains(&0) {
                return Err(bad(format!(
                    "{part}=0 names nothing: count from 1, or from -1 for the last"
                )));
            }
        }
        // The crate's own checks (ranges, BY parts allowed with FREQ) need a start; any will do.
        let any_start = NaiveDate::from_ymd_opt(2000, 1, 3)
            .unwrap_or_default()
            .and_time(NaiveTime::MIN);
        rule.clone()
            .validate(rrule::Tz::UTC.from_utc_datetime(&any_start))
            .map_err(|error| bad(crate_message(&error)))?;
        Ok(RecurrenceRule {
            text: body.to_string(),
            rule,
            until,
        })
    }

    pub(super) fn frequency(&self) -> Frequency {
        self.rule.get_freq()
    }

    pub(super) fn interval(&self) -> u16 {
        self.rule.get_interval()
    }

    pub(super) fn count(&self) -> Option<u32> {
        self.rule.get_count()
    }

    pub(super) fn until(&self) -> Option<Until> {
        self.until
    }

    /// `BYDAY` without ordinals (`MO,TH`), or `None` when it has some (`1MO`).
    pub(super) fn plain_weekdays(&self) -> Option<Vec<Weekday>> {
        self.rule
            .get_by_weekday()
            .iter()
            .map(|day| match day {
                NWeekday::Every(weekday) => Some(*weekday),
                NWeekday::Nth(..) => None,
            })
            .collect()
    }

    pub(super) fn month_days(&self) -> &[i8] {
        self.rule.get_by_month_day()
    }

    /// Whether the rule has parts beyond FREQ, INTERVAL, COUNT, UNTIL, BYDAY and BYMONTHDAY,
    /// which the words of [`super::phrasing`] do not describe.
    pub(super) fn has_other_parts(&self) -> bool {
        !self.rule.get_by_month().is_empty()
            || !self.rule.get_by_set_pos().is_empty()
            || !self.rule.get_by_year_day().is_empty()
            || !self.rule.get_by_week_no().is_empty()
            || !self.rule.get_by_hour().is_empty()
            || !self.rule.get_by_minute().is_empty()
            || !self.rule.get_by_second().is_empty()
    }

    /// The first occurrence strictly after `after`, for a rule starting at the local time
    /// `start` in `zone`; `None` once `COUNT` or `UNTIL` has ended it.
    pub(super) fn next_after(
        &self,
        zone: ZoneName,
        start: NaiveDateTime,
        after: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let after_wall = after.with_timezone(&zone.tz()).naive_local();
        let first = resolve_local(zone, start).instant;
        let (rule, moved) = self.expansion_start(start, after_wall)?;
        self.walk(rule, zone, moved, first, after)
    }

    /// The same, walking every occurrence from the start: what [`Self::next_after`] must
    /// equal.
    #[cfg(test)]
    pub(super) fn next_after_walking_from_start(
        &self,
        zone: ZoneName,
        start: NaiveDateTime,
        after: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let first = resolve_local(zone, start).instant;
        self.walk(self.rule.clone(), zone, start, first, after)
    }

    /// Where expanding may begin for an answer after `after_wall`, so that a rule running
    /// for years is not walked from its start at every firing. Without COUNT, a start moved
    /// on by whole periods (INTERVAL times the FREQ) yields the same occurrences from there
    /// on, once the parts the crate would take from the start (the day of the month, the
    /// month) are written out. With COUNT, every occurrence since the start counts: a rule
    /// that holds the same times in every period is moved on with its COUNT lowered by
    /// what the periods passed held (`rrule_counted.rs`), any other is walked from its
    /// start. `None` when its COUNT was used up before the moved start.
    fn expansion_start(
        &self,
        start: NaiveDateTime,
        after_wall: NaiveDateTime,
    ) -> Option<(RRule<Unvalidated>, NaiveDateTime)> {
        let unchanged = Some((self.rule.clone(), start));
        // Well before `after`: an occurrence before the moved start, even moved forward by
        // a gap, is not after it.
        let target = after_wall - TimeDelta::days(3);
        if target <= start {
            return unchanged;
        }
        if self.rule.get_count().is_some() {
            return match counted_start(&self.with_start_parts_written_out(start), start, target) {
                CountedStart::Moved(rule, moved) => Some((*rule, moved)),
                CountedStart::Ended => None,
                CountedStart::FromStart => unchanged,
            };
        }
        let interval = i64::from(self.rule.get_interval());
        let whole = |units: i64| units / interval * interval;
        let moved = match self.rule.get_freq() {
            Frequency::Hourly => start + TimeDelta::hours(whole((target - start).num_hours())),
            Frequency::Daily => start + TimeDelta::days(whole((target - start).num_days())),
            Frequency::Weekly => start + TimeDelta::weeks(whole((target - start).num_days() / 7)),
            Frequency::Monthly => {
                let months = i64::from(target.year() - start.year()) * 12
                    + i64::from(target.month())
                    - i64::from(start.month())
                    - 1;
                let months = whole(months.max(0));
                let Some(first) = start
                    .date()
                    .with_day(1)
                    .and_then(|first| first.checked_add_months(Months::new(months as u32)))
                else {
                    return unchanged;
                };
                first.and_time(start.time())
            }
            Frequency::Yearly => {
                let years = whole(i64::from(target.year() - start.year() - 1).max(0));
                let Some(first) = NaiveDate::from_ymd_opt(start.year() + years as i32, 1, 1) else {
                    return unchanged;
                };
                first.and_time(start.time())
            }
            Frequency::Minutely | Frequency::Secondly => start,
        };
        if moved <= start {
            return unchanged;
        }
        Some((self.with_start_parts_written_out(start), moved))
    }

    /// The rule with the day of the month (and for FREQ=YEARLY the month) that the crate
    /// would otherwise take from the start, as it does when no other day part is given.
    pub(super) fn with_start_parts_written_out(&self, start: NaiveDateTime) -> RRule<Unvalidated> {
        let rule = self.rule.clone();
        let has_day_parts = !rule.get_by_week_no().is_empty()
            || !rule.get_by_year_day().is_empty()
            || !rule.get_by_month_day().is_empty()
            || !rule.get_by_weekday().is_empty();
        if has_day_parts {
            return rule;
        }
        let day = i8::try_from(start.day()).unwrap_or(1);
        match rule.get_freq() {
            Frequency::Monthly => rule.by_month_day(vec![day]),
            Frequency::Yearly => {
                let rule = if rule.get_by_month().is_empty() {
                    let month = Month::try_from(u8::try_from(start.month()).unwrap_or(1))
                        .unwrap_or(Month::January);
                    rule.by_month(&[month])
                } else {
                    rule
                };
                rule.by_month_day(vec![day])
            }
            _ => rule,
        }
    }

    /// Every occurrence strictly after `after` and before `before`, sorted, each instant
    /// once, at most `max_listed` (the earliest), for a rule starting at the local time
    /// `start` in `zone`: the rule walked once for the whole range (from a start moved on
    /// by whole periods where the rule allows it, see [`Self::expansion_start`]), within
    /// `limits`. The same instants as [`Self::next_after`] asked again and again.
    pub fn occurrences_between(
        &self,
        zone: ZoneName,
        start: NaiveDateTime,
        after: DateTime<Utc>,
        before: DateTime<Utc>,
        max_listed: usize,
        limits: WalkLimits,
    ) -> Result<Vec<DateTime<Utc>>, WalkCut> {
        let after_wall = after.with_timezone(&zone.tz()).naive_local();
        let first = resolve_local(zone, start).instant;
        let Some((rule, walk_start)) = self.expansion_start(start, after_wall) else {
            return Ok(Vec::new());
        };
        let range = (after, before, max_listed);
        self.walk_between(rule, walk_start, first, zone, range, limits)
    }

    /// The same, walking every occurrence from the start: what
    /// [`Self::occurrences_between`] must equal.
    #[cfg(test)]
    pub(crate) fn occurrences_between_walking_from_start(
        &self,
        zone: ZoneName,
        start: NaiveDateTime,
        after: DateTime<Utc>,
        before: DateTime<Utc>,
        max_listed: usize,
        limits: WalkLimits,
    ) -> Result<Vec<DateTime<Utc>>, WalkCut> {
        let first = resolve_local(zone, start).instant;
        let range = (after, before, max_listed);
        self.walk_between(self.rule.clone(), start, first, zone, range, limits)
    }

    /// The walk of [`Self::occurrences_between`] of `rule` from `walk_start` over `range`
    /// (after, before, the most listed), nothing before the rule's `first` instant.
    fn walk_between(
        &self,
        rule: RRule<Unvalidated>,
        walk_start: NaiveDateTime,
        first: DateTime<Utc>,
        zone: ZoneName,
        (after, before, max_listed): (DateTime<Utc>, DateTime<Utc>, usize),
        limits: WalkLimits,
    ) -> Result<Vec<DateTime<Utc>>, WalkCut> {
        let before_wall = before.with_timezone(&zone.tz()).naive_local();
        let Ok(set) = rule.build(rrule::Tz::UTC.from_utc_datetime(&walk_start)) else {
            return Ok(Vec::new());
        };
        let set = set.limit();
        let until_wall = self.until_wall(zone);
        let mut found: Vec<DateTime<Utc>> = Vec::new();
        // A time moved forward by a gap may resolve before one walked earlier: walk a
        // gap's length past the last wall-clock time that can be needed.
        let mut look_until = before_wall + GAP_LOOKAHEAD;
        for (walked, occurrence) in (&set).into_iter().enumerate() {
            if walked >= limits.max_walked {
                return Err(WalkCut::TooMany {
                    walked: limits.max_walked,
                });
            }
            if walked % DEADLINE_EVERY == DEADLINE_EVERY - 1
                && std::time::Instant::now() >= limits.deadline
            {
                return Err(WalkCut::OutOfTime);
            }
            let wall = occurrence.naive_utc();
            if wall > look_until || self.ended_by_until(wall, until_wall) {
                break;
            }
            let instant = resolve_local(zone, wall).instant;
            if matches!(self.until, Some(Until::Instant(until)) if instant > until) {
                continue;
            }
            // A start in a skipped hour fires later by the gap, after the rule's next
            // wall-clock times (as in `walk`).
            if instant < first {
                continue;
            }
            if instant > after && instant < before && found.last() != Some(&instant) {
                found.push(instant);
                if found.len() == max_listed {
                    look_until = look_until.min(wall + GAP_LOOKAHEAD);
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        found.truncate(max_listed);
        Ok(found)
    }

    /// The wall-clock time past which `UNTIL` has ended the rule (for an instant, a day
    /// later: its wall clock in `zone` is checked exactly on each occurrence).
    fn until_wall(&self, zone: ZoneName) -> Option<NaiveDateTime> {
        self.until.map(|until| match until {
            Until::Instant(instant) => {
                instant.with_timezone(&zone.tz()).naive_local() + TimeDelta::days(1)
            }
            Until::Local(wall) => wall,
            Until::Date(date) => date.and_time(NaiveTime::MIN) + TimeDelta::days(1),
        })
    }

    fn ended_by_until(&self, wall: NaiveDateTime, until_wall: Option<NaiveDateTime>) -> bool {
        match (self.until, until_wall) {
            (Some(Until::Date(_)), Some(limit)) => wall >= limit,
            (Some(_), Some(limit)) => wall > limit,
            _ => false,
        }
    }

    fn walk(
        &self,
        rule: RRule<Unvalidated>,
        zone: ZoneName,
        start: NaiveDateTime,
        first: DateTime<Utc>,
        after: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let wall_start = rrule::Tz::UTC.from_utc_datetime(&start);
        let set = rule.build(wall_start).ok()?.limit();
        let until_wall = self.until_wall(zone);
        let mut best: Option<DateTime<Utc>> = None;
        let mut look_until: Option<NaiveDateTime> = None;
        for occurrence in (&set).into_iter().take(MAX_OCCURRENCES_WALKED) {
            let wall = occurrence.naive_utc();
            if look_until.is_some_and(|limit| wall > limit) || self.ended_by_until(wall, until_wall)
            {
                break;
            }
            let instant = resolve_local(zone, wall).instant;
            if let Some(Until::Instant(until)) = self.until
                && instant > until
            {
                continue;
            }
            // A start in a skipped hour fires later by the gap; the rule's wall-clock
            // times right after it (03:00 after a skipped 02:30) are then before it.
            if instant < first {
                continue;
            }
            if instant > after && best.is_none_or(|best| instant < best) {
                best = Some(instant);
                look_until.get_or_insert(wall + GAP_LOOKAHEAD);
            }
        }
        best
    }
}

impl fmt::Display for RecurrenceRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_until(value: &str) -> Option<Until> {
    let (date, time) = match value.split_once('T') {
        Some((date, time)) => (date, Some(time)),
        None => (value, None),
    };
    if date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let date = NaiveDate::parse_from_str(date, "%Y%m%d").ok()?;
    let Some(time) = time else {
        return Some(Until::Date(date));
    };
    let (time, utc) = match time.strip_suffix('Z') {
        Some(time) => (time, true),
        None => (time, false),
    };
    if time.len() != 6 || !time.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let wall = date.and_time(NaiveTime::parse_from_str(time, "%H%M%S").ok()?);
    Some(if utc {
        Until::Instant(wall.and_utc())
    } else {
        Until::Local(wall)
    })
}

/// Refuses rules that could fire closer than the minimum spacing. Every rule of FREQ=HOURLY
/// or longer fires at most once per listed minute of an hour, so the listed minutes decide.
fn check_spacing(rule: &RRule<Unvalidated>) -> Result<(), String> {
    match rule.get_freq() {
        Frequency::Secondly => return Err("FREQ=SECONDLY".to_string()),
        Frequency::Minutely => return Err("FREQ=MINUTELY".to_string()),
        _ => {}
    }
    if rule.get_by_second().iter().any(|second| *second != 0) {
        return Err("BYSECOND names seconds; times are whole minutes".to_string());
    }
    let mut minutes: Vec<u8> = rule.get_by_minute().to_vec();
    minutes.sort_unstable();
    minutes.dedup();
    if minutes.len() > 1 {
        let wrap = 60 + minutes[0] - minutes[minutes.len() - 1];
        let closest = minutes
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .chain(std::iter::once(wrap))
            .min()
            .unwrap_or(60);
        if u32::from(closest) < MIN_RECURRENCE_SPACING_MINUTES {
            return Err(format!("BYMINUTE has minutes {closest} apart"));
        }
    }
    Ok(())
}

/// The crate's message without its "RRule parsing error:" heading, starting lowercase and
/// without a closing period, as ours do.
fn crate_message(error: &rrule::RRuleError) -> String {
    let message = match error {
        rrule::RRuleError::ParserError(error) => error.to_string(),
        rrule::RRuleError::ValidationError(error) => error.to_string(),
        rrule::RRuleError::IterError(message) => message.clone(),
    };
    let trimmed = message.trim().trim_end_matches('.');
    let mut characters = trimmed.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => String::new(),
    }
}
