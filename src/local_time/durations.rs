//! ISO 8601 durations (`PnYnMnWnDTnHnMnS`) as a tool's delay: parsed strictly, applied in the
//! member's zone with the date parts nominal (`P1D`: the same wall-clock time tomorrow, across
//! DST) and the time parts exact (`PT24H`: 24 hours later).

use std::fmt;

use chrono::{DateTime, Days, Months, TimeDelta, Utc};

use super::error::shown;
use super::instants::{latest_allowed, resolve_local};
use super::{LocalTimeError, MAX_YEARS_AHEAD, ZoneName};

const MILLIS_PER_SECOND: u128 = 1_000;
const MILLIS_PER_MINUTE: u128 = 60 * MILLIS_PER_SECOND;
const MILLIS_PER_HOUR: u128 = 60 * MILLIS_PER_MINUTE;
/// Any duration longer than this is further ahead than [`MAX_YEARS_AHEAD`] from any instant.
const MAX_DAYS: u64 = 366 * MAX_YEARS_AHEAD as u64 + 1;

/// A positive ISO 8601 duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsoDuration {
    text: String,
    /// Calendar months (years count twelve), added to the local date.
    months: u32,
    /// Calendar days (weeks count seven), added to the local date.
    days: u64,
    /// Hours, minutes and seconds, added to the instant.
    exact: TimeDelta,
}

struct Component {
    designator: char,
    whole: u64,
    /// Digits after the decimal sign, if any.
    fraction: Option<String>,
}

impl IsoDuration {
    /// Parses `PnYnMnWnDTnHnMnS`. Designators come in that order, each at most once; only the
    /// last of the time parts (H, M, S) may have a fraction (`PT1.5H`, `PT0,5S`), at most
    /// millisecond precise. Zero, negative, empty and oversized durations are errors.
    pub fn parse(text: &str) -> Result<Self, LocalTimeError> {
        let trimmed = text.trim();
        let bad = |reason: &str| LocalTimeError::BadDuration {
            value: shown(text),
            reason: reason.to_string(),
        };
        if trimmed.is_empty() {
            return Err(bad("it is empty"));
        }
        if trimmed.starts_with('-') {
            return Err(LocalTimeError::NegativeDuration { value: shown(text) });
        }
        let upper = trimmed.to_ascii_uppercase();
        let Some(body) = upper.strip_prefix('P') else {
            return Err(bad("it must start with P"));
        };
        let (date_part, time_part) = match body.split_once('T') {
            Some((date_part, time_part)) => {
                if time_part.is_empty() {
                    return Err(bad("nothing follows T"));
                }
                (date_part, Some(time_part))
            }
            None => (body, None),
        };
        let date_components = components(date_part, &['Y', 'M', 'W', 'D']).map_err(|r| bad(&r))?;
        let time_components = match time_part {
            Some(time_part) => components(time_part, &['H', 'M', 'S']).map_err(|r| bad(&r))?,
            None => Vec::new(),
        };
        if date_components.is_empty() && time_components.is_empty() {
            return Err(bad("nothing follows P"));
        }
        if date_components.iter().any(|c| c.fraction.is_some()) {
            return Err(bad(
                "years, months, weeks and days take whole numbers; write a fraction in hours, e.g. PT36H",
            ));
        }
        let fractions = time_components
            .iter()
            .filter(|c| c.fraction.is_some())
            .count();
        let last_has_fraction = time_components.last().is_some_and(|c| c.fraction.is_some());
        if fractions > 1 || (fractions == 1 && !last_has_fraction) {
            return Err(bad("only the last part may have a fraction"));
        }

        let too_far = || LocalTimeError::TooFarAhead {
            value: shown(text),
            limit_years: MAX_YEARS_AHEAD,
        };
        let mut months: u64 = 0;
        let mut days: u64 = 0;
        for component in &date_components {
            let (target, factor) = match component.designator {
                'Y' => (&mut months, 12),
                'M' => (&mut months, 1),
                'W' => (&mut days, 7),
                _ => (&mut days, 1),
            };
            *target = component
                .whole
                .checked_mul(factor)
                .and_then(|value| target.checked_add(value))
                .ok_or_else(too_far)?;
        }
        let mut exact_millis: u128 = 0;
        for component in &time_components {
            let unit = match component.designator {
                'H' => MILLIS_PER_HOUR,
                'M' => MILLIS_PER_MINUTE,
                _ => MILLIS_PER_SECOND,
            };
            exact_millis += u128::from(component.whole) * unit;
            if let Some(fraction) = &component.fraction {
                let scale = 10u128.pow(fraction.len() as u32);
                let numerator = fraction.parse::<u128>().unwrap_or(0) * unit;
                if numerator % scale != 0 {
                    return Err(bad("it is more precise than a millisecond"));
                }
                exact_millis += numerator / scale;
            }
        }
        if months == 0 && days == 0 && exact_millis == 0 {
            return Err(LocalTimeError::ZeroDuration { value: shown(text) });
        }
        let max_millis = u128::from(MAX_DAYS) * 24 * MILLIS_PER_HOUR;
        if months > u64::from(12 * MAX_YEARS_AHEAD) || days > MAX_DAYS || exact_millis > max_millis
        {
            return Err(too_far());
        }
        Ok(IsoDuration {
            text: upper,
            months: months as u32,
            days,
            exact: TimeDelta::milliseconds(exact_millis as i64),
        })
    }

    /// The instant this long after `now` for a member in `zone`. Months and days move the
    /// wall-clock date (the 31st plus a month is the last day of a shorter month; a time the
    /// new date skips moves forward by the gap), hours, minutes and seconds are then added
    /// exactly. Errs when the result lies more than [`MAX_YEARS_AHEAD`] years ahead.
    pub fn after(
        &self,
        zone: ZoneName,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, LocalTimeError> {
        let too_far = || LocalTimeError::TooFarAhead {
            value: self.text.clone(),
            limit_years: MAX_YEARS_AHEAD,
        };
        // Only a date part goes through the wall clock: read back, a time in the second of two
        // repeated hours would become the first.
        let nominal_end = if self.months == 0 && self.days == 0 {
            now
        } else {
            let local = now.with_timezone(&zone.tz()).naive_local();
            let moved = local
                .checked_add_months(Months::new(self.months))
                .and_then(|moved| moved.checked_add_days(Days::new(self.days)))
                .ok_or_else(too_far)?;
            resolve_local(zone, moved).instant
        };
        let end = nominal_end
            .checked_add_signed(self.exact)
            .ok_or_else(too_far)?;
        if end > latest_allowed(zone, now) {
            return Err(too_far());
        }
        Ok(end)
    }

    /// The exact length, when the duration has no date parts (`PT90S`); `None` for `P1D`,
    /// whose length depends on the zone and the day.
    pub fn exact_length(&self) -> Option<TimeDelta> {
        (self.months == 0 && self.days == 0).then_some(self.exact)
    }

    /// The length with a month as 30 days and a day as 24 hours: for how long something
    /// lasts (a calendar event's DURATION), never for when something happens.
    pub fn approximate_length(&self) -> TimeDelta {
        TimeDelta::days(i64::from(self.months) * 30 + i64::try_from(self.days).unwrap_or(0))
            + self.exact
    }
}

impl fmt::Display for IsoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits `1Y2M` into its components, checking the designators' order, that each comes once,
/// and that each has a number.
fn components(part: &str, order: &[char]) -> Result<Vec<Component>, String> {
    let mut found = Vec::new();
    let mut next_allowed = 0;
    let mut number = String::new();
    for character in part.chars() {
        if character.is_ascii_digit() || character == '.' || character == ',' {
            number.push(if character == ',' { '.' } else { character });
            continue;
        }
        let Some(position) = order.iter().position(|&d| d == character) else {
            return Err(if character == 'T' {
                "T appears twice".to_string()
            } else {
                format!("`{character}` is not a designator here")
            });
        };
        if position < next_allowed {
            return Err(format!("`{character}` is out of order or repeated"));
        }
        next_allowed = position + 1;
        found.push(component(&number, character)?);
        number.clear();
    }
    if !number.is_empty() {
        return Err(format!("`{}` has no designator after it", shown(&number)));
    }
    Ok(found)
}

fn component(number: &str, designator: char) -> Result<Component, String> {
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (number, None),
    };
    if whole.is_empty() || fraction.is_some_and(|f| f.is_empty() || f.contains('.')) {
        return Err(format!(
            "`{number}{designator}` needs a number before {designator}"
        ));
    }
    if fraction.is_some_and(|f| f.len() > 9) {
        return Err("it is more precise than a millisecond".to_string());
    }
    let whole = whole
        .parse::<u64>()
        .map_err(|_| format!("`{}` is too large", shown(whole)))?;
    Ok(Component {
        designator,
        whole,
        fraction: fraction.map(str::to_string),
    })
}
