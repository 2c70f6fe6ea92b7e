//! The entry points of the fuzz targets in `fuzz/` (CONTRIBUTING.md, "Fuzzing") that are
//! not public otherwise: each reads or writes outside input through hearth's own code, with
//! no server, store or platform behind it, and returns what was read for the target to
//! check. Nothing in hearth itself calls them through this module; they are the same
//! functions the channels, the web routes and the tools call.
//!
//! - [`read_update_json`] (target `telegram_update`): a Telegram update's JSON read as the
//!   Telegram adapter reads it, into an [`IncomingReading`]; [`bot_api_reading`] says how
//!   far the Bot API types read it (a message of a kind they cannot read has no text, an
//!   update they cannot read is ignored).
//! - [`read_room_message`] (target `matrix_event`): a Matrix room message event read as
//!   the Matrix adapter reads it, into a [`RoomMessageReading`] (files as
//!   [`MediaReading`]); [`is_event_id`] says which thread roots it can follow.
//! - [`read_form`] (target `inbound_form`): the body of `POST /inbound` read as the route
//!   reads it, into a [`ReceivedForm`] or a [`FormRefusal`].
//! - [`question_form`], [`render_question`], [`read_reply`] (target `elicitation_form`): an
//!   MCP server's form schema and the member's [`FormReply`] to it.
//! - [`new_event_text`], [`changed_event_text`] (target `icalendar`): an event written as
//!   the calendar tools write it ([`EventFields`]), new or over another client's text, for
//!   reading back with `hearth::calendar::read_events`.
//!
//! The other targets use hearth's public API (`hearth::format`, `hearth::local_time`,
//! `hearth::config`, `hearth::calendar`, `hearth::voice`, the plugin and scripts
//! manifests).

pub use crate::actors::channels::core::IncomingReading;
#[cfg(feature = "matrix")]
pub use crate::actors::channels::matrix::inbound::{
    MediaReading, RoomMessageReading, is_event_id, read_room_message,
};
#[cfg(feature = "telegram")]
pub use crate::actors::channels::telegram::inbound::{
    BotApiReading, bot_api_reading, read_update_json,
};
pub use crate::calendar::events::{EventFields, changed_event_text, new_event_text};
pub use crate::http::inbound_form::{FormRefusal, ReceivedForm, read_form};
#[cfg(feature = "mcp")]
pub use crate::tools::mcp::elicitation_form::{
    FormReply, question_form, read_reply, render_question,
};
