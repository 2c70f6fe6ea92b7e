//! Messages of the `TelegramChannel`.

use actix::Message;

use crate::actors::channels::ChannelError;

/// An update from Telegram (long poll or webhook). Answers `Ok` once it is handled for
/// good (its message stored, its button answered, or ignored on purpose); an `Err`
/// means "not yet": the same update must be handed over again later.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ChannelError>")]
pub struct UpdateReceived {
    pub update: teloxide::types::Update,
}

/// Stop polling and sending: hearth is shutting down (or a test restarts it).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopTelegram;
