//! What every channel actor answers when it cannot hand a platform event over; the replies
//! it delivers (`DeliverReply`) are the request queue's messages.

/// Why a channel could not hand a platform event over for good: it must come again.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("the request queue is not running")]
    QueueStopped,
    #[error(transparent)]
    Storage(#[from] crate::ports::StorageError),
}
