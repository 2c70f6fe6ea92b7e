//! Messages of the channel actor (`ChannelActor`), on every chat platform.

use actix::Message;

use crate::actors::channels::ChannelError;

/// An event from the platform's event source (a Telegram update, a Matrix sync's event).
/// Answers `Ok` once it is handled for good (its message stored, its answer given, or
/// ignored on purpose); an `Err` means "not yet": the same event must come again later.
///
/// Sent by the adapters' event sources (`channels/telegram/polling.rs`,
/// `channels/telegram/webhook.rs`, `channels/matrix/sync.rs`); handled in
/// `channels/core/actor.rs`.
#[derive(Debug)]
pub struct EventReceived<E>(pub E);

impl<E: 'static> Message for EventReceived<E> {
    type Result = Result<(), ChannelError>;
}

/// Stop receiving and sending: hearth is shutting down (or a test restarts it). Answers
/// once the parts being sent were sent (or `STOP_WAIT` passed).
///
/// Sent by `Platforms::stop` (`app/platforms.rs`, from `RunningApp::stop`); handled in
/// `channels/core/actor.rs`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopChannel;
