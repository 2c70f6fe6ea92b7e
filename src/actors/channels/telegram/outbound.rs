//! Sending to Telegram: the channel core's `Platform` for the Bot API. Replies are the
//! markdown as Telegram HTML split under the message limit (plain text when Telegram
//! refuses the entities), prompts have buttons (`buttons.rs`); order, retries and the
//! outbox are the core's. Also the chat a conversation is, and patience for the calls the
//! core does not make (acknowledging a button press, polling).

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use teloxide::payloads::SendMessageSetters;
use teloxide::requests::Requester;
use teloxide::types::{ChatId, MessageId, ParseMode, ReplyParameters, ThreadId};
use teloxide::{ApiError, RequestError};

use super::{Shared, TELEGRAM_CHANNEL, buttons};
use crate::actors::channels::core::{DeliveryError, Platform};
use crate::format::{TELEGRAM_MESSAGE_LIMIT, plain_text, split_telegram_html, telegram_html};
use crate::ports::{OutboxEntry, OutgoingKind};

/// Attempts of a quick Bot API call (acknowledging a button press) before hearth gives up
/// on it; what the member must see goes through the outbox, which keeps trying.
pub(super) const QUICK_ATTEMPTS: u32 = 6;
/// The longest hearth waits between two attempts (Telegram may ask for longer: obeyed).
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A chat, and the forum topic within it when there is one: a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ChatTarget {
    pub(super) chat_id: i64,
    pub(super) thread_id: Option<i32>,
}

impl ChatTarget {
    pub(super) fn of(message: &teloxide::types::Message) -> Self {
        ChatTarget {
            chat_id: message.chat.id.0,
            // Replies in a group also carry a thread id; only forum topics are conversations.
            thread_id: message
                .is_topic_message
                .then_some(message.thread_id)
                .flatten()
                .map(|thread| thread.0.0),
        }
    }

    /// `Inbound::conversation_id`: `<chat>` or `<chat>/<topic>`.
    pub(super) fn conversation_id(&self) -> String {
        match self.thread_id {
            Some(thread) => format!("{}/{thread}", self.chat_id),
            None => self.chat_id.to_string(),
        }
    }

    pub(super) fn parse(conversation_id: &str) -> Option<Self> {
        let (chat, thread) = match conversation_id.split_once('/') {
            Some((chat, thread)) => (chat, Some(thread.parse().ok()?)),
            None => (conversation_id, None),
        };
        Some(ChatTarget {
            chat_id: chat.parse().ok()?,
            thread_id: thread,
        })
    }

    pub(super) fn thread(&self) -> Option<ThreadId> {
        self.thread_id.map(|thread| ThreadId(MessageId(thread)))
    }
}

/// `Inbound::platform_event_id` of a Telegram message: `<chat>:<message>`.
pub(super) fn event_id(chat_id: i64, message_id: MessageId) -> String {
    format!("{chat_id}:{}", message_id.0)
}

/// The message id inside an event id made by `event_id`.
pub(super) fn message_id_of_event(event_id: &str) -> Option<MessageId> {
    let (_, message) = event_id.rsplit_once(':')?;
    message.parse().ok().map(MessageId)
}

/// What a message is delivered as, part by part.
pub(super) enum Part {
    /// One message of a reply, as Telegram HTML, and its text for when Telegram refuses
    /// the HTML's entities (a reply is never dropped for its formatting).
    Html { html: String, plain: String },
    /// A confirmation with its buttons.
    Prompt,
    /// The edit that settles a confirmation's prompt.
    Close,
}

/// The Telegram Bot API as the channel core's `Platform`.
pub(super) struct TelegramPlatform {
    pub(super) shared: Arc<Shared>,
}

#[async_trait]
impl Platform for TelegramPlatform {
    type Part = Part;

    fn channel(&self) -> &'static str {
        TELEGRAM_CHANNEL
    }

    fn parts(&self, entry: &OutboxEntry) -> Vec<Part> {
        match &entry.message.kind {
            OutgoingKind::Reply => {
                let markdown = &entry.message.text;
                let parts = split_telegram_html(&telegram_html(markdown), TELEGRAM_MESSAGE_LIMIT);
                let single = parts.len() == 1;
                parts
                    .into_iter()
                    .map(|html| {
                        let plain = if single {
                            plain_text(markdown)
                        } else {
                            text_of_html(&html)
                        };
                        Part::Html { html, plain }
                    })
                    .collect()
            }
            OutgoingKind::Prompt { .. } => vec![Part::Prompt],
            OutgoingKind::Close { .. } => vec![Part::Close],
        }
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        index: usize,
        part: &Part,
        _transaction_id: &str,
    ) -> Result<Option<String>, DeliveryError> {
        let shared = &self.shared;
        let message = &entry.message;
        let Some(target) = ChatTarget::parse(&message.conversation_id) else {
            return Err(DeliveryError::Permanent(format!(
                "{:?} is not a telegram chat",
                message.conversation_id
            )));
        };
        // The first message answers the member's; the rest follow it.
        let reply_to = (index == 0)
            .then(|| {
                message
                    .reply_to_event
                    .as_deref()
                    .and_then(message_id_of_event)
            })
            .flatten();
        match (part, &message.kind) {
            (Part::Html { html, plain }, _) => {
                match self::message(shared, target, html, reply_to)
                    .parse_mode(ParseMode::Html)
                    .await
                {
                    Ok(sent) => Ok(Some(event_id(target.chat_id, sent.id))),
                    Err(RequestError::Api(ApiError::CantParseEntities(reason))) => {
                        tracing::warn!(chat = target.chat_id, %reason, "telegram refused the html; sending plain text");
                        shared
                            .metrics
                            .increment("hearth_telegram_plain_text_fallbacks_total", &[]);
                        let sent = self::message(shared, target, plain, reply_to)
                            .await
                            .map_err(delivery_error)?;
                        Ok(Some(event_id(target.chat_id, sent.id)))
                    }
                    Err(error) => Err(delivery_error(error)),
                }
            }
            (
                Part::Prompt,
                OutgoingKind::Prompt {
                    confirmation_id, ..
                },
            ) => buttons::send_prompt(shared, target, &message.text, confirmation_id, reply_to)
                .await
                .map(Some),
            (Part::Close, OutgoingKind::Close { confirmation_id }) => {
                buttons::close_prompt(shared, target, confirmation_id, &message.text).await?;
                Ok(None)
            }
            _ => Err(DeliveryError::Permanent(
                "a part that does not fit its message".into(),
            )),
        }
    }
}

/// A failed Bot API call, as the channel core sees it.
pub(super) fn delivery_error(error: RequestError) -> DeliveryError {
    match &error {
        RequestError::RetryAfter(seconds) => DeliveryError::Transient {
            reason: error.to_string(),
            retry_after: Some(seconds.duration()),
        },
        _ if is_transient(&error) => DeliveryError::Transient {
            reason: error.to_string(),
            retry_after: None,
        },
        _ => DeliveryError::Permanent(error.to_string()),
    }
}

/// A `sendMessage` request in the conversation of `target`.
pub(super) fn message(
    shared: &Shared,
    target: ChatTarget,
    text: &str,
    reply_to: Option<MessageId>,
) -> teloxide::requests::JsonRequest<teloxide::payloads::SendMessage> {
    let mut request = shared.bot.send_message(ChatId(target.chat_id), text);
    if let Some(thread) = target.thread() {
        request = request.message_thread_id(thread);
    }
    if let Some(message_id) = reply_to {
        // The member may have deleted their message meanwhile: answer anyway.
        request = request
            .reply_parameters(ReplyParameters::new(message_id).allow_sending_without_reply());
    }
    request
}

/// The text of a Telegram HTML part: tags dropped, entities decoded.
fn text_of_html(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for character in html.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(character),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Whether an error may pass if the call is made again later.
pub(super) fn is_transient(error: &RequestError) -> bool {
    match error {
        RequestError::RetryAfter(_)
        | RequestError::Network(_)
        | RequestError::InvalidJson { .. } => true,
        // Bad gateways and the like come back as unknown API errors.
        RequestError::Api(ApiError::Unknown(_)) => true,
        _ => false,
    }
}

/// How long to wait before attempt `attempt + 1` after `error`.
pub(super) fn backoff(error: &RequestError, attempt: u32) -> Duration {
    match error {
        RequestError::RetryAfter(seconds) => seconds.duration(),
        _ => Duration::from_millis(500u64.saturating_mul(1 << attempt.min(10))).min(MAX_BACKOFF),
    }
}

/// Make a Bot API call, again after flood control's wait or a transient failure, up to
/// `attempts` times.
pub(super) async fn with_retries<T, R, F>(
    what: &str,
    attempts: u32,
    mut request: F,
) -> Result<T, RequestError>
where
    F: FnMut() -> R,
    R: IntoFuture<Output = Result<T, RequestError>>,
{
    let mut attempt = 0;
    loop {
        match request().into_future().await {
            Ok(value) => return Ok(value),
            Err(error) if is_transient(&error) && attempt + 1 < attempts => {
                let wait = backoff(&error, attempt);
                tracing::info!(call = what, %error, wait_ms = wait.as_millis() as u64, "telegram call failed; trying again");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_round_trip_through_their_ids() {
        for target in [
            ChatTarget {
                chat_id: 1001,
                thread_id: None,
            },
            ChatTarget {
                chat_id: -100123,
                thread_id: Some(7),
            },
        ] {
            assert_eq!(ChatTarget::parse(&target.conversation_id()), Some(target));
        }
        assert_eq!(ChatTarget::parse("alice"), None);
        assert_eq!(
            message_id_of_event(&event_id(-100123, MessageId(42))),
            Some(MessageId(42))
        );
    }

    #[test]
    fn html_parts_read_back_as_text() {
        assert_eq!(
            text_of_html("<b>Tom &amp; Jerry</b> &lt;3 <a href=\"x\">link</a>"),
            "Tom & Jerry <3 link"
        );
    }
}
