//! The calendar tools against a real CalDAV server (`caldav.rs`), hostile subscribed feeds, and
//! a kill between writing an event and answering.

mod caldav;
mod calendar_hostile;
mod calendar_kill;
