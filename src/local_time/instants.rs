//! From a member's local day and time in their zone to a UTC instant, with the wall-clock
//! rules of the module: a skipped time moves forward by the gap, a repeated time is the
//! first. Also the words a tool may use for a day (`2025-11-26`, `today`, `tomorrow`,
//! `thursday`) and a time (`08:00`).

use std::fmt;

use chrono::{
    DateTime, Datelike, Days, Months, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeDelta,
    TimeZone, Timelike, Utc, Weekday,
};

use super::error::shown;
use super::{LocalTimeError, MAX_YEARS_AHEAD, ZoneName};

/// How a requested wall-clock time became an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WallClockShift {
    /// The time exists once in the zone.
    Exact,
    /// The time does not exist (clocks went forward over it); the instant is later by the
    /// gap, so 02:30 on a spring-forward night in Europe/Berlin is 03:30.
    SkippedForward { gap: TimeDelta },
    /// The time exists twice (clocks went back over it); the instant is the first.
    RepeatedFirst,
}

/// A wall-clock time resolved in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedLocal {
    /// The local date and time that was asked for.
    pub requested: NaiveDateTime,
    pub instant: DateTime<Utc>,
    pub shift: WallClockShift,
}

/// Resolves a local wall-clock time in `zone` to an instant: a time in a gap moves forward by
/// the gap, a time in a repeated hour is the first of the two.
pub fn resolve_local(zone: ZoneName, wall: NaiveDateTime) -> ResolvedLocal {
    let tz = zone.tz();
    match tz.from_local_datetime(&wall) {
        chrono::LocalResult::Single(at) => ResolvedLocal {
            requested: wall,
            instant: at.with_timezone(&Utc),
            shift: WallClockShift::Exact,
        },
        chrono::LocalResult::Ambiguous(first, _) => ResolvedLocal {
            requested: wall,
            instant: first.with_timezone(&Utc),
            shift: WallClockShift::RepeatedFirst,
        },
        chrono::LocalResult::None => resolve_in_gap(zone, wall),
    }
}

/// A time in a gap is read with the offset in force just before the gap, which puts it
/// after the transition, later on the wall clock by exactly the gap.
fn resolve_in_gap(zone: ZoneName, wall: NaiveDateTime) -> ResolvedLocal {
    let tz = zone.tz();
    // The first minute after the gap; no zone has ever skipped more than a day.
    let after_gap = (1..=2 * 24 * 60)
        .map(|minutes| wall + TimeDelta::minutes(minutes))
        .find_map(|candidate| tz.from_local_datetime(&candidate).earliest());
    let Some(after_gap) = after_gap else {
        // Unreachable with the tz database; read the time as UTC rather than fail.
        return ResolvedLocal {
            requested: wall,
            instant: wall.and_utc(),
            shift: WallClockShift::Exact,
        };
    };
    let offset_after = TimeDelta::seconds(i64::from(after_gap.offset().fix().local_minus_utc()));
    // `wall` read with the later offset is an instant inside the gap's last stretch before
    // the transition, where the earlier offset still holds.
    let before_transition = wall - offset_after;
    let offset_before = TimeDelta::seconds(i64::from(
        tz.offset_from_utc_datetime(&before_transition)
            .fix()
            .local_minus_utc(),
    ));
    ResolvedLocal {
        requested: wall,
        instant: (wall - offset_before).and_utc(),
        shift: WallClockShift::SkippedForward {
            gap: offset_after - offset_before,
        },
    }
}

/// The latest instant anything may be scheduled for: [`MAX_YEARS_AHEAD`] calendar years
/// after `now` on the member's wall clock.
pub fn latest_allowed(zone: ZoneName, now: DateTime<Utc>) -> DateTime<Utc> {
    let local_now = now.with_timezone(&zone.tz()).naive_local();
    let latest = local_now
        .checked_add_months(Months::new(12 * MAX_YEARS_AHEAD))
        .unwrap_or(NaiveDateTime::MAX);
    resolve_local(zone, latest).instant
}

/// The member's current local time, as errors state it: `Thu 26 Nov 2025 10:15`.
pub(super) fn now_in_words(zone: ZoneName, now: DateTime<Utc>) -> String {
    now.with_timezone(&zone.tz())
        .format("%a %-d %b %Y %H:%M")
        .to_string()
}

/// A day as a tool names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalDay {
    Date(NaiveDate),
    Today,
    Tomorrow,
    /// The next such day on which the time is still ahead: today if it is that day and the
    /// time has not passed, else within the coming week.
    Next(Weekday),
}

impl fmt::Display for LocalDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalDay::Date(date) => write!(f, "{}", date.format("%Y-%m-%d")),
            LocalDay::Today => f.write_str("today"),
            LocalDay::Tomorrow => f.write_str("tomorrow"),
            LocalDay::Next(weekday) => f.write_str(weekday_name(*weekday)),
        }
    }
}

impl LocalDay {
    /// The date this names, seen from `today`: a weekday is today or the next such day.
    pub fn date_from(&self, today: NaiveDate) -> NaiveDate {
        match self {
            LocalDay::Date(date) => *date,
            LocalDay::Today => today,
            LocalDay::Tomorrow => next_day(today),
            LocalDay::Next(weekday) => (0..7)
                .filter_map(|offset| today.checked_add_days(Days::new(offset)))
                .find(|date| date.weekday() == *weekday)
                .unwrap_or(today),
        }
    }
}

pub(super) fn weekday_name(weekday: Weekday) -> &'static str {
    match weekday {
        Weekday::Mon => "monday",
        Weekday::Tue => "tuesday",
        Weekday::Wed => "wednesday",
        Weekday::Thu => "thursday",
        Weekday::Fri => "friday",
        Weekday::Sat => "saturday",
        Weekday::Sun => "sunday",
    }
}

/// A weekday from its English name or its first three letters, any case.
pub(super) fn parse_weekday(text: &str) -> Option<Weekday> {
    let lower = text.trim().to_ascii_lowercase();
    [
        Weekday::Mon,
        Weekday::Tue,
        Weekday::Wed,
        Weekday::Thu,
        Weekday::Fri,
        Weekday::Sat,
        Weekday::Sun,
    ]
    .into_iter()
    .find(|day| {
        let name = weekday_name(*day);
        lower == name || lower == name[..3]
    })
}

/// `2025-11-26` (exactly YYYY-MM-DD), `today`, `tomorrow` or a weekday (`thursday`, `thu`).
pub fn parse_local_day(text: &str) -> Result<LocalDay, LocalTimeError> {
    let bad = || LocalTimeError::BadDate { value: shown(text) };
    let trimmed = text.trim();
    match trimmed.to_ascii_lowercase().as_str() {
        "today" => return Ok(LocalDay::Today),
        "tomorrow" => return Ok(LocalDay::Tomorrow),
        _ => {}
    }
    if let Some(weekday) = parse_weekday(trimmed) {
        return Ok(LocalDay::Next(weekday));
    }
    let bytes = trimmed.as_bytes();
    let shaped = bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(index, byte)| index == 4 || index == 7 || byte.is_ascii_digit());
    if !shaped {
        return Err(bad());
    }
    NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
        .map(LocalDay::Date)
        .map_err(|_| bad())
}

/// `08:00` or `8:00` on the 24-hour clock; seconds are not a tool's business.
pub fn parse_local_time(text: &str) -> Result<NaiveTime, LocalTimeError> {
    let bad = || LocalTimeError::BadTime { value: shown(text) };
    let (hours, minutes) = text.trim().split_once(':').ok_or_else(bad)?;
    let digits = |part: &str, widths: &[usize]| {
        widths.contains(&part.len()) && part.bytes().all(|byte| byte.is_ascii_digit())
    };
    if !digits(hours, &[1, 2]) || !digits(minutes, &[2]) {
        return Err(bad());
    }
    let hours: u32 = hours.parse().map_err(|_| bad())?;
    let minutes: u32 = minutes.parse().map_err(|_| bad())?;
    NaiveTime::from_hms_opt(hours, minutes, 0).ok_or_else(bad)
}

/// A local day and time of day in the member's zone, as a tool gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalWhen {
    /// `None`: the next time the clock shows `time`, today or tomorrow.
    pub day: Option<LocalDay>,
    pub time: NaiveTime,
}

impl LocalWhen {
    /// Parses a tool's `date` (optional) and `time` arguments.
    pub fn parse(day: Option<&str>, time: &str) -> Result<Self, LocalTimeError> {
        let day = day
            .map(str::trim)
            .filter(|day| !day.is_empty())
            .map(parse_local_day)
            .transpose()?;
        Ok(LocalWhen {
            day,
            time: parse_local_time(time)?,
        })
    }

    /// The instant this names in `zone`, which must be after `now` and at most
    /// [`MAX_YEARS_AHEAD`] years ahead.
    pub fn resolve(
        &self,
        zone: ZoneName,
        now: DateTime<Utc>,
    ) -> Result<ResolvedLocal, LocalTimeError> {
        let today = now.with_timezone(&zone.tz()).date_naive();
        let at = |date: NaiveDate| resolve_local(zone, date.and_time(self.time));
        let ahead = |resolved: &ResolvedLocal| resolved.instant > now;
        let resolved = match self.day {
            Some(LocalDay::Date(date)) => at(date),
            Some(LocalDay::Today) => at(today),
            Some(LocalDay::Tomorrow) => at(next_day(today)),
            Some(LocalDay::Next(weekday)) => (0..=7)
                .filter_map(|offset| today.checked_add_days(Days::new(offset)))
                .filter(|date| date.weekday() == weekday)
                .map(at)
                .find(ahead)
                .unwrap_or_else(|| at(today)),
            None => {
                let today_at = at(today);
                if ahead(&today_at) {
                    today_at
                } else {
                    at(next_day(today))
                }
            }
        };
        if !ahead(&resolved) {
            return Err(LocalTimeError::InPast {
                value: self.to_string(),
                zone: zone.to_string(),
                now_local: now_in_words(zone, now),
            });
        }
        if resolved.instant > latest_allowed(zone, now) {
            return Err(LocalTimeError::TooFarAhead {
                value: self.to_string(),
                limit_years: MAX_YEARS_AHEAD,
            });
        }
        Ok(resolved)
    }
}

impl fmt::Display for LocalWhen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(day) = self.day {
            write!(f, "{day} ")?;
        }
        write!(f, "{:02}:{:02}", self.time.hour(), self.time.minute())
    }
}

fn next_day(date: NaiveDate) -> NaiveDate {
    date.succ_opt().unwrap_or(date)
}
