//! A Matrix message from a family member, made an `Inbound` and stored: its text (reply
//! fallbacks removed), the message it replies to as context, images and files downloaded
//! within the size limit, commands with `/` or `!`, `/help` and `/cancel`; invites; and
//! messages this device cannot decrypt.

use matrix_sdk::Room;
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, Relation,
};
use matrix_sdk::ruma::events::{AnySyncMessageLikeEvent, AnySyncTimelineEvent};
use matrix_sdk::ruma::{EventId, OwnedEventId, OwnedUserId};

use super::confirmations;
use super::outbound::{Conversation, send_read_receipt};
use super::{MATRIX_CHANNEL, Shared};
use crate::actors::channels::ChannelError;
use crate::actors::channels::core::attachments::{StoreError, safe_file_name, too_large_note};
use crate::actors::channels::core::commands;
use crate::actors::channels::core::texts::{BUSY_REPLY, help_text};
use crate::actors::request_queue::{SubmitError, SubmitInbound, Submitted};
use crate::ports::{
    Attachment, AttachmentKind, Inbound, InboundExtras, OutgoingMessage, QuotedMessage, now_ms,
};

/// What the actor does once an event is handled.
#[derive(Debug)]
pub(super) enum FollowUp {
    /// A turn of this conversation runs (again): show "typing…".
    TurnStarted(Conversation),
    /// Store this in the outbox and deliver it.
    Send(OutgoingMessage),
}
pub(super) const UNDECRYPTABLE_REPLY: &str = "I can't read your last message: it was encrypted \
     for devices I don't have keys from. Please verify this device (or send it again), and I'll \
     answer.";

fn say(conversation: &Conversation, text: String, reply_to: &EventId) -> Vec<FollowUp> {
    vec![FollowUp::Send(commands::say(
        MATRIX_CHANNEL,
        &conversation.conversation_id(),
        text,
        Some(reply_to.to_string()),
    ))]
}

/// The member's own words: a reply's quoted fallback (`> …` lines) removed.
fn own_text(body: &str, is_reply: bool) -> String {
    if !is_reply || !body.starts_with("> ") {
        return body.trim().to_string();
    }
    body.lines()
        .skip_while(|line| line.starts_with('>'))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

pub(super) async fn handle_message(
    shared: &Shared,
    room: Room,
    event: OriginalSyncRoomMessageEvent,
) -> Result<Vec<FollowUp>, ChannelError> {
    let Some(member) = shared.family.by_matrix_id(event.sender.as_str()) else {
        return Ok(Vec::new());
    };
    let (thread_root, replied_to) = match &event.content.relates_to {
        // An edit changes a message already answered: not a new message.
        Some(Relation::Replacement(_)) => return Ok(Vec::new()),
        Some(Relation::Reply(reply)) => (None, Some(reply.in_reply_to.event_id.clone())),
        Some(Relation::Thread(thread)) => (
            Some(thread.event_id.clone()),
            thread
                .in_reply_to
                .as_ref()
                .filter(|_| !thread.is_falling_back)
                .map(|reply| reply.event_id.clone()),
        ),
        _ => (None, None),
    };
    let conversation = Conversation {
        room_id: room.room_id().to_owned(),
        thread_root,
    };
    let (body, media) = match &event.content.msgtype {
        MessageType::Text(text) => (text.body.clone(), None),
        MessageType::Emote(emote) => (emote.body.clone(), None),
        MessageType::Image(image) => (
            image.caption().unwrap_or_default().to_string(),
            Some(Media {
                kind: AttachmentKind::Image,
                name: image.filename().to_string(),
                source: image.source.clone(),
                mime: image.info.as_ref().and_then(|info| info.mimetype.clone()),
                size: image
                    .info
                    .as_ref()
                    .and_then(|info| info.size)
                    .map(u64::from),
            }),
        ),
        MessageType::File(file) => (
            file.caption().unwrap_or_default().to_string(),
            Some(Media {
                kind: AttachmentKind::File,
                name: file.filename().to_string(),
                source: file.source.clone(),
                mime: file.info.as_ref().and_then(|info| info.mimetype.clone()),
                size: file.info.as_ref().and_then(|info| info.size).map(u64::from),
            }),
        ),
        // Notices are what bots send; anything else (audio, location...) has nothing to read.
        MessageType::Notice(_) => return Ok(Vec::new()),
        _ => {
            send_read_receipt(room, event.event_id.clone());
            return Ok(say(
                &conversation,
                "I can read text, images and files; that message had none.".into(),
                &event.event_id,
            ));
        }
    };
    let mut text = own_text(&body, replied_to.is_some());
    // "yes" / "no" in reply to a prompt answers it.
    if let Some(prompt) = &replied_to
        && let Some(approve) = yes_or_no(&text)
        && let Some(confirmation_id) =
            confirmations::confirmation_of(shared, prompt.as_str()).await?
    {
        send_read_receipt(room.clone(), event.event_id.clone());
        return confirmations::answer(
            shared,
            room,
            event.sender.as_str(),
            &confirmation_id,
            approve,
        )
        .await;
    }
    if let Some(rest) = text.strip_prefix('!') {
        text = format!("/{rest}");
    }
    if let Some(command) = text
        .strip_prefix('/')
        .and_then(|rest| rest.split_whitespace().next())
    {
        match command.to_lowercase().as_str() {
            "help" | "start" => {
                send_read_receipt(room, event.event_id.clone());
                let help = help_text(
                    &shared.settings.commands,
                    &shared.settings.default_description,
                    Some('!'),
                );
                return Ok(say(&conversation, help, &event.event_id));
            }
            "cancel" => {
                send_read_receipt(room, event.event_id.clone());
                return cancel(shared, &member.id, &conversation, &event.event_id).await;
            }
            _ => {}
        }
    }
    // An event seen before (a sync replayed after hearth stopped): the message was accepted
    // already, and its files are not downloaded twice.
    if shared
        .inbox
        .knows_event(MATRIX_CHANNEL, event.event_id.as_str())
        .await?
    {
        return Ok(Vec::new());
    }
    let id = Inbound::new_id();
    let mut attachments = Vec::new();
    if let Some(media) = media {
        attachments.push(fetch(shared, &id, media).await);
    }
    let quoted = match &replied_to {
        Some(event_id) => quote(shared, &room, event_id).await,
        None => None,
    };
    let inbound = Inbound {
        id,
        channel: MATRIX_CHANNEL.into(),
        conversation_id: conversation.conversation_id(),
        member_id: member.id.clone(),
        text,
        platform_event_id: Some(event.event_id.to_string()),
        received_at_ms: now_ms(),
        extras: InboundExtras {
            quoted,
            attachments,
        },
    };
    let submitted = shared
        .queue
        .send(SubmitInbound { inbound })
        .await
        .map_err(|_| ChannelError::QueueStopped)?;
    let follow_up = match submitted {
        Ok(Submitted::Accepted | Submitted::AnsweredQuestion { .. }) => {
            vec![FollowUp::TurnStarted(conversation)]
        }
        Ok(Submitted::Duplicate(_)) => Vec::new(),
        Err(SubmitError::Busy { .. }) => say(&conversation, BUSY_REPLY.into(), &event.event_id),
        Err(SubmitError::Storage(error)) => return Err(ChannelError::Storage(error)),
    };
    send_read_receipt(room, event.event_id.clone());
    Ok(follow_up)
}

fn yes_or_no(text: &str) -> Option<bool> {
    match text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_lowercase()
        .as_str()
    {
        "yes" | "y" | "ok" | "confirm" | "✅" => Some(true),
        "no" | "n" | "cancel" | "❌" => Some(false),
        _ => None,
    }
}

async fn cancel(
    shared: &Shared,
    member_id: &str,
    conversation: &Conversation,
    event_id: &EventId,
) -> Result<Vec<FollowUp>, ChannelError> {
    let messages = commands::cancel(
        &shared.queue,
        member_id,
        MATRIX_CHANNEL,
        &conversation.conversation_id(),
        Some(event_id.to_string()),
    )
    .await?;
    Ok(messages.into_iter().map(FollowUp::Send).collect())
}

/// The replied-to message as context, when it can be read.
async fn quote(shared: &Shared, room: &Room, event_id: &OwnedEventId) -> Option<QuotedMessage> {
    let event = match room.load_or_fetch_event(event_id, None).await {
        Ok(event) => event,
        Err(error) => {
            tracing::debug!(%error, "replied-to matrix event not found");
            return None;
        }
    };
    let (sender, body) = match event.raw().deserialize().ok()? {
        AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::RoomMessage(message)) => {
            let message = message.as_original()?;
            let body = match &message.content.msgtype {
                MessageType::Text(text) => text.body.clone(),
                MessageType::Notice(notice) => notice.body.clone(),
                MessageType::Emote(emote) => emote.body.clone(),
                other => format!("({})", other.msgtype()),
            };
            (message.sender.clone(), body)
        }
        _ => return None,
    };
    Some(QuotedMessage {
        author: author_name(shared, &sender),
        text: own_text(&body, body.starts_with("> ")),
    })
}

fn author_name(shared: &Shared, sender: &OwnedUserId) -> String {
    if shared.client.user_id() == Some(sender.as_ref()) {
        return "hearth (you)".to_string();
    }
    shared
        .family
        .by_matrix_id(sender.as_str())
        .and_then(|member| member.name.clone())
        .unwrap_or_else(|| sender.localpart().to_string())
}

struct Media {
    kind: AttachmentKind,
    name: String,
    source: MediaSource,
    mime: Option<String>,
    size: Option<u64>,
}

/// Download the media (decrypted, for encrypted rooms) into message `inbox_id`'s folder,
/// streamed and cut off at the size limit (`media.rs`).
async fn fetch(shared: &Shared, inbox_id: &str, media: Media) -> Attachment {
    let limit = shared.settings.max_attachment_bytes;
    let mut attachment = Attachment {
        kind: media.kind,
        file_name: safe_file_name(&media.name),
        mime_type: media.mime,
        size_bytes: media.size.unwrap_or(0),
        path: None,
        note: None,
    };
    // Said to be too large: not even asked for.
    if media.size.is_some_and(|size| size > limit) {
        attachment.note = Some(too_large_note(limit));
        return attachment;
    }
    let path = shared
        .settings
        .attachments_dir
        .join(inbox_id)
        .join(&attachment.file_name);
    match super::media::download(shared, media.source, &path, limit).await {
        Ok(size) => {
            attachment.size_bytes = size;
            attachment.path = Some(path.display().to_string());
        }
        Err(StoreError::TooLarge { .. }) => attachment.note = Some(too_large_note(limit)),
        Err(StoreError::Failed(reason)) => {
            tracing::warn!(file = %attachment.file_name, %reason, "matrix attachment not downloaded");
            attachment.note = Some(format!("the download failed ({reason})"));
        }
    }
    attachment
}

/// An invite: joined when a family member sent it, refused otherwise.
pub(super) async fn handle_invite(shared: &Shared, room: Room, sender: OwnedUserId) {
    let family = shared.family.by_matrix_id(sender.as_str()).is_some();
    // Joining waits for the homeserver; the sync must not wait for it.
    tokio::spawn(async move {
        let mut delay = std::time::Duration::from_secs(1);
        for _ in 0..6 {
            let done = if family {
                room.join().await
            } else {
                room.leave().await
            };
            match done {
                Ok(()) => {
                    tracing::info!(room = %room.room_id(), %sender, joined = family, "matrix invite answered");
                    return;
                }
                Err(error) => {
                    tracing::warn!(room = %room.room_id(), %error, "matrix invite not answered yet");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
            }
        }
    });
}

/// A message this device holds no key for: the sender is asked to verify it, and the
/// message is counted (`/metrics`, `/readyz`).
pub(super) async fn handle_undecryptable(
    shared: &Shared,
    room: Room,
    event: OriginalSyncRoomEncryptedEvent,
) -> Vec<FollowUp> {
    if shared.family.by_matrix_id(event.sender.as_str()).is_none() {
        return Vec::new();
    }
    shared
        .metrics
        .increment("hearth_matrix_undecryptable_total", &[]);
    tracing::warn!(room = %room.room_id(), sender = %event.sender, "matrix message could not be decrypted");
    let conversation = Conversation {
        room_id: room.room_id().to_owned(),
        thread_root: None,
    };
    let device = shared
        .client
        .device_id()
        .map(|device| format!(" (my device: {device})"))
        .unwrap_or_default();
    say(
        &conversation,
        format!("{UNDECRYPTABLE_REPLY}{device}"),
        &event.event_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_keeps_only_the_members_own_words() {
        assert_eq!(
            own_text("> <@bob:localhost> dinner at 7?\n\nmake it 8", true),
            "make it 8"
        );
        assert_eq!(own_text("> quoting myself", false), "> quoting myself");
        assert_eq!(own_text("  plain  ", true), "plain");
    }

    #[test]
    fn yes_and_no_in_a_few_words() {
        assert_eq!(yes_or_no("Yes!"), Some(true));
        assert_eq!(yes_or_no("no."), Some(false));
        assert_eq!(yes_or_no("maybe"), None);
    }
}
