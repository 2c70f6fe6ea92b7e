//! Sending to Telegram: the Bot API as the channel core's `Platform`. Replies are the
//! markdown as Telegram HTML split under the message limit (plain text when Telegram
//! refuses the entities, and the text as written when the markdown shows nothing), prompts
//! have buttons (`buttons.rs`), reminder lists their cancel buttons (`list_buttons.rs`);
//! order, retries and the outbox are the core's.

use async_trait::async_trait;
use teloxide::payloads::SendMessageSetters;
use teloxide::types::{MessageId, ParseMode};
use teloxide::{ApiError, RequestError};

use super::api::{delivery_error, message};
use super::chat::{ChatTarget, MessageEvent, event_id};
use super::{TELEGRAM_CHANNEL, TelegramAdapter, buttons, list_buttons};
use crate::actors::channels::core::{DeliveryError, Platform};
use crate::format::{
    TELEGRAM_MESSAGE_LIMIT, escape_html, plain_text, shown_as_written, split_plain,
    split_telegram_html, telegram_html,
};
use crate::ports::{OutboxEntry, OutgoingKind};

/// What a message is delivered as, part by part.
pub(crate) enum Part {
    /// One message of a reply, as Telegram HTML, and its text for when Telegram refuses
    /// the HTML's entities (a reply is never dropped for its formatting).
    Html { html: String, plain: String },
    /// A confirmation with its buttons.
    Prompt,
    /// The edit that settles a confirmation's prompt.
    Close,
    /// A reminder list with its cancel buttons.
    List,
    /// The edit showing a reminder list as noted now.
    ListEdit,
}

/// The messages a reply in `markdown` is sent as.
fn reply_parts(markdown: &str) -> Vec<Part> {
    if let Some(text) = shown_as_written(markdown) {
        // Rendered, it would show nothing (only link definitions, say): as written.
        return split_plain(&text, TELEGRAM_MESSAGE_LIMIT)
            .into_iter()
            .map(|plain| Part::Html {
                html: escape_html(&plain),
                plain,
            })
            .collect();
    }
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

#[async_trait]
impl Platform for TelegramAdapter {
    type Part = Part;

    fn channel(&self) -> &'static str {
        TELEGRAM_CHANNEL
    }

    fn parts(&self, entry: &OutboxEntry) -> Vec<Part> {
        match &entry.message.kind {
            OutgoingKind::Reply => reply_parts(&entry.message.text),
            OutgoingKind::Prompt { .. } => vec![Part::Prompt],
            OutgoingKind::Close { .. } => vec![Part::Close],
            OutgoingKind::ReminderList { .. } => vec![Part::List],
            OutgoingKind::ReminderListChanged { .. } => vec![Part::ListEdit],
        }
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        index: usize,
        part: &Part,
        _transaction_id: &str,
    ) -> Result<Option<String>, DeliveryError> {
        let message = &entry.message;
        let Some(target) = ChatTarget::of_conversation(&message.conversation) else {
            return Err(DeliveryError::Permanent(format!(
                "{:?} is not a telegram chat",
                message.conversation
            )));
        };
        // The first message answers the member's; the rest follow it.
        let reply_to = (index == 0)
            .then(|| {
                message
                    .reply_to_event
                    .as_deref()
                    .and_then(|event| event.parse::<MessageEvent>().ok())
                    .map(|event| event.message_id)
            })
            .flatten();
        match (part, &message.kind) {
            (Part::Html { html, plain }, _) => self.send_html(target, html, plain, reply_to).await,
            (Part::Prompt, OutgoingKind::Prompt { prompt, .. }) => {
                buttons::send_prompt(self, target, &message.text, prompt, reply_to)
                    .await
                    .map(Some)
            }
            (Part::Close, OutgoingKind::Close { prompt }) => {
                buttons::close_prompt(self, target, prompt, &message.text).await?;
                Ok(None)
            }
            (Part::List, OutgoingKind::ReminderList { .. }) => {
                list_buttons::send_list(self, target, message, reply_to)
                    .await
                    .map(Some)
            }
            (Part::ListEdit, OutgoingKind::ReminderListChanged { list_event }) => {
                list_buttons::edit_list(self, list_event).await?;
                Ok(None)
            }
            _ => Err(DeliveryError::Permanent(
                "a part that does not fit its message".into(),
            )),
        }
    }
}

impl TelegramAdapter {
    /// One message as HTML, or as `plain` when Telegram refuses the HTML's entities.
    async fn send_html(
        &self,
        target: ChatTarget,
        html: &str,
        plain: &str,
        reply_to: Option<MessageId>,
    ) -> Result<Option<String>, DeliveryError> {
        match message(self, target, html, reply_to)
            .parse_mode(ParseMode::Html)
            .await
        {
            Ok(sent) => Ok(Some(event_id(target.chat_id, sent.id))),
            Err(RequestError::Api(ApiError::CantParseEntities(reason))) => {
                tracing::warn!(chat = target.chat_id, %reason, "telegram refused the html; sending plain text");
                self.metrics
                    .increment("hearth_telegram_plain_text_fallbacks_total", &[]);
                let sent = message(self, target, plain, reply_to)
                    .await
                    .map_err(delivery_error)?;
                Ok(Some(event_id(target.chat_id, sent.id)))
            }
            Err(error) => Err(delivery_error(error)),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_parts_read_back_as_text() {
        assert_eq!(
            text_of_html("<b>Tom &amp; Jerry</b> &lt;3 <a href=\"x\">link</a>"),
            "Tom & Jerry <3 link"
        );
    }

    #[test]
    fn a_reply_that_renders_to_nothing_is_sent_as_written() {
        let parts = reply_parts("[x]: http://ref");
        let [Part::Html { html, plain }] = parts.as_slice() else {
            panic!("one message expected");
        };
        assert_eq!(plain, "[x]: http://ref");
        assert_eq!(html, "[x]: http://ref");
        assert!(!reply_parts("*hi*").is_empty());
    }
}
