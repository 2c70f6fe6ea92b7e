//! The entry points of the fuzz targets in `fuzz/` (CONTRIBUTING.md, "Fuzzing") that are
//! not public otherwise: each reads outside input through hearth's own code, with no
//! server, store or platform behind it, and returns what was read for the target to check.
//! Nothing in hearth itself calls them.

pub use crate::actors::channels::core::IncomingReading;
#[cfg(feature = "matrix")]
pub use crate::actors::channels::matrix::inbound::{
    MediaReading, RoomMessageReading, read_room_message,
};
#[cfg(feature = "telegram")]
pub use crate::actors::channels::telegram::inbound::read_update_json;
pub use crate::http::inbound_form::{FormRefusal, ReceivedForm, read_form};
#[cfg(feature = "mcp")]
pub use crate::tools::mcp::elicitation_form::{
    FormReply, question_form, read_reply, render_question,
};
