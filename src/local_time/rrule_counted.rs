//! Where a rule with COUNT may begin to be walked for an answer far from its start,
//! without walking every occurrence since the start to count them.
//!
//! A rule whose times repeat exactly from one period to the next (each period, INTERVAL
//! times its FREQ, holds the same times at the same places) has, in any stretch of whole
//! periods starting at its start, as many occurrences as in its first period times the
//! number of periods. So the first period is walked and counted, the start moved on by
//! whole periods, and the moved rule's COUNT lowered by what those periods held. Only
//! rules that are periodic in that sense are moved; every other rule with COUNT is walked
//! from its start as before:
//! - `FREQ=HOURLY` with at most BYMINUTE and BYSECOND;
//! - `FREQ=DAILY` with at most BYHOUR, BYMINUTE and BYSECOND;
//! - `FREQ=WEEKLY` with BYDAY without ordinals, BYHOUR, BYMINUTE, BYSECOND and WKST;
//! - `FREQ=MONTHLY` on days 1 to 28 only (BYMONTHDAY, or the start's day), with BYHOUR,
//!   BYMINUTE and BYSECOND: every month holds those days.
//!
//! The rule runs on wall-clock times read as UTC (see `rrule_rule.rs`), so there is no DST
//! inside the walk and the count is of wall-clock times, as the plain walk counts them.

use chrono::{Datelike, Months, NaiveDateTime, TimeDelta, TimeZone};
use rrule::{Frequency, NWeekday, RRule, Unvalidated};

/// Where walking a rule with COUNT may begin for times after some wall-clock instant.
#[derive(Debug, Clone)]
pub(super) enum CountedStart {
    /// From here, with the COUNT left: the same times as the rule from its start.
    Moved(Box<RRule<Unvalidated>>, NaiveDateTime),
    /// The count was used up before the moved start: nothing from there on.
    Ended,
    /// The rule cannot be moved: walk it from its start.
    FromStart,
}

/// The most periods moved at once; with COUNT at most 100,000 a rule is used up long
/// before this, and moving by it stays far inside chrono's range.
const MAX_PERIODS: i64 = 1_000_000;

/// Where to walk `rule` (which has a COUNT, and the parts the crate takes from the start
/// already written out where it needs them: see `with_start_parts_written_out`) from
/// `start`, for times at or after `target`: moved by whole periods that end before it.
pub(super) fn counted_start(
    rule: &RRule<Unvalidated>,
    start: NaiveDateTime,
    target: NaiveDateTime,
) -> CountedStart {
    let Some(count) = rule.get_count() else {
        return CountedStart::FromStart;
    };
    if target <= start || !repeats_by_period(rule, start) {
        return CountedStart::FromStart;
    }
    let interval = i64::from(rule.get_interval());
    let units = match rule.get_freq() {
        Frequency::Hourly => (target - start).num_hours(),
        Frequency::Daily => (target - start).num_days(),
        Frequency::Weekly => (target - start).num_days() / 7,
        Frequency::Monthly => months_between(start, target),
        _ => return CountedStart::FromStart,
    };
    let periods = (units / interval).min(MAX_PERIODS);
    if periods < 1 {
        return CountedStart::FromStart;
    }
    let (Some(second_period), Some(moved)) = (
        moved_by(rule.get_freq(), start, interval),
        moved_by(rule.get_freq(), start, interval * periods),
    ) else {
        return CountedStart::FromStart;
    };
    let Some(in_first_period) = counted_before(rule, start, second_period) else {
        return CountedStart::FromStart;
    };
    let passed = u64::from(in_first_period) * periods as u64;
    match u64::from(count).checked_sub(passed) {
        Some(left) if left > 0 => {
            CountedStart::Moved(Box::new(rule.clone().count(left as u32)), moved)
        }
        _ => CountedStart::Ended,
    }
}

/// Whether the rule holds the same times in every period, shifted by the period (the
/// list in this module's doc), from `start`.
fn repeats_by_period(rule: &RRule<Unvalidated>, start: NaiveDateTime) -> bool {
    let no_day_parts = rule.get_by_month().is_empty()
        && rule.get_by_year_day().is_empty()
        && rule.get_by_week_no().is_empty()
        && rule.get_by_set_pos().is_empty();
    if !no_day_parts {
        return false;
    }
    let no_month_days = rule.get_by_month_day().is_empty();
    let no_weekdays = rule.get_by_weekday().is_empty();
    match rule.get_freq() {
        Frequency::Hourly => rule.get_by_hour().is_empty() && no_month_days && no_weekdays,
        Frequency::Daily => no_month_days && no_weekdays,
        Frequency::Weekly => {
            no_month_days
                && rule
                    .get_by_weekday()
                    .iter()
                    .all(|day| matches!(day, NWeekday::Every(_)))
        }
        Frequency::Monthly => {
            no_weekdays
                && start.day() <= 28
                && rule
                    .get_by_month_day()
                    .iter()
                    .all(|day| (1..=28).contains(day))
        }
        _ => false,
    }
}

/// Whole months from `start` to `target`, never past it.
fn months_between(start: NaiveDateTime, target: NaiveDateTime) -> i64 {
    let months = i64::from(target.year() - start.year()) * 12 + i64::from(target.month())
        - i64::from(start.month());
    let short = (target.day(), target.time()) < (start.day(), start.time());
    (months - i64::from(short)).max(0)
}

/// `start` moved on by `units` of `frequency`.
fn moved_by(frequency: Frequency, start: NaiveDateTime, units: i64) -> Option<NaiveDateTime> {
    match frequency {
        Frequency::Hourly => start.checked_add_signed(TimeDelta::try_hours(units)?),
        Frequency::Daily => start.checked_add_signed(TimeDelta::try_days(units)?),
        Frequency::Weekly => start.checked_add_signed(TimeDelta::try_weeks(units)?),
        Frequency::Monthly => start.checked_add_months(Months::new(u32::try_from(units).ok()?)),
        _ => None,
    }
}

/// How many times the rule from `start` yields before `end` (its first period): at most
/// its COUNT. `None` when the rule cannot be built from there.
fn counted_before(
    rule: &RRule<Unvalidated>,
    start: NaiveDateTime,
    end: NaiveDateTime,
) -> Option<u32> {
    let set = rule
        .clone()
        .build(rrule::Tz::UTC.from_utc_datetime(&start))
        .ok()?
        .limit();
    let mut counted: u32 = 0;
    for occurrence in &set {
        if occurrence.naive_utc() >= end {
            break;
        }
        counted += 1;
    }
    Some(counted)
}
