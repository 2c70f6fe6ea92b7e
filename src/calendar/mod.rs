//! The family's calendars (seed 004's `calendar_config`): CalDAV accounts (Nextcloud,
//! Fastmail, iCloud, Radicale) searched and written, subscribed `.ics` calendars searched.
//! The model gives local dates and times in the member's zone; hearth computes instants,
//! expands recurring events and says every event back in the member's words.
//!
//! - `caldav.rs`: the requests (PROPFIND, REPORT calendar-query, GET, PUT and DELETE with
//!   ETags) over reqwest, with timeouts and bounded answers; `xml.rs`: their `multistatus`
//!   answers read;
//! - `events.rs`: iCalendar objects read and written (`icalendar`), an event's change
//!   written over its old text so other clients' properties stay;
//! - `expand.rs`: a recurring event's occurrences in a range, on its zone's wall clock;
//! - `account.rs`: one profile's calendars, found once, searched together, each failure
//!   told to readiness as degraded, and each reached once for `hearth doctor`;
//! - `timing.rs`: a tool's arguments read into an event; `phrasing.rs`: events in words;
//! - `tools.rs`: the four tools and what their confirmation shows.

mod account;
pub mod caldav;
mod events;
mod expand;
mod phrasing;
mod timing;
mod tools;
mod xml;

pub use account::{Checked as CalendarsChecked, Found, ProfileCalendars, Searched};
pub use events::{EventData, EventTime, wall_clock};
pub use expand::Occurrence;
pub use phrasing::{say_event, say_occurrence};
pub use tools::{
    ADD_CALENDAR_EVENT, CALENDAR_TOOL_NAMES, CalendarToolset, DELETE_CALENDAR_EVENT,
    MODIFY_CALENDAR_EVENT, SEARCH_CALENDAR_EVENTS, is_changed_elsewhere, shown_version,
    tool_error_text,
};
