//! Reading a Matrix event for the channel core: a message (its sender, room and thread,
//! text with reply fallbacks removed, the message it replies to as its quote, an image,
//! file or audio clip (a voice message too) downloaded within the size limit), an answer ("yes" / "no" in reply to a prompt,
//! a ✅ / ❌ reaction on it), a cancel (a number in reply to a reminder list); and what
//! only Matrix has: invites, and messages this device cannot decrypt.

use matrix_sdk::Room;
use matrix_sdk::ruma::events::reaction::OriginalSyncReactionEvent;
use matrix_sdk::ruma::events::relation::RelationType;
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, Relation,
};
use matrix_sdk::ruma::events::{AnySyncMessageLikeEvent, AnySyncTimelineEvent};
use matrix_sdk::ruma::{OwnedEventId, OwnedUserId, RoomId};

use super::MatrixAdapter;
use super::confirmations::{prompt_of, reaction_answer, yes_or_no};
use super::lists::{is_list, list_number};
use super::rooms::{Conversation, send_read_receipt};
use super::sync::MatrixEvent;
use crate::actors::channels::ChannelError;
use crate::actors::channels::core::attachments::{StoreError, safe_file_name, too_large_note};
use crate::actors::channels::core::commands;
use crate::actors::channels::core::{
    AnswerOutcome, Incoming, IncomingAnswer, IncomingCancel, IncomingMessage,
};
use crate::ids::{ConversationKey, IdError};
use crate::ports::{Attachment, AttachmentKind, QuotedMessage};

pub(super) const UNDECRYPTABLE_REPLY: &str = "I can't read your last message: it was encrypted \
     for devices I don't have keys from. Please verify this device (or send it again), and I'll \
     answer.";

/// A Matrix message behind the core's `IncomingMessage`: where it is, what it replies to,
/// and its file.
#[derive(Debug)]
pub(crate) struct MatrixMessage {
    room: Room,
    event_id: OwnedEventId,
    replied_to: Option<OwnedEventId>,
    media: Option<Media>,
}

/// The event behind an answer: a reply saying yes or no, or a number to a reminder list
/// (which gets a read receipt), or a reaction.
#[derive(Debug)]
pub(crate) enum MatrixAnswer {
    Reply { room: Room, event_id: OwnedEventId },
    Reaction,
}

/// `event` as the channel core handles it.
pub(super) async fn read(
    adapter: &MatrixAdapter,
    event: MatrixEvent,
) -> Result<Incoming<MatrixMessage, MatrixAnswer>, ChannelError> {
    match event {
        MatrixEvent::Message { room, event } => read_message(adapter, room, *event).await,
        MatrixEvent::Reaction { room, event } => read_reaction(adapter, room, *event).await,
        MatrixEvent::Invite { room, sender } => {
            handle_invite(adapter, room, sender).await?;
            Ok(Incoming::Ignored)
        }
        MatrixEvent::Undecryptable { room, event } => {
            Ok(read_undecryptable(adapter, &room, &event))
        }
    }
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

/// A room message as hearth reads it before the store is asked whether it answers a prompt
/// or a list: where it is, what it replies to, the member's own words and its file.
struct ReadMessage {
    conversation: Conversation,
    replied_to: Option<OwnedEventId>,
    text: String,
    media: Option<Media>,
}

/// The message `event` of room `room_id`, read without I/O; `None` for what is not a new
/// message from a person (an edit, a bot's notice).
fn read_content(room_id: &RoomId, event: &OriginalSyncRoomMessageEvent) -> Option<ReadMessage> {
    let (thread_root, replied_to) = match &event.content.relates_to {
        // An edit changes a message already answered: not a new message. An edit whose
        // target is not an event id reads as a relation of unknown shape, still `m.replace`.
        Some(relation) if relation.rel_type() == Some(RelationType::Replacement) => return None,
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
        room_id: room_id.to_owned(),
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
                duration_seconds: None,
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
                duration_seconds: None,
            }),
        ),
        // A voice message (MSC3245) is `m.audio` with a marker, read the same way.
        MessageType::Audio(audio) => (
            audio.caption().unwrap_or_default().to_string(),
            Some(Media {
                kind: AttachmentKind::Audio,
                name: audio.filename().to_string(),
                source: audio.source.clone(),
                mime: audio.info.as_ref().and_then(|info| info.mimetype.clone()),
                size: audio
                    .info
                    .as_ref()
                    .and_then(|info| info.size)
                    .map(u64::from),
                duration_seconds: audio
                    .info
                    .as_ref()
                    .and_then(|info| info.duration)
                    .and_then(|duration| whole_seconds(duration.as_millis())),
            }),
        ),
        // Notices are what bots send.
        MessageType::Notice(_) => return None,
        // A location, a video...: nothing to read.
        _ => (String::new(), None),
    };
    let text = own_text(&body, replied_to.is_some());
    Some(ReadMessage {
        conversation,
        replied_to,
        text,
        media,
    })
}

async fn read_message(
    adapter: &MatrixAdapter,
    room: Room,
    event: OriginalSyncRoomMessageEvent,
) -> Result<Incoming<MatrixMessage, MatrixAnswer>, ChannelError> {
    let Some(ReadMessage {
        conversation,
        replied_to,
        text,
        media,
    }) = read_content(room.room_id(), &event)
    else {
        return Ok(Incoming::Ignored);
    };
    // "yes" / "no" in reply to a prompt answers it.
    if let Some(prompt) = &replied_to
        && let Some(approve) = yes_or_no(&text)
        && let Some(prompt) = prompt_of(adapter, prompt.as_str()).await?
    {
        return Ok(Incoming::Answer(IncomingAnswer {
            sender: event.sender.to_string(),
            event_id: event.event_id.to_string(),
            // The room the answer was given in (a thread of it counts too).
            conversation: Conversation::room(room.room_id().to_owned()).key().ok(),
            prompt,
            approve,
            source: MatrixAnswer::Reply {
                room,
                event_id: event.event_id,
            },
        }));
    }
    // A number in reply to a reminder list cancels that entry.
    if let Some(list_event) = &replied_to
        && let Some(schedule_id) = list_number(&text)
        && is_list(adapter, list_event.as_str()).await?
    {
        return Ok(Incoming::Cancel(IncomingCancel {
            sender: event.sender.to_string(),
            event_id: event.event_id.to_string(),
            conversation: Conversation::room(room.room_id().to_owned()).key().ok(),
            list_event: Some(list_event.to_string()),
            schedule_id,
            source: MatrixAnswer::Reply {
                room,
                event_id: event.event_id,
            },
        }));
    }
    let Ok(key) = conversation.key() else {
        tracing::warn!(room = %room.room_id(), "matrix message from no conversation");
        return Ok(Incoming::Ignored);
    };
    Ok(Incoming::Message(IncomingMessage {
        sender: event.sender.to_string(),
        sender_name: None,
        conversation: key,
        event_id: event.event_id.to_string(),
        text,
        source: MatrixMessage {
            room,
            event_id: event.event_id,
            replied_to,
            media,
        },
    }))
}

/// A reaction: ✅ or ❌ on an open prompt answers it.
async fn read_reaction(
    adapter: &MatrixAdapter,
    room: Room,
    event: OriginalSyncReactionEvent,
) -> Result<Incoming<MatrixMessage, MatrixAnswer>, ChannelError> {
    let relation = &event.content.relates_to;
    let Some(approve) = reaction_answer(&relation.key) else {
        return Ok(Incoming::Ignored);
    };
    let Some(prompt) = prompt_of(adapter, relation.event_id.as_str()).await? else {
        return Ok(Incoming::Ignored);
    };
    Ok(Incoming::Answer(IncomingAnswer {
        sender: event.sender.to_string(),
        event_id: event.event_id.to_string(),
        conversation: Conversation::room(room.room_id().to_owned()).key().ok(),
        prompt,
        approve,
        source: MatrixAnswer::Reaction,
    }))
}

/// The message was handled: the member sees hearth got it.
pub(super) fn message_handled(message: &MatrixMessage) {
    send_read_receipt(message.room.clone(), message.event_id.clone());
}

/// An answer was handled: a reply (yes, no, a list's number) from a member gets its read
/// receipt.
pub(super) fn answer_handled(answer: &MatrixAnswer, outcome: AnswerOutcome) {
    if outcome != AnswerOutcome::Stranger {
        answer_read(answer);
    }
}

/// A member's answer was read: a reply gets its read receipt (a reaction has none).
pub(super) fn answer_read(answer: &MatrixAnswer) {
    if let MatrixAnswer::Reply { room, event_id } = answer {
        send_read_receipt(room.clone(), event_id.clone());
    }
}

/// The replied-to message as context, when it can be read.
pub(super) async fn quote(
    adapter: &MatrixAdapter,
    message: &MatrixMessage,
) -> Option<QuotedMessage> {
    let (room, event_id) = (&message.room, message.replied_to.as_ref()?);
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
        author: author_name(adapter, &sender),
        text: own_text(&body, body.starts_with("> ")),
    })
}

fn author_name(adapter: &MatrixAdapter, sender: &OwnedUserId) -> String {
    if adapter.client.user_id() == Some(sender.as_ref()) {
        return "hearth (you)".to_string();
    }
    adapter
        .family
        .by_matrix_id(sender.as_str())
        .and_then(|member| member.name.clone())
        .unwrap_or_else(|| sender.localpart().to_string())
}

#[derive(Debug)]
struct Media {
    kind: AttachmentKind,
    name: String,
    source: MediaSource,
    mime: Option<String>,
    size: Option<u64>,
    /// How long an audio clip plays, as its event says.
    duration_seconds: Option<u32>,
}

/// Milliseconds as the nearest whole second.
fn whole_seconds(milliseconds: u128) -> Option<u32> {
    u32::try_from((milliseconds + 500) / 1000).ok()
}

/// The message's file, downloaded into message `inbox_id`'s folder.
pub(super) async fn attachments(
    adapter: &MatrixAdapter,
    message: &MatrixMessage,
    inbox_id: &str,
) -> Vec<Attachment> {
    match &message.media {
        Some(media) => vec![fetch(adapter, inbox_id, media).await],
        None => Vec::new(),
    }
}

/// Download the media (decrypted, for encrypted rooms) into message `inbox_id`'s folder,
/// streamed and cut off at the size limit (`media.rs`).
async fn fetch(adapter: &MatrixAdapter, inbox_id: &str, media: &Media) -> Attachment {
    let limit = adapter.settings.max_attachment_bytes;
    let mut attachment = Attachment {
        kind: media.kind,
        file_name: safe_file_name(&media.name),
        mime_type: media.mime.clone(),
        size_bytes: media.size.unwrap_or(0),
        path: None,
        note: None,
        duration_seconds: media.duration_seconds,
        transcript: None,
    };
    // Said to be too large: not even asked for.
    if media.size.is_some_and(|size| size > limit) {
        attachment.note = Some(too_large_note(limit));
        return attachment;
    }
    let path = adapter
        .settings
        .attachments_dir
        .join(inbox_id)
        .join(&attachment.file_name);
    match super::media::download(adapter, media.source.clone(), &path, limit).await {
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

/// An invite: joined when a family member (as stored now) sent it, or a stranger while a
/// code adding a member is open (so they can send `/join CODE`), for a few rooms at most
/// (`stranger_rooms.rs`); refused otherwise.
async fn handle_invite(
    adapter: &MatrixAdapter,
    room: Room,
    sender: OwnedUserId,
) -> Result<(), ChannelError> {
    adapter.family.refresh().await?;
    let family = adapter.family.by_matrix_id(sender.as_str()).is_some()
        || (adapter.membership.is_some()
            && adapter
                .stranger_rooms
                .admit(adapter, &room.room_id().to_owned())
                .await);
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
    Ok(())
}

/// A message this device holds no key for: the sender is asked to verify it, and the
/// message is counted (`/metrics`, `/readyz`).
fn read_undecryptable(
    adapter: &MatrixAdapter,
    room: &Room,
    event: &OriginalSyncRoomEncryptedEvent,
) -> Incoming<MatrixMessage, MatrixAnswer> {
    if adapter.family.by_matrix_id(event.sender.as_str()).is_none() {
        return Incoming::Ignored;
    }
    adapter
        .metrics
        .increment("hearth_matrix_undecryptable_total", &[]);
    tracing::warn!(room = %room.room_id(), sender = %event.sender, "matrix message could not be decrypted");
    let Ok(conversation) = Conversation::room(room.room_id().to_owned()).key() else {
        return Incoming::Ignored;
    };
    let device = adapter
        .client
        .device_id()
        .map(|device| format!(" (my device: {device})"))
        .unwrap_or_default();
    Incoming::Say(commands::say(
        &conversation,
        format!("{UNDECRYPTABLE_REPLY}{device}"),
        Some(event.event_id.to_string()),
    ))
}

/// What hearth reads of a room message event on its own, before the homeserver or the store
/// is asked anything: what the fuzz target `matrix_event` checks against the event's JSON.
#[derive(Debug)]
pub struct RoomMessageReading {
    /// The conversation it is in, as stored (`matrix:<room id>[/<thread root>]`).
    pub conversation: Result<ConversationKey, IdError>,
    /// The room id and thread root read back from that conversation's id.
    pub conversation_read_back: Option<(String, Option<String>)>,
    pub replied_to: Option<String>,
    /// The member's own words.
    pub text: String,
    /// What a reply saying this answers a prompt with.
    pub answer: Option<bool>,
    /// The reminder list entry a reply saying this cancels.
    pub list_entry: Option<i64>,
    /// Its file, as recorded before the download.
    pub file: Option<MediaReading>,
}

/// A message's file as its event describes it.
#[derive(Debug)]
pub struct MediaReading {
    pub kind: AttachmentKind,
    /// The name it is stored under in the message's folder.
    pub file_name: String,
    pub mime: Option<String>,
    pub size: Option<u64>,
    pub duration_seconds: Option<u32>,
}

/// Whether `text` is an event id as Matrix writes them (`$…`): a thread whose root is not
/// one is no thread hearth can follow, and its message is read as the room's.
pub fn is_event_id(text: &str) -> bool {
    <&matrix_sdk::ruma::EventId>::try_from(text).is_ok()
}

/// Reads `event`, a room message event's JSON as a sync delivers it, in room `room_id`:
/// `Ok(None)` for an edit or a notice, `Err` when either is not what Matrix sends.
pub fn read_room_message(room_id: &str, event: &str) -> Result<Option<RoomMessageReading>, String> {
    let room_id = <&RoomId>::try_from(room_id).map_err(|error| error.to_string())?;
    let event: OriginalSyncRoomMessageEvent =
        serde_json::from_str(event).map_err(|error| error.to_string())?;
    let Some(read) = read_content(room_id, &event) else {
        return Ok(None);
    };
    let conversation = read.conversation.key();
    let conversation_read_back = conversation
        .as_ref()
        .ok()
        .and_then(Conversation::of_key)
        .map(|back| {
            (
                back.room_id.to_string(),
                back.thread_root.map(|root| root.to_string()),
            )
        });
    Ok(Some(RoomMessageReading {
        conversation,
        conversation_read_back,
        replied_to: read.replied_to.map(|event_id| event_id.to_string()),
        answer: yes_or_no(&read.text),
        list_entry: list_number(&read.text),
        file: read.media.map(|media| MediaReading {
            kind: media.kind,
            file_name: safe_file_name(&media.name),
            mime: media.mime,
            size: media.size,
            duration_seconds: media.duration_seconds,
        }),
        text: read.text,
    }))
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
    fn an_edit_is_not_a_new_message_even_when_its_target_is_no_event_id() {
        // Found by the fuzz target `matrix_event`: an `m.replace` naming `Hev0:example.org`
        // was read as the new message "* fixed".
        let edit = |target: &str| {
            format!(
                r#"{{"type": "m.room.message", "event_id": "$ev1:example.org",
                "sender": "@ann:example.org", "origin_server_ts": 1700000000000,
                "content": {{"msgtype": "m.text", "body": "* fixed",
                "m.new_content": {{"msgtype": "m.text", "body": "fixed"}},
                "m.relates_to": {{"rel_type": "m.replace", "event_id": "{target}"}}}}}}"#
            )
        };
        for target in ["$ev0:example.org", "Hev0:example.org"] {
            let read = read_room_message("!abc:example.org", &edit(target)).unwrap();
            assert!(read.is_none(), "the edit of {target} was read as {read:?}");
        }
    }

    #[test]
    fn a_thread_whose_root_is_no_event_id_is_read_as_the_rooms() {
        // Found by the fuzz target `matrix_event`: the root `$root:exampl`.org` is no event
        // id; the message is the room's, not a thread's.
        let message = |root: &str| {
            format!(
                r#"{{"type": "m.room.message", "event_id": "$ev1:example.org",
                "sender": "@ann:example.org", "origin_server_ts": 1700000000000,
                "content": {{"msgtype": "m.text", "body": "hi",
                "m.relates_to": {{"rel_type": "m.thread", "event_id": "{root}"}}}}}}"#
            )
        };
        let room = "!abc:example.org";
        let read = read_room_message(room, &message("$root:example.org"))
            .unwrap()
            .unwrap();
        assert_eq!(
            read.conversation.unwrap().conversation_id(),
            "!abc:example.org/$root:example.org"
        );
        assert!(!is_event_id("$root:exampl`.org"));
        let read = read_room_message(room, &message("$root:exampl`.org"))
            .unwrap()
            .unwrap();
        assert_eq!(read.conversation.unwrap().conversation_id(), room);
    }

    #[test]
    fn an_audio_clips_milliseconds_are_its_nearest_second() {
        assert_eq!(whole_seconds(2_435), Some(2));
        assert_eq!(whole_seconds(2_500), Some(3));
        assert_eq!(whole_seconds(400), Some(0));
    }
}
