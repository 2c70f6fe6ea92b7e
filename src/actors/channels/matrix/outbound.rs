//! Sending to Matrix: the channel core's `Platform` for the homeserver. Replies are
//! `m.notice` with the markdown rendered to HTML and a plain body, threaded to the message
//! they answer (and kept in its thread); prompts and their closing are `confirmations.rs`'s;
//! every part carries a transaction id from its outbox row. Order, retries and the outbox
//! are the core's. Also typing notices and read receipts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use matrix_sdk::Room;
use matrix_sdk::room::reply::{EnforceThread, Reply};
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};
use matrix_sdk::ruma::events::AnyMessageLikeEventContent;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::events::room::message::{AddMentions, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedTransactionId};

use super::{MATRIX_CHANNEL, Shared, confirmations};
use crate::actors::channels::core::{DeliveryError, Platform};
use crate::format::{matrix_html, plain_text};
use crate::ports::{OutboxEntry, OutgoingKind};

/// A room, and the thread within it when the member wrote in one: a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Conversation {
    pub(super) room_id: OwnedRoomId,
    pub(super) thread_root: Option<OwnedEventId>,
}

impl Conversation {
    /// `Inbound::conversation_id`: `<room id>` or `<room id>/<thread root event id>`
    /// (room ids hold no `/`).
    pub(super) fn conversation_id(&self) -> String {
        match &self.thread_root {
            Some(root) => format!("{}/{root}", self.room_id),
            None => self.room_id.to_string(),
        }
    }

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

/// What a message is delivered as, part by part.
pub(super) enum Part {
    /// A reply: an `m.notice` with the markdown as HTML and a plain body.
    Notice,
    /// A confirmation's prompt, then the two reactions seeded on it.
    Prompt,
    Reaction(&'static str),
    /// The edit (`m.replace`) that settles a prompt.
    Close,
}

/// The homeserver as the channel core's `Platform`. Every part is sent with a transaction
/// id made from its outbox row, so a part resent after a restart is recognised by the
/// homeserver and shown once.
pub(super) struct MatrixPlatform {
    pub(super) shared: Arc<Shared>,
}

#[async_trait]
impl Platform for MatrixPlatform {
    type Part = Part;

    fn channel(&self) -> &'static str {
        MATRIX_CHANNEL
    }

    fn parts(&self, entry: &OutboxEntry) -> Vec<Part> {
        match &entry.message.kind {
            OutgoingKind::Reply => vec![Part::Notice],
            OutgoingKind::Prompt { .. } => vec![
                Part::Prompt,
                Part::Reaction(confirmations::YES),
                Part::Reaction(confirmations::NO),
            ],
            OutgoingKind::Close { .. } => vec![Part::Close],
        }
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        _index: usize,
        part: &Part,
        transaction_id: &str,
    ) -> Result<Option<String>, DeliveryError> {
        let shared = &self.shared;
        let message = &entry.message;
        let Some(conversation) = Conversation::parse(&message.conversation_id) else {
            return Err(DeliveryError::Permanent(format!(
                "{:?} is not a matrix room",
                message.conversation_id
            )));
        };
        let reply_to = message
            .reply_to_event
            .as_deref()
            .and_then(|event| event.parse().ok());
        let transaction_id: OwnedTransactionId = transaction_id.into();
        match (part, &message.kind) {
            (Part::Notice, _) => {
                let content = RoomMessageEventContent::notice_html(
                    plain_text(&message.text),
                    matrix_html(&message.text),
                );
                let sent =
                    send_message(shared, &conversation, content, reply_to, transaction_id).await?;
                Ok(Some(sent.to_string()))
            }
            (
                Part::Prompt,
                OutgoingKind::Prompt {
                    confirmation_id, ..
                },
            ) => confirmations::send_prompt(
                shared,
                &conversation,
                &message.text,
                confirmation_id,
                reply_to,
                transaction_id,
            )
            .await
            .map(Some),
            (
                Part::Reaction(key),
                OutgoingKind::Prompt {
                    confirmation_id, ..
                },
            ) => {
                confirmations::seed_reaction(
                    shared,
                    &conversation,
                    confirmation_id,
                    key,
                    transaction_id,
                )
                .await?;
                Ok(None)
            }
            (Part::Close, OutgoingKind::Close { confirmation_id }) => {
                confirmations::close_prompt(shared, confirmation_id, &message.text, transaction_id)
                    .await?;
                Ok(None)
            }
            _ => Err(DeliveryError::Permanent(
                "a part that does not fit its message".into(),
            )),
        }
    }
}

/// The room of `conversation`; a room hearth does not know (yet: the sync may add it) is a
/// failure that may pass.
pub(super) fn room(shared: &Shared, conversation: &Conversation) -> Result<Room, DeliveryError> {
    shared
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
    shared: &Shared,
    conversation: &Conversation,
    content: RoomMessageEventContent,
    reply_to: Option<OwnedEventId>,
    transaction_id: OwnedTransactionId,
) -> Result<OwnedEventId, DeliveryError> {
    let room = room(shared, conversation)?;
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

/// A failed request to the homeserver, as the channel core sees it.
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
            RetryAfter::DateTime(at) => at.duration_since(std::time::SystemTime::now()).ok(),
        },
        _ => None,
    }
}

/// Show (or stop showing) "typing…" in the conversation's room.
pub(super) fn send_typing(shared: Arc<Shared>, conversation: Conversation, typing: bool) {
    tokio::spawn(async move {
        let Some(room) = shared.client.get_room(&conversation.room_id) else {
            return;
        };
        if let Err(error) = room.typing_notice(typing).await {
            tracing::debug!(room = %conversation.room_id, %error, "typing notice not sent");
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
            assert_eq!(Conversation::parse(id).unwrap().conversation_id(), id);
        }
        assert_eq!(Conversation::parse("alice"), None);
    }
}
