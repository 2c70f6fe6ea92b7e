//! A Telegram message from a family member, made an `Inbound` and stored: text or
//! caption, the message it replies to, photos and documents (downloaded within the size
//! limit); and the channel's own commands, `/start`, `/help` and `/cancel`.

use std::path::Path;

use teloxide::net::Download;
use teloxide::requests::Requester;
use teloxide::types::{FileId, Message};

use super::outbound::{ChatTarget, event_id};
use super::{Shared, TELEGRAM_CHANNEL};
use crate::actors::channels::ChannelError;
use crate::actors::channels::core::attachments::{
    StoreError, safe_file_name, store_limited, too_large_note,
};
use crate::actors::channels::core::commands;
use crate::actors::channels::core::texts::{BUSY_REPLY, help_text};
use crate::actors::request_queue::{SubmitError, SubmitInbound, Submitted};
use crate::config::FamilyMember;
use crate::ports::{
    Attachment, AttachmentKind, Inbound, InboundExtras, OutgoingMessage, QuotedMessage, now_ms,
};

/// The answer to a message with neither text nor a file hearth can keep (a sticker, a
/// location, a voice note).
const NOTHING_TO_READ: &str = "I can read text, photos and documents; that message had none.";

/// What the actor does once an update is handled.
#[derive(Debug)]
pub(super) enum FollowUp {
    /// A turn of this conversation runs (again): show "typing…".
    TurnStarted(ChatTarget),
    /// Store this in the outbox and deliver it.
    Send(OutgoingMessage),
}

/// A command for this bot at the start of `text`, without the slash and `@botname`:
/// `Some(Ok(command))`; `Some(Err(()))` when it is addressed to another bot.
fn command<'a>(text: &'a str, username: Option<&str>) -> Option<Result<(String, &'a str), ()>> {
    let word = text.split_whitespace().next()?;
    let name = word.strip_prefix('/')?;
    let (name, addressee) = match name.split_once('@') {
        Some((name, addressee)) => (name, Some(addressee)),
        None => (name, None),
    };
    if let (Some(addressee), Some(username)) = (addressee, username)
        && !addressee.eq_ignore_ascii_case(username)
    {
        return Some(Err(()));
    }
    let rest = text.trim_start()[word.len()..].trim_start();
    Some(Ok((name.to_lowercase(), rest)))
}

fn say(target: ChatTarget, text: String, reply_to: &Message) -> Vec<FollowUp> {
    vec![FollowUp::Send(commands::say(
        TELEGRAM_CHANNEL,
        &target.conversation_id(),
        text,
        Some(event_id(target.chat_id, reply_to.id)),
    ))]
}

pub(super) async fn handle_message(
    shared: &Shared,
    message: Message,
) -> Result<Vec<FollowUp>, ChannelError> {
    // Channel posts and messages of other bots have no family member behind them.
    let Some(from) = message.from.as_ref().filter(|from| !from.is_bot) else {
        return Ok(Vec::new());
    };
    let Some(member) = i64::try_from(from.id.0)
        .ok()
        .and_then(|id| shared.family.by_telegram_id(id))
    else {
        return Ok(Vec::new());
    };
    let target = ChatTarget::of(&message);
    let mut text = message
        .text()
        .or_else(|| message.caption())
        .unwrap_or_default()
        .to_string();
    match command(&text, shared.username.get().map(String::as_str)) {
        Some(Err(())) => return Ok(Vec::new()),
        Some(Ok((name, rest))) => match name.as_str() {
            "start" | "help" => {
                let help = help_text(
                    &shared.settings.commands,
                    &shared.settings.default_description,
                    None,
                );
                return Ok(say(target, help, &message));
            }
            "cancel" => return cancel(shared, member, target, &message).await,
            // A profile's command (the queue routes it) or one for the default profile.
            _ => text = format!("/{name} {rest}").trim_end().to_string(),
        },
        None => {}
    }
    // Telegram delivering an update again (hearth stopped before confirming it): the
    // message was accepted already, and its files are not downloaded twice.
    let event = event_id(target.chat_id, message.id);
    if shared.inbox.knows_event(TELEGRAM_CHANNEL, &event).await? {
        return Ok(Vec::new());
    }
    let id = Inbound::new_id();
    let extras = InboundExtras {
        quoted: message
            .reply_to_message()
            .map(|quoted| quote(shared, quoted)),
        attachments: attachments(shared, &id, &message).await,
    };
    if text.trim().is_empty() && extras.attachments.is_empty() {
        return Ok(say(target, NOTHING_TO_READ.to_string(), &message));
    }
    let inbound = Inbound {
        id,
        channel: TELEGRAM_CHANNEL.into(),
        conversation_id: target.conversation_id(),
        member_id: member.id.clone(),
        text,
        platform_event_id: Some(event),
        received_at_ms: now_ms(),
        extras,
    };
    let submitted = shared
        .queue
        .send(SubmitInbound { inbound })
        .await
        .map_err(|_| ChannelError::QueueStopped)?;
    match submitted {
        Ok(Submitted::Accepted | Submitted::AnsweredQuestion { .. }) => {
            Ok(vec![FollowUp::TurnStarted(target)])
        }
        Ok(Submitted::Duplicate(_)) => Ok(Vec::new()),
        Err(SubmitError::Busy { .. }) => Ok(say(target, BUSY_REPLY.to_string(), &message)),
        Err(SubmitError::Storage(error)) => Err(ChannelError::Storage(error)),
    }
}

/// `/cancel`: deny this member's confirmations in this chat and drop their question.
async fn cancel(
    shared: &Shared,
    member: &FamilyMember,
    target: ChatTarget,
    message: &Message,
) -> Result<Vec<FollowUp>, ChannelError> {
    let messages = commands::cancel(
        &shared.queue,
        &member.id,
        TELEGRAM_CHANNEL,
        &target.conversation_id(),
        Some(event_id(target.chat_id, message.id)),
    )
    .await?;
    Ok(messages.into_iter().map(FollowUp::Send).collect())
}

/// The replied-to message as context: who wrote it and its text.
fn quote(shared: &Shared, quoted: &Message) -> QuotedMessage {
    let author = match quoted.from.as_ref() {
        Some(user) if user.is_bot => "hearth (you)".to_string(),
        Some(user) => i64::try_from(user.id.0)
            .ok()
            .and_then(|id| shared.family.by_telegram_id(id))
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

/// The message's photo (its largest size within the limit) and document, downloaded
/// into the attachments folder of message `inbox_id`.
async fn attachments(shared: &Shared, inbox_id: &str, message: &Message) -> Vec<Attachment> {
    let limit = shared.settings.max_attachment_bytes;
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
                    shared,
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
                shared,
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
    found
}

async fn fetch(
    shared: &Shared,
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
    };
    let limit = shared.settings.max_attachment_bytes;
    if size_bytes > limit {
        attachment.note = Some(too_large_note(limit));
        return attachment;
    }
    let path = shared
        .settings
        .attachments_dir
        .join(inbox_id)
        .join(&attachment.file_name);
    match download(shared, file_id, &path, limit).await {
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
    shared: &Shared,
    file_id: &FileId,
    path: &Path,
    limit: u64,
) -> Result<(), StoreError> {
    let file = shared
        .bot
        .get_file(file_id.clone())
        .await
        .map_err(|error| StoreError::Failed(error.to_string()))?;
    store_limited(shared.bot.download_file_stream(&file.path), path, limit).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_for_this_bot_others_and_none() {
        assert_eq!(
            command("/help", Some("hearth_bot")),
            Some(Ok(("help".into(), "")))
        );
        assert_eq!(
            command("/Tools@Hearth_Bot list it", Some("hearth_bot")),
            Some(Ok(("tools".into(), "list it")))
        );
        assert_eq!(
            command("/tools@other_bot x", Some("hearth_bot")),
            Some(Err(()))
        );
        assert_eq!(command("hello /help", Some("hearth_bot")), None);
        assert_eq!(command("", None), None);
    }
}
