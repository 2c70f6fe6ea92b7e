//! Reading a Telegram update for the channel core: a message (its sender, chat, text or
//! caption, the message it replies to as its quote, photos, documents, voice notes and
//! audio files downloaded within the size limit) or a button press (an answer to a prompt, or a cancel from a
//! reminder list).

use std::path::Path;

use teloxide::net::Download;
use teloxide::requests::Requester;
use teloxide::types::{CallbackQuery, FileId, Message, MessageKind, Update, UpdateKind};

use super::TelegramAdapter;
use super::chat::{ChatTarget, event_id};
use super::{buttons, list_buttons};
use crate::actors::channels::core::attachments::{
    StoreError, safe_file_name, store_limited, too_large_note,
};
use crate::actors::channels::core::{
    Incoming, IncomingAnswer, IncomingCancel, IncomingMessage, IncomingReading,
};
use crate::ports::{Attachment, AttachmentKind, QuotedMessage};

/// `update` as the channel core handles it: a message from a person, or a button press.
pub(super) async fn read(
    adapter: &TelegramAdapter,
    update: Update,
) -> Incoming<Message, CallbackQuery> {
    adapter.metrics.increment(
        "hearth_telegram_updates_total",
        &[("kind", update_kind(&update.kind))],
    );
    match read_update(update.kind) {
        Ok(incoming) => incoming,
        Err(query) => {
            buttons::not_mine(adapter, &query).await;
            Incoming::Ignored
        }
    }
}

/// An update read as the channel core handles it, without I/O; a press on a button
/// hearth did not make comes back as the error (the presser is told so).
fn read_update(kind: UpdateKind) -> Result<Incoming<Message, CallbackQuery>, Box<CallbackQuery>> {
    match kind {
        UpdateKind::Message(message) => Ok(read_message(message)),
        UpdateKind::CallbackQuery(query) => read_press(query),
        // Only messages and button presses are asked for (`allowed_updates`).
        _ => Ok(Incoming::Ignored),
    }
}

/// Reads `update`, an update's JSON as the Bot API sends it (to the webhook or in
/// `getUpdates`), as the channel core gets it: what the fuzz target `telegram_update`
/// checks against the JSON. `Err` when it is not an update.
pub fn read_update_json(update: &str) -> Result<IncomingReading, String> {
    let update: Update = serde_json::from_str(update).map_err(|error| error.to_string())?;
    Ok(match read_update(update.kind) {
        Ok(incoming) => incoming.into(),
        Err(_) => IncomingReading::NotMine,
    })
}

/// How far the Bot API types read an update: what the fuzz target `telegram_update`
/// expects hearth to make of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BotApiReading {
    /// Read whole.
    Whole,
    /// A message whose kind they cannot read: a kind newer than them, or a part of it they
    /// cannot read (a quoted message whose sender has no id). It is read without text, and
    /// the channel core tells the member it could not be read.
    MessageOfUnknownKind,
    /// An update they cannot read at all (a button press without the fields Telegram always
    /// sends): ignored.
    Unreadable,
}

/// How far the Bot API types read `update`, the JSON of an update.
pub fn bot_api_reading(update: &str) -> BotApiReading {
    match serde_json::from_str::<Update>(update).map(|update| update.kind) {
        Ok(UpdateKind::Message(message)) if matches!(message.kind, MessageKind::Empty {}) => {
            BotApiReading::MessageOfUnknownKind
        }
        Ok(UpdateKind::Error(_)) | Err(_) => BotApiReading::Unreadable,
        Ok(_) => BotApiReading::Whole,
    }
}

fn update_kind(kind: &UpdateKind) -> &'static str {
    match kind {
        UpdateKind::Message(_) => "message",
        UpdateKind::CallbackQuery(_) => "button",
        _ => "other",
    }
}

fn read_message(message: Message) -> Incoming<Message, CallbackQuery> {
    // Channel posts and messages of other bots have no family member behind them.
    let Some(from) = message.from.as_ref().filter(|from| !from.is_bot) else {
        return Incoming::Ignored;
    };
    let target = ChatTarget::of(&message);
    let conversation = match target.conversation() {
        Ok(conversation) => conversation,
        Err(error) => {
            tracing::warn!(chat = target.chat_id, %error, "telegram message from no conversation");
            return Incoming::Ignored;
        }
    };
    Incoming::Message(IncomingMessage {
        sender: from.id.0.to_string(),
        sender_name: Some(from.first_name.clone()).filter(|name| !name.trim().is_empty()),
        conversation,
        event_id: event_id(target.chat_id, message.id),
        text: message
            .text()
            .or_else(|| message.caption())
            .unwrap_or_default()
            .to_string(),
        source: message,
    })
}

/// A button press: answers the prompt, or cancels from the reminder list, in the chat (and
/// topic) of the message whose button was pressed, where it is answered. A press on a
/// button that is not hearth's comes back as the error.
fn read_press(
    query: CallbackQuery,
) -> Result<Incoming<Message, CallbackQuery>, Box<CallbackQuery>> {
    let conversation = query
        .message
        .as_ref()
        .and_then(|message| message.regular_message())
        .and_then(|message| ChatTarget::of(message).conversation().ok());
    let sender = query.from.id.0.to_string();
    // A press is delivered again under the same query id.
    let event_id = format!("press:{}", query.id.0);
    if let Some(schedule_id) = list_buttons::cancel_of(&query) {
        return Ok(Incoming::Cancel(IncomingCancel {
            sender,
            event_id,
            conversation,
            list_event: list_buttons::list_of(&query),
            schedule_id,
            source: query,
        }));
    }
    let Some((prompt, approve)) = buttons::answer_of(&query) else {
        return Err(Box::new(query));
    };
    Ok(Incoming::Answer(IncomingAnswer {
        sender,
        event_id,
        conversation,
        prompt,
        approve,
        source: query,
    }))
}

/// The replied-to message as context: who wrote it and its text.
pub(super) fn quote(adapter: &TelegramAdapter, quoted: &Message) -> QuotedMessage {
    let author = match quoted.from.as_ref() {
        Some(user) if user.is_bot => "hearth (you)".to_string(),
        Some(user) => i64::try_from(user.id.0)
            .ok()
            .and_then(|id| adapter.family.by_telegram_id(id))
            .and_then(|member| member.name.clone())
            .unwrap_or_else(|| user.first_name.clone()),
        None => "someone".to_string(),
    };
    let text = quoted
        .text()
        .or_else(|| quoted.caption())
        .map(str::to_string)
        .unwrap_or_else(|| "(a message without text)".to_string());
    QuotedMessage { author, text }
}

/// The message's photo (its largest size within the limit), document, voice note and audio
/// file, downloaded into the attachments folder of message `inbox_id`.
pub(super) async fn attachments(
    adapter: &TelegramAdapter,
    inbox_id: &str,
    message: &Message,
) -> Vec<Attachment> {
    let limit = adapter.settings.max_attachment_bytes;
    let mut found = Vec::new();
    if let Some(sizes) = message.photo() {
        // Sizes come smallest first; the largest that fits, else the smallest to report.
        let photo = sizes
            .iter()
            .rev()
            .find(|size| u64::from(size.file.size) <= limit)
            .or_else(|| sizes.first());
        if let Some(photo) = photo {
            found.push(
                fetch(
                    adapter,
                    inbox_id,
                    &photo.file.id,
                    u64::from(photo.file.size),
                    format!("photo-{}.jpg", photo.file.unique_id),
                    Some("image/jpeg".into()),
                    AttachmentKind::Image,
                )
                .await,
            );
        }
    }
    if let Some(document) = message.document() {
        let mime = document.mime_type.as_ref().map(ToString::to_string);
        let kind = match &mime {
            Some(mime) if mime.starts_with("image/") => AttachmentKind::Image,
            _ => AttachmentKind::File,
        };
        let name = document
            .file_name
            .clone()
            .unwrap_or_else(|| format!("file-{}", document.file.unique_id));
        found.push(
            fetch(
                adapter,
                inbox_id,
                &document.file.id,
                u64::from(document.file.size),
                name,
                mime,
                kind,
            )
            .await,
        );
    }
    if let Some(voice) = message.voice() {
        // Telegram records voice notes as OGG/Opus and names them nothing.
        let mime = voice
            .mime_type
            .as_ref()
            .map_or_else(|| "audio/ogg".to_string(), ToString::to_string);
        let mut note = fetch(
            adapter,
            inbox_id,
            &voice.file.id,
            u64::from(voice.file.size),
            format!("voice-{}.ogg", voice.file.unique_id),
            Some(mime),
            AttachmentKind::Audio,
        )
        .await;
        note.duration_seconds = Some(voice.duration.seconds());
        found.push(note);
    }
    if let Some(audio) = message.audio() {
        let name = audio
            .file_name
            .clone()
            .unwrap_or_else(|| format!("audio-{}", audio.file.unique_id));
        let mut file = fetch(
            adapter,
            inbox_id,
            &audio.file.id,
            u64::from(audio.file.size),
            name,
            audio.mime_type.as_ref().map(ToString::to_string),
            AttachmentKind::Audio,
        )
        .await;
        file.duration_seconds = Some(audio.duration.seconds());
        found.push(file);
    }
    found
}

async fn fetch(
    adapter: &TelegramAdapter,
    inbox_id: &str,
    file_id: &FileId,
    size_bytes: u64,
    file_name: String,
    mime_type: Option<String>,
    kind: AttachmentKind,
) -> Attachment {
    let mut attachment = Attachment {
        kind,
        file_name: safe_file_name(&file_name),
        mime_type,
        size_bytes,
        path: None,
        note: None,
        duration_seconds: None,
        transcript: None,
    };
    let limit = adapter.settings.max_attachment_bytes;
    if size_bytes > limit {
        attachment.note = Some(too_large_note(limit));
        return attachment;
    }
    let path = adapter
        .settings
        .attachments_dir
        .join(inbox_id)
        .join(&attachment.file_name);
    match download(adapter, file_id, &path, limit).await {
        Ok(()) => attachment.path = Some(path.display().to_string()),
        Err(StoreError::TooLarge { .. }) => attachment.note = Some(too_large_note(limit)),
        Err(StoreError::Failed(reason)) => {
            tracing::warn!(file = %attachment.file_name, %reason, "telegram attachment not downloaded");
            attachment.note = Some(format!("the download failed ({reason})"));
        }
    }
    attachment
}

/// The file, streamed to `path` and cut off past `limit` whatever its stated size.
async fn download(
    adapter: &TelegramAdapter,
    file_id: &FileId,
    path: &Path,
    limit: u64,
) -> Result<(), StoreError> {
    let file = adapter
        .bot
        .get_file(file_id.clone())
        .await
        .map_err(|error| StoreError::Failed(error.to_string()))?;
    store_limited(adapter.bot.download_file_stream(&file.path), path, limit).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_with_a_part_the_bot_api_types_cannot_read_is_read_without_text() {
        // Found by the fuzz target `telegram_update`: the quoted message's sender has no id,
        // so the message's kind is not read; it is still a message (the member is told it
        // could not be read), never a reply read with the text of something else.
        let update = r#"{"update_id": 1001, "message": {"message_id": 44, "date": 1700000000,
            "chat": {"id": -100123, "type": "supergroup", "title": "Family"},
            "from": {"id": 111, "is_bot": false, "first_name": "Ann"}, "text": "a reply",
            "reply_to_message": {"message_id": 40, "date": 1699999999,
            "chat": {"id": -100123, "type": "supergroup", "title": "Family"},
            "from": {"0d": 998, "is_bot": true, "first_name": "hearth"}, "text": "Confirm?"}}}"#;
        assert_eq!(bot_api_reading(update), BotApiReading::MessageOfUnknownKind);
        let IncomingReading::Message { text, sender, .. } = read_update_json(update).unwrap()
        else {
            panic!("the message was not read as a message");
        };
        assert_eq!((text.as_str(), sender.as_str()), ("", "111"));
        let readable = update.replace(r#""0d": 998"#, r#""id": 998"#);
        assert_eq!(bot_api_reading(&readable), BotApiReading::Whole);
        let IncomingReading::Message { text, .. } = read_update_json(&readable).unwrap() else {
            panic!("the message was not read as a message");
        };
        assert_eq!(text, "a reply");
    }

    #[test]
    fn a_button_press_the_bot_api_types_cannot_read_is_ignored() {
        // Found by the fuzz target `telegram_update`: a press without `chat_instance`, which
        // Telegram always sends.
        let press = r#"{"update_id": 1001, "callback_query": {"id": "q4",
            "from": {"id": 111, "is_bot": false, "first_name": "Ann"},
            "chafromstance": "ci", "data": "hc:1:y"}}"#;
        assert_eq!(bot_api_reading(press), BotApiReading::Unreadable);
        assert_eq!(read_update_json(press).unwrap(), IncomingReading::Ignored);
        let whole = press.replace("chafromstance", "chat_instance");
        assert_eq!(bot_api_reading(&whole), BotApiReading::Whole);
    }
}
