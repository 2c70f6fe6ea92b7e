//! What every channel actor answers when it cannot hand a platform event over, and the
//! stored outbox rows others than the queue hand it to deliver (`DeliverStored`); the replies
//! it delivers (`DeliverReply`) are the request queue's messages.

use actix::Message;

use crate::ports::OutgoingMessage;

/// Deliver outbox row `outbox_id`, stored by whatever sends on its own (a fired reminder,
/// its close, a parent told of it): in order with the conversation's other rows.
///
/// Sent by the scheduler (`hand_on`, `scheduler/mod.rs`) and by `PrivateChats::tell_in`
/// (`channels/core/private_chats.rs`: the family's commands, the web page's sign-in);
/// handled in `channels/core/actor.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct DeliverStored {
    pub outbox_id: i64,
    pub message: OutgoingMessage,
}

/// Why a channel could not hand a platform event over for good: it must come again.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("the request queue is not running")]
    QueueStopped,
    #[error(transparent)]
    Storage(#[from] crate::ports::StorageError),
    #[error("reminders not read: {0}")]
    Reminders(#[from] crate::reminders::ListingError),
}
