//! Sending to Telegram: one outbox task per chat, replies rendered from markdown to
//! Telegram HTML and split under the message limit, plain text when Telegram refuses
//! the entities, and patience with flood control and network trouble.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use teloxide::payloads::SendMessageSetters;
use teloxide::requests::Requester;
use teloxide::types::{ChatId, MessageId, ParseMode, ReplyParameters, ThreadId};
use teloxide::{ApiError, RequestError};
use tokio::sync::mpsc;

use super::{Shared, buttons};
use crate::format::{
    TELEGRAM_MESSAGE_LIMIT, plain_text, split_plain, split_telegram_html, telegram_html,
};

/// Attempts of a Bot API call before hearth gives up on it: a few for acknowledgements,
/// many for what the member must see (a reply waits out about half an hour of outage).
pub(super) const QUICK_ATTEMPTS: u32 = 6;
pub(super) const PATIENT_ATTEMPTS: u32 = 64;
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

/// Something to show in a chat.
#[derive(Debug)]
pub(super) enum Outgoing {
    /// The model's (or hearth's) markdown, as one or more messages.
    Reply {
        target: ChatTarget,
        markdown: String,
        reply_to: Option<MessageId>,
    },
    /// A confirmation with its buttons.
    Ask {
        target: ChatTarget,
        prompt: String,
        confirmation_id: String,
        reply_to: Option<MessageId>,
    },
    /// A confirmation was settled: its message says how, and its buttons go.
    Close {
        target: ChatTarget,
        confirmation_id: String,
        outcome: String,
    },
}

impl Outgoing {
    pub(super) fn chat_id(&self) -> i64 {
        match self {
            Outgoing::Reply { target, .. }
            | Outgoing::Ask { target, .. }
            | Outgoing::Close { target, .. } => target.chat_id,
        }
    }
}

/// Send one chat's messages, in order, until the channel stops.
pub(super) async fn run_outbox(shared: Arc<Shared>, mut jobs: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(job) = jobs.recv().await {
        match job {
            Outgoing::Reply {
                target,
                markdown,
                reply_to,
            } => send_markdown(&shared, target, &markdown, reply_to).await,
            Outgoing::Ask {
                target,
                prompt,
                confirmation_id,
                reply_to,
            } => buttons::send_prompt(&shared, target, &prompt, &confirmation_id, reply_to).await,
            Outgoing::Close {
                target,
                confirmation_id,
                outcome,
            } => buttons::close_prompt(&shared, target, &confirmation_id, &outcome).await,
        }
    }
}

/// Send `markdown` as Telegram HTML in as many messages as it takes, the first one
/// threaded to `reply_to`. If Telegram cannot parse the entities of a part, that part
/// and the rest go as plain text: a reply is never dropped for its formatting.
pub(super) async fn send_markdown(
    shared: &Shared,
    target: ChatTarget,
    markdown: &str,
    reply_to: Option<MessageId>,
) {
    let parts = split_telegram_html(&telegram_html(markdown), TELEGRAM_MESSAGE_LIMIT);
    for (index, part) in parts.iter().enumerate() {
        let reply_to = if index == 0 { reply_to } else { None };
        let sent = with_retries("sendMessage", PATIENT_ATTEMPTS, || {
            message(shared, target, part, reply_to).parse_mode(ParseMode::Html)
        })
        .await;
        match sent {
            Ok(_) => {}
            Err(RequestError::Api(ApiError::CantParseEntities(reason))) => {
                tracing::warn!(chat = target.chat_id, %reason, "telegram refused the html; sending plain text");
                shared
                    .metrics
                    .increment("hearth_telegram_plain_text_fallbacks_total", &[]);
                // The parts already sent stay; this one and the rest go as plain text.
                let rest = if index == 0 {
                    plain_text(markdown)
                } else {
                    parts[index..]
                        .iter()
                        .map(|part| text_of_html(part))
                        .collect::<Vec<_>>()
                        .join("\n\n")
                };
                send_plain(shared, target, &rest, reply_to).await;
                return;
            }
            Err(error) => {
                shared.metrics.error("telegram_send");
                tracing::error!(chat = target.chat_id, %error, "reply not delivered to telegram; it stays stored");
                return;
            }
        }
    }
}

/// Send `text` without any formatting, split under the limit.
pub(super) async fn send_plain(
    shared: &Shared,
    target: ChatTarget,
    text: &str,
    reply_to: Option<MessageId>,
) {
    for (index, part) in split_plain(text, TELEGRAM_MESSAGE_LIMIT).iter().enumerate() {
        let reply_to = if index == 0 { reply_to } else { None };
        if let Err(error) = with_retries("sendMessage", PATIENT_ATTEMPTS, || {
            message(shared, target, part, reply_to)
        })
        .await
        {
            shared.metrics.error("telegram_send");
            tracing::error!(chat = target.chat_id, %error, "plain-text reply not delivered to telegram");
            return;
        }
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
