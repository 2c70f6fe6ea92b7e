//! Messages of the `MatrixChannel`.

use actix::Message;

use crate::actors::channels::ChannelError;
use matrix_sdk::Room;
use matrix_sdk::ruma::OwnedUserId;
use matrix_sdk::ruma::events::reaction::OriginalSyncReactionEvent;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::message::OriginalSyncRoomMessageEvent;

/// What the sync loop hands over.
#[derive(Debug)]
pub enum MatrixEvent {
    Message {
        room: Room,
        event: Box<OriginalSyncRoomMessageEvent>,
    },
    Reaction {
        room: Room,
        event: Box<OriginalSyncReactionEvent>,
    },
    /// The bot was invited to `room` by `sender`.
    Invite { room: Room, sender: OwnedUserId },
    /// An encrypted event this device holds no key for.
    Undecryptable {
        room: Room,
        event: Box<OriginalSyncRoomEncryptedEvent>,
    },
}

/// An event from a sync. Answers `Ok` once it is handled for good; an `Err` means
/// "not yet": the sync position stays, and the event comes again.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ChannelError>")]
pub struct EventReceived(pub MatrixEvent);

/// Stop syncing and sending: hearth is shutting down (or a test restarts it).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopMatrix;
