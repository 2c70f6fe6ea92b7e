//! Channel actors: one per platform. They turn a platform event into an
//! `Inbound`, drop senders who are not family members, and render replies back
//! in the platform's idiom. Only this folder knows a chat platform's types.

mod attachments;
mod console;
mod console_remote;
mod http;
pub mod matrix;
mod messages;
mod outboxes;
pub mod telegram;
mod typing;

pub use console::{ConsoleChannel, run_console};
pub use console_remote::{RemoteConsoleError, RemoteConsoleSettings, run_remote_console};
pub use http::{ForgetReply, HttpChannel, HttpSubmitError, SubmitHttpInbound};
pub use messages::{ChannelError, DeliverReply, ReplyKind};
