//! Channel actors: one per platform. They turn a platform event into an
//! `Inbound`, drop senders who are not family members, and render replies back
//! in the platform's idiom. Only this folder knows a chat platform's types.
//!
//! Every chat platform runs as the channel core's one actor (`core::ChannelActor`) over
//! its adapter (`telegram/`, `matrix/`), which only parses, renders and sends: the inbound
//! sequence, the durable outbox and its delivery, `/help` and `/cancel`, confirmation
//! answers and prompts closing, typing, attachments and stopping are the core's. The HTTP
//! API and the console answer from the inbox. Each platform is a Cargo feature
//! (`telegram`, `matrix`, both in the default build).

mod console;
mod console_remote;
pub mod core;
mod http;
#[cfg(feature = "matrix")]
pub mod matrix;
mod messages;
#[cfg(feature = "telegram")]
pub mod telegram;

pub use console::{ConsoleChannel, run_console};
pub use console_remote::{RemoteConsoleError, RemoteConsoleSettings, run_remote_console};
pub use core::{
    ChannelDeps, DeliverySettings, MembershipParts, PlatformRoutes, PrivateChats, SignInLinks,
};
pub use http::{AwaitReply, ForgetReply, HttpChannel, HttpSubmitError, SubmitHttpInbound};
pub use messages::{ChannelError, DeliverStored};
