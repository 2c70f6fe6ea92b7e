//! The family's calendars (seed 004's `calendar_config`): CalDAV accounts (Nextcloud,
//! Fastmail, iCloud, Radicale) searched and written, subscribed `.ics` calendars searched.
//! The model gives local dates and times in the member's zone; hearth computes instants,
//! expands recurring events and says every event back in the member's words.
//!
//! - `caldav.rs`: the requests (PROPFIND, REPORT calendar-query, GET, PUT and DELETE with
//!   ETags) over reqwest, with timeouts and bounded answers; `xml.rs`: their `multistatus`
//!   answers read;
//! - `bounds.rs`: what one calendar object may hold (nesting, components, line length),
//!   checked by a linear pass before the parser sees it;
//! - `events.rs`: iCalendar objects read and written (`icalendar`), an event's change
//!   written over its old text so other clients' properties stay;
//! - `expand.rs`: a recurring event's occurrences in a range, on its zone's wall clock,
//!   its rule walked once per search within a budget;
//! - `reading.rs`: the fetched texts read and expanded on the blocking pool with a time
//!   limit, the earliest occurrences kept; `read_cache.rs`: each text's events kept under
//!   its hash, so the same text fetched again is not parsed again (bounded, per profile);
//! - `account.rs`: one profile's calendars, found once, searched together, each failure
//!   told to readiness as degraded, and each reached once for `hearth doctor`;
//! - `timing.rs`: a tool's arguments read into an event; `phrasing.rs`: events in words;
//! - `tools.rs`: the four tools and what their confirmation shows.

mod account;
mod bounds;
pub mod caldav;
pub(crate) mod events;
mod expand;
mod phrasing;
mod read_cache;
mod reading;
mod timing;
mod tools;
mod xml;

pub use account::{Checked as CalendarsChecked, ProfileCalendars};
pub use bounds::{MAX_COMPONENTS, MAX_LINE_BYTES, MAX_NESTING, Refused};
pub use events::{EventData, EventTime, ReadError, read_events, wall_clock};
pub use expand::{
    ExpansionBudget, MAX_OCCURRENCES_PER_EVENT, MAX_WALKED_PER_EVENT, NotExpanded, Occurrence,
    SEARCH_EXPANSION_TIME, occurrences,
};
pub use phrasing::{say_event, say_occurrence};
pub use read_cache::{MAX_CACHED_BYTES, MAX_CACHED_TEXTS, ReadCache, ReadGroups};
pub use reading::{
    Fetched, Found, MAX_KEPT, OffThreadError, READ_TIME_LIMIT, SearchRange, Searched,
    read_and_expand,
};
pub use tools::{
    ADD_CALENDAR_EVENT, CALENDAR_TOOL_NAMES, CalendarToolset, DELETE_CALENDAR_EVENT,
    MODIFY_CALENDAR_EVENT, SEARCH_CALENDAR_EVENTS, is_changed_elsewhere, shown_version,
    tool_error_text,
};
