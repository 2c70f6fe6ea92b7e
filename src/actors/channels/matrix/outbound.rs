//! Sending to Matrix: the homeserver as the channel core's `Platform`. Replies are
//! `m.notice` with the markdown rendered to HTML and a plain body (the text as written
//! when the markdown shows nothing), threaded to the message they answer (and kept in its
//! thread); prompts and their closing are `confirmations.rs`'s, reminder lists and their
//! edits `lists.rs`'s; every part carries a transaction id from its outbox row. Order,
//! retries and the outbox are the core's.

use async_trait::async_trait;
use matrix_sdk::ruma::OwnedTransactionId;
use matrix_sdk::ruma::events::room::message::RoomMessageEventContent;

use super::confirmations::{self, NO, SNOOZE, YES};
use super::lists;
use super::rooms::{Conversation, send_message};
use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::actors::channels::core::{DeliveryError, Platform};
use crate::format::{matrix_html, plain_text, shown_as_written};
use crate::ids::PromptId;
use crate::ports::{OutboxEntry, OutgoingKind};

/// What a message is delivered as, part by part.
pub(crate) enum Part {
    /// A reply: an `m.notice` with the markdown as HTML and a plain body, rendered once.
    Notice(Box<RoomMessageEventContent>),
    /// A confirmation's prompt, then the two reactions seeded on it.
    Prompt,
    Reaction(&'static str),
    /// The edit (`m.replace`) that settles a prompt.
    Close,
    /// A reminder list, numbered.
    List,
    /// The edit (`m.replace`) showing a reminder list as noted now.
    ListEdit,
}

/// A reply in `markdown` as a notice.
fn notice(markdown: &str) -> RoomMessageEventContent {
    match shown_as_written(markdown) {
        // Rendered, it would show nothing (only link definitions, say): as written.
        Some(text) => RoomMessageEventContent::notice_plain(text),
        None => RoomMessageEventContent::notice_html(plain_text(markdown), matrix_html(markdown)),
    }
}

/// Every part is sent with a transaction id made from its outbox row, so a part resent
/// after a restart is recognised by the homeserver and shown once.
#[async_trait]
impl Platform for MatrixAdapter {
    type Part = Part;

    fn channel(&self) -> &'static str {
        MATRIX_CHANNEL
    }

    fn parts(&self, entry: &OutboxEntry) -> Vec<Part> {
        match &entry.message.kind {
            OutgoingKind::Reply => vec![Part::Notice(Box::new(notice(&entry.message.text)))],
            OutgoingKind::Prompt { prompt, .. } => {
                let second = match prompt {
                    PromptId::Reminder(_) => SNOOZE,
                    PromptId::Confirmation(_) => NO,
                };
                vec![Part::Prompt, Part::Reaction(YES), Part::Reaction(second)]
            }
            OutgoingKind::Close { .. } => vec![Part::Close],
            OutgoingKind::ReminderList { .. } => vec![Part::List],
            OutgoingKind::ReminderListChanged { .. } => vec![Part::ListEdit],
        }
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        _index: usize,
        part: &Part,
        transaction_id: &str,
    ) -> Result<Option<String>, DeliveryError> {
        let message = &entry.message;
        let Some(conversation) = Conversation::of_key(&message.conversation) else {
            return Err(DeliveryError::Permanent(format!(
                "{:?} is not a matrix room",
                message.conversation
            )));
        };
        let reply_to = message
            .reply_to_event
            .as_deref()
            .and_then(|event| event.parse().ok());
        let transaction_id: OwnedTransactionId = transaction_id.into();
        match (part, &message.kind) {
            (Part::Notice(content), _) => {
                let sent = send_message(
                    self,
                    &conversation,
                    (**content).clone(),
                    reply_to,
                    transaction_id,
                )
                .await?;
                Ok(Some(sent.to_string()))
            }
            (Part::Prompt, OutgoingKind::Prompt { prompt, .. }) => confirmations::send_prompt(
                self,
                &conversation,
                &message.text,
                prompt,
                reply_to,
                transaction_id,
            )
            .await
            .map(Some),
            (Part::Reaction(key), OutgoingKind::Prompt { prompt, .. }) => {
                confirmations::seed_reaction(self, &conversation, prompt, key, transaction_id)
                    .await?;
                Ok(None)
            }
            (Part::Close, OutgoingKind::Close { prompt }) => {
                confirmations::close_prompt(self, prompt, &message.text, transaction_id).await?;
                Ok(None)
            }
            (Part::List, OutgoingKind::ReminderList { .. }) => {
                lists::send_list(self, &conversation, message, reply_to, transaction_id)
                    .await
                    .map(Some)
            }
            (Part::ListEdit, OutgoingKind::ReminderListChanged { list_event }) => {
                lists::edit_list(self, &conversation, list_event, transaction_id).await?;
                Ok(None)
            }
            _ => Err(DeliveryError::Permanent(
                "a part that does not fit its message".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_that_renders_to_nothing_is_sent_as_written() {
        let content = notice("[x]: http://ref");
        assert_eq!(content.body(), "[x]: http://ref");
        assert_eq!(notice("**hi**").body(), "hi");
    }
}
