//! The errors of local-time parsing and computing: each names the value that was wrong and
//! what to write instead, so the model can correct its call from the message alone.

/// What a tool wrote that hearth could not turn into a time; nothing is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalTimeError {
    #[error(
        "unknown time zone `{value}`: write an IANA zone name such as Europe/Berlin or America/New_York"
    )]
    UnknownZone { value: String },

    #[error(
        "`{value}` is not an ISO 8601 duration ({reason}): write one such as PT90S, PT45M, PT2H, P1D or P1W"
    )]
    BadDuration { value: String, reason: String },

    #[error("the duration `{value}` is zero: give a positive delay such as PT10M")]
    ZeroDuration { value: String },

    #[error(
        "the duration `{value}` is negative: give a positive delay such as PT10M, or a date and time"
    )]
    NegativeDuration { value: String },

    #[error(
        "`{value}` reaches past {limit_years} years from now: give a nearer time (at most {limit_years} years ahead)"
    )]
    TooFarAhead { value: String, limit_years: u32 },

    #[error(
        "`{value}` is not a date: write YYYY-MM-DD (e.g. 2025-11-26), today, tomorrow or a weekday such as monday"
    )]
    BadDate { value: String },

    #[error(
        "`{value}` is not a time of day: write HH:MM on the 24-hour clock, e.g. 08:00 or 17:30"
    )]
    BadTime { value: String },

    #[error(
        "`{value}` in {zone} is in the past (it is now {now_local} there): give a later date or time"
    )]
    InPast {
        value: String,
        zone: String,
        now_local: String,
    },

    #[error(
        "`{value}` is not a recurrence ({reason}): write daily, weekdays, weekly on mon,thu, monthly on 15, or an RRULE such as FREQ=WEEKLY;BYDAY=MO"
    )]
    BadRecurrence { value: String, reason: String },

    #[error(
        "`{value}` is not a usable RRULE ({reason}): write one such as FREQ=WEEKLY;BYDAY=MO,TH or FREQ=MONTHLY;BYMONTHDAY=15;COUNT=6"
    )]
    BadRrule { value: String, reason: String },

    #[error(
        "the RRULE `{value}` fires more often than every {min_minutes} minutes ({reason}): use FREQ=HOURLY or a longer period"
    )]
    RruleTooFrequent {
        value: String,
        reason: String,
        min_minutes: u32,
    },

    #[error(
        "the recurrence `{value}` starting {start} never fires: check its BYDAY, BYMONTHDAY, BYMONTH, COUNT and UNTIL"
    )]
    NeverFires { value: String, start: String },
}

/// Longer values are named by their beginning: an error goes back to the model, and
/// oversized input must not come back oversized.
const SHOWN_VALUE_CHARS: usize = 80;

/// A value as an error names it: whole, or its first characters and `...`.
pub(super) fn shown(value: &str) -> String {
    match value.char_indices().nth(SHOWN_VALUE_CHARS) {
        Some((cut, _)) => format!("{}...", &value[..cut]),
        None => value.to_string(),
    }
}
