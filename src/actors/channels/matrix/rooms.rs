//! Matrix rooms as hearth talks in them: the conversation a room (or a thread in it) is,
//! sending an event with its transaction id (threaded to the message it answers), a failed
//! request as the channel core sees it (the homeserver's `retry_after` included), typing
//! notices and read receipts.

use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::Room;
use matrix_sdk::room::reply::{EnforceThread, Reply};
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};
use matrix_sdk::ruma::events::AnyMessageLikeEventContent;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::events::room::message::{AddMentions, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedTransactionId};

use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::actors::channels::core::DeliveryError;
use crate::ids::{ConversationKey, IdError};

/// A room, and the thread within it when the member wrote in one: a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Conversation {
    pub(super) room_id: OwnedRoomId,
    pub(super) thread_root: Option<OwnedEventId>,
}

impl Conversation {
    /// The room itself, outside any thread.
    pub(super) fn room(room_id: OwnedRoomId) -> Self {
        Conversation {
            room_id,
            thread_root: None,
        }
    }

    /// The conversation's id on the Matrix channel: `<room id>` or
    /// `<room id>/<thread root event id>` (room ids hold no `/`).
    pub(super) fn conversation_id(&self) -> String {
        match &self.thread_root {
            Some(root) => format!("{}/{root}", self.room_id),
            None => self.room_id.to_string(),
        }
    }

    /// The conversation this room (and thread) is.
    pub(super) fn key(&self) -> Result<ConversationKey, IdError> {
        if self.room_id.as_str().contains('/') {
            return Err(IdError::SlashInRoomId(self.room_id.to_string()));
        }
        ConversationKey::new(MATRIX_CHANNEL, &self.conversation_id())
    }

    /// The room (and thread) `conversation` is, if it is a Matrix one.
    pub(super) fn of_key(conversation: &ConversationKey) -> Option<Self> {
        if conversation.channel() != MATRIX_CHANNEL {
            return None;
        }
        Self::parse(conversation.conversation_id())
    }

    /// A conversation id made by `conversation_id`.
    pub(super) fn parse(conversation_id: &str) -> Option<Self> {
        let (room, thread) = match conversation_id.split_once('/') {
            Some((room, thread)) => (room, Some(thread.parse().ok()?)),
            None => (conversation_id, None),
        };
        Some(Conversation {
            room_id: room.parse().ok()?,
            thread_root: thread,
        })
    }
}

/// The room of `conversation`; a room hearth does not know (yet: the sync may add it) is a
/// failure that may pass.
pub(super) fn room(
    adapter: &MatrixAdapter,
    conversation: &Conversation,
) -> Result<Room, DeliveryError> {
    adapter
        .client
        .get_room(&conversation.room_id)
        .ok_or_else(|| DeliveryError::Transient {
            reason: format!("hearth is not in room {}", conversation.room_id),
            retry_after: None,
        })
}

/// Send `content` in the conversation, as a reply to `reply_to` (staying in its thread)
/// when given; the event id it got.
pub(super) async fn send_message(
    adapter: &MatrixAdapter,
    conversation: &Conversation,
    content: RoomMessageEventContent,
    reply_to: Option<OwnedEventId>,
    transaction_id: OwnedTransactionId,
) -> Result<OwnedEventId, DeliveryError> {
    let room = room(adapter, conversation)?;
    let reply_to = reply_to.or_else(|| conversation.thread_root.clone());
    let content = match reply_to {
        Some(event_id) => {
            let reply = Reply {
                event_id,
                enforce_thread: EnforceThread::MaybeThreaded,
                add_mentions: AddMentions::No,
            };
            match room.make_reply_event(content.clone().into(), reply).await {
                Ok(threaded) => threaded,
                Err(error) => {
                    // The message may be gone; the reply still goes out, unthreaded.
                    tracing::debug!(%error, "reply sent without its relation");
                    content
                }
            }
        }
        None => content,
    };
    send_event(&room, content.into(), transaction_id).await
}

/// Send any message-like event with `transaction_id`.
pub(super) async fn send_event(
    room: &Room,
    content: AnyMessageLikeEventContent,
    transaction_id: OwnedTransactionId,
) -> Result<OwnedEventId, DeliveryError> {
    match room.send(content).with_transaction_id(transaction_id).await {
        Ok(sent) => Ok(sent.response.event_id),
        Err(error) => Err(delivery_error(&error)),
    }
}

/// A failed request to the homeserver, as the channel core sees it (which caps the pause
/// the homeserver asks for).
fn delivery_error(error: &matrix_sdk::Error) -> DeliveryError {
    let reason = error.to_string();
    match error.client_api_error_kind() {
        Some(ErrorKind::LimitExceeded(_)) => DeliveryError::Transient {
            reason,
            retry_after: retry_after(error),
        },
        Some(_) => DeliveryError::Permanent(reason),
        // Not an answer from the homeserver: the network, a timeout, a 5xx.
        None if matches!(error, matrix_sdk::Error::Http(_)) => DeliveryError::Transient {
            reason,
            retry_after: None,
        },
        None => DeliveryError::Permanent(reason),
    }
}

fn retry_after(error: &matrix_sdk::Error) -> Option<Duration> {
    match error.client_api_error_kind()? {
        ErrorKind::LimitExceeded(data) => match data.retry_after? {
            RetryAfter::Delay(delay) => Some(delay),
            RetryAfter::DateTime(at) => at.duration_since(crate::clock::system_now()).ok(),
        },
        _ => None,
    }
}

/// Show (or stop showing) "typing…" in room `room_id`.
pub(super) fn send_typing(adapter: Arc<MatrixAdapter>, room_id: OwnedRoomId, typing: bool) {
    tokio::spawn(async move {
        let Some(room) = adapter.client.get_room(&room_id) else {
            return;
        };
        if let Err(error) = room.typing_notice(typing).await {
            tracing::debug!(room = %room_id, %error, "typing notice not sent");
        }
    });
}

/// Mark `event_id` read: the member sees hearth got their message.
pub(super) fn send_read_receipt(room: Room, event_id: OwnedEventId) {
    tokio::spawn(async move {
        if let Err(error) = room
            .send_single_receipt(ReceiptType::Read, ReceiptThread::Unthreaded, event_id)
            .await
        {
            tracing::debug!(room = %room.room_id(), %error, "read receipt not sent");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_round_trip_through_their_ids() {
        for id in ["!abc:localhost", "!abc:localhost/$root:localhost"] {
            let conversation = Conversation::parse(id).unwrap();
            assert_eq!(conversation.conversation_id(), id);
            let key = conversation.key().unwrap();
            assert_eq!(key.to_string(), format!("matrix:{id}"));
            assert_eq!(Conversation::of_key(&key), Some(conversation));
        }
        assert_eq!(Conversation::parse("alice"), None);
    }

    #[test]
    fn a_room_id_holding_a_slash_is_no_conversation() {
        // Found by the fuzz target `matrix_event`: the Matrix ids' parser takes a room id
        // with a '/', and its key read back named the room before the '/'.
        let room: OwnedRoomId = "!abc:examp//example.org/ghi".parse().unwrap();
        assert_eq!(
            Conversation::room(room).key(),
            Err(IdError::SlashInRoomId("!abc:examp//example.org/ghi".into()))
        );
    }
}
