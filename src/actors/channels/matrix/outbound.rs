//! Sending to Matrix: one outbox task per room, replies as `m.notice` with the markdown
//! rendered to HTML and a plain body, threaded to the message they answer (and kept in
//! its thread), typing notices, read receipts, and patience with a homeserver that is
//! busy (429) or away.

use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::Room;
use matrix_sdk::room::reply::{EnforceThread, Reply};
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::api::error::{ErrorKind, RetryAfter};
use matrix_sdk::ruma::events::AnyMessageLikeEventContent;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::events::room::message::{AddMentions, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId};
use tokio::sync::mpsc;

use super::{Shared, confirmations};
use crate::format::{matrix_html, plain_text};

/// Attempts of a send before hearth gives up (about half an hour of trouble).
const MAX_ATTEMPTS: u32 = 64;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

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

/// Something to show in a room.
#[derive(Debug)]
pub(super) enum Outgoing {
    Reply {
        conversation: Conversation,
        markdown: String,
        reply_to: Option<OwnedEventId>,
    },
    Ask {
        conversation: Conversation,
        prompt: String,
        confirmation_id: String,
        member_id: String,
        reply_to: Option<OwnedEventId>,
    },
    Close {
        conversation: Conversation,
        confirmation_id: String,
        outcome: String,
    },
}

impl Outgoing {
    pub(super) fn room_key(&self) -> String {
        match self {
            Outgoing::Reply { conversation, .. }
            | Outgoing::Ask { conversation, .. }
            | Outgoing::Close { conversation, .. } => conversation.room_id.to_string(),
        }
    }
}

pub(super) async fn run_outbox(shared: Arc<Shared>, mut jobs: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(job) = jobs.recv().await {
        match job {
            Outgoing::Reply {
                conversation,
                markdown,
                reply_to,
            } => {
                let content = RoomMessageEventContent::notice_html(
                    plain_text(&markdown),
                    matrix_html(&markdown),
                );
                send_message(&shared, &conversation, content, reply_to).await;
            }
            Outgoing::Ask {
                conversation,
                prompt,
                confirmation_id,
                member_id,
                reply_to,
            } => {
                confirmations::send_prompt(
                    &shared,
                    &conversation,
                    &prompt,
                    &confirmation_id,
                    &member_id,
                    reply_to,
                )
                .await
            }
            Outgoing::Close {
                conversation,
                confirmation_id,
                outcome,
            } => {
                confirmations::close_prompt(&shared, &conversation, &confirmation_id, &outcome)
                    .await
            }
        }
    }
}

pub(super) fn room(shared: &Shared, conversation: &Conversation) -> Option<Room> {
    let room = shared.client.get_room(&conversation.room_id);
    if room.is_none() {
        tracing::error!(room = %conversation.room_id, "reply for a room hearth is not in");
    }
    room
}

/// Send `content` in the conversation, as a reply to `reply_to` (staying in its thread)
/// when given; the event id it got.
pub(super) async fn send_message(
    shared: &Shared,
    conversation: &Conversation,
    content: RoomMessageEventContent,
    reply_to: Option<OwnedEventId>,
) -> Option<OwnedEventId> {
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
    send_event(shared, &room, content.into()).await
}

/// Send any message-like event, waiting out rate limits and outages.
pub(super) async fn send_event(
    shared: &Shared,
    room: &Room,
    content: AnyMessageLikeEventContent,
) -> Option<OwnedEventId> {
    let mut attempt = 0u32;
    loop {
        match room.send(content.clone()).await {
            Ok(sent) => return Some(sent.response.event_id),
            Err(error) if attempt + 1 < MAX_ATTEMPTS && is_transient(&error) => {
                let wait = retry_after(&error).unwrap_or_else(|| {
                    Duration::from_millis(500u64 << attempt.min(10)).min(MAX_BACKOFF)
                });
                tracing::info!(room = %room.room_id(), %error, wait_ms = wait.as_millis() as u64,
                    "matrix send failed; trying again");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(error) => {
                shared.metrics.error("matrix_send");
                tracing::error!(room = %room.room_id(), %error, "message not delivered to matrix");
                return None;
            }
        }
    }
}

fn is_transient(error: &matrix_sdk::Error) -> bool {
    match error.client_api_error_kind() {
        Some(ErrorKind::LimitExceeded(_)) => true,
        Some(_) => false,
        // Not an answer from the homeserver: the network, a timeout, a 5xx.
        None => matches!(error, matrix_sdk::Error::Http(_)),
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
