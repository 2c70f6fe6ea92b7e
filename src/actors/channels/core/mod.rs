//! The channel core: what every chat platform shares, written once. A platform is an
//! adapter (`PlatformAdapter`): it turns its events into platform-neutral ones, loads a
//! message's quote and files, acknowledges what it must, shows typing, receives events and
//! delivers the parts of a message (`Platform`). Everything else lives here:
//!
//! - `actor.rs`: `ChannelActor`, the one actor of every platform: its tasks, follow-ups,
//!   `DeliverReply`, stopping; and `ChannelDeps`;
//! - `messages.rs`: `EventReceived` and `StopChannel`;
//! - `adapter.rs`: the `PlatformAdapter` trait and the neutral events;
//! - `inbound.rs`: the inbound sequence: member lookup, the "seen before" check, commands,
//!   files, `SubmitInbound` and its outcome; answers to confirmations; cancels from a
//!   reminder list;
//! - `commands.rs`: commands parsed once (`/help`, `/cancel`, `/reminders`, a profile's,
//!   another bot's), what `/cancel` and an answer do;
//! - `delivery.rs`: the durable outbox delivered in order per conversation, with retries,
//!   a maximum age, and what was delivered noted, so a restart loses and repeats nothing;
//!   `delivery_ids.rs`: the rows a delivery has taken, so reading the outbox again never
//!   sends one twice;
//! - `leader.rs`: on a database shared by several workers, the one worker that receives
//!   the platform's events and delivers its outbox (`channel:<platform>` lease), woken by
//!   the others when they store a message;
//! - `platform.rs`: the `Platform` trait (deliver one part) and its error, and the routes a
//!   platform adds to the HTTP API (`PlatformRoutes`);
//! - `tasks.rs`: the event source and delivery workers under one cancellation token;
//! - `prompts.rs`: where a confirmation's prompts are noted, so a close reaches each;
//! - `reminder_answers.rs`: Done and Snooze on a fired reminder's prompt, sent to the
//!   scheduler;
//! - `reminder_lists.rs`: `/reminders`, the member's list from the scheduler with a way to
//!   cancel each entry, and a cancel from one decided;
//! - `list_notes.rs`: where a platform noted a list it shows, and how its entries ended;
//! - `membership.rs`: `/invite`, `/join` (a stranger's one command), `/link`, `/signin`
//!   and `/family`, and the members told what changed;
//! - `private_chats.rs`: telling a member in their own chats, and where a secret (a code,
//!   a sign-in link) goes: only where they alone read it;
//! - `texts.rs`: `/help`, the busy reply, the words a settled prompt ends with;
//! - `typing.rs`: "typing…" while a conversation's turns run;
//! - `attachments.rs`: safe file names, the note for a file over the size limit, and the
//!   download streamed to disk within it.
//!
//! A build without any chat platform (`--no-default-features`) still compiles the core, so
//! every build checks it, but nothing calls most of it.
#![cfg_attr(
    not(any(feature = "telegram", feature = "matrix")),
    allow(dead_code, unused_imports)
)]

pub(crate) mod actor;
#[cfg(test)]
mod actor_tests;
pub(crate) mod adapter;
pub mod attachments;
pub(crate) mod commands;
pub(crate) mod delivery;
mod delivery_ids;
pub(crate) mod inbound;
mod leader;
#[cfg(test)]
mod leader_tests;
pub(crate) mod list_notes;
pub(crate) mod membership;
pub(crate) mod messages;
pub(crate) mod platform;
pub(crate) mod private_chats;
pub(crate) mod prompts;
pub(crate) mod reminder_answers;
pub(crate) mod reminder_lists;
pub(crate) mod tasks;
pub(crate) mod texts;
pub(crate) mod typing;

pub(crate) use actor::ChannelActor;
pub use actor::ChannelDeps;
pub(crate) use adapter::{
    AnswerOutcome, Incoming, IncomingAnswer, IncomingCancel, IncomingMessage, PlatformAdapter,
};
pub use adapter::{IncomingReading, ProfileCommands};
pub use delivery::DeliverySettings;
pub use membership::{MembershipParts, SignInLinks};
pub use messages::{EventReceived, StopChannel};
pub use platform::PlatformRoutes;
pub(crate) use platform::{DeliveryError, Platform};
pub use private_chats::PrivateChats;
pub use reminder_answers::ReminderAnswers;
