//! Local time for reminders, scheduled tasks and the calendar: every date computation
//! hearth does on a member's behalf, so the model never does date arithmetic. Pure
//! functions, no I/O.
//!
//! A tool takes either a delay as an ISO 8601 duration ([`IsoDuration`]: `PT90S`, `PT2H`,
//! `P1D`) or a local day and time ([`LocalWhen`]: `2025-11-26` or `tomorrow`, `08:00`) in the
//! member's IANA time zone ([`ZoneName`]), and an optional [`Recurrence`] (`daily`,
//! `weekdays`, `weekly on mon,thu`, `monthly on 15`, or an RFC 5545 RRULE). hearth computes
//! the instant and says it back in the member's words and zone ([`phrasing`]), so a wrong
//! guess shows at once.
//!
//! Wall-clock rules, the same everywhere in this module ([`resolve_local`]):
//! - a local time that does not exist (the hour skipped when clocks go forward) moves
//!   forward by the gap: 02:30 on a spring-forward night in Europe/Berlin is 03:30;
//! - a local time that exists twice (the hour repeated when clocks go back) is the first;
//! - a recurrence is computed on wall-clock dates and times in the zone: "daily at 08:00"
//!   stays 08:00 local across DST, fires once on a night with a repeated hour and never
//!   skips a day;
//! - the date parts of a duration (years, months, weeks, days) are nominal in the zone
//!   (`P1D` is the same wall-clock time tomorrow), its time parts exact (`PT24H`).
//!
//! Nothing is ever computed further than [`MAX_YEARS_AHEAD`] years from now.

mod durations;
mod error;
mod instants;
pub mod phrasing;
mod recurrence;
mod rrule_counted;
mod rrule_rule;
mod zone;

#[cfg(test)]
mod durations_tests;
#[cfg(test)]
mod instants_tests;
#[cfg(test)]
mod phrasing_tests;
#[cfg(test)]
mod recurrence_tests;
#[cfg(test)]
mod rrule_counted_tests;
#[cfg(test)]
mod rrule_tests;

pub use durations::IsoDuration;
pub use error::LocalTimeError;
pub use instants::{
    LocalDay, LocalWhen, ResolvedLocal, WallClockShift, latest_allowed, parse_local_day,
    parse_local_time, resolve_local,
};
pub use recurrence::{Recurrence, RecurringTime};
pub use rrule_rule::{MIN_RECURRENCE_SPACING_MINUTES, RecurrenceRule, WalkCut, WalkLimits};
pub use zone::ZoneName;

/// How far ahead any computed instant may lie, in calendar years from now.
pub const MAX_YEARS_AHEAD: u32 = 10;
