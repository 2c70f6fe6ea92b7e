//! Where a Telegram message is: the chat and forum topic a conversation is, and a
//! message's platform event id (`<chat>:<message>`).

use std::fmt;
use std::str::FromStr;

use teloxide::types::{MessageId, ThreadId};

use super::TELEGRAM_CHANNEL;
use crate::ids::{ConversationKey, IdError};

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

    /// The conversation's id on the Telegram channel: `<chat>` or `<chat>/<topic>`.
    pub(super) fn conversation_id(&self) -> String {
        match self.thread_id {
            Some(thread) => format!("{}/{thread}", self.chat_id),
            None => self.chat_id.to_string(),
        }
    }

    /// The conversation this chat (and topic) is.
    pub(super) fn conversation(&self) -> Result<ConversationKey, IdError> {
        ConversationKey::new(TELEGRAM_CHANNEL, &self.conversation_id())
    }

    /// The chat (and topic) `conversation` is, if it is a Telegram one.
    pub(super) fn of_conversation(conversation: &ConversationKey) -> Option<Self> {
        if conversation.channel() != TELEGRAM_CHANNEL {
            return None;
        }
        Self::parse(conversation.conversation_id())
    }

    /// A conversation id made by `conversation_id`.
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

/// A Telegram message as a platform event: `Inbound::platform_event_id` and a reply's
/// `reply_to_event`, written `<chat>:<message>` (a message id is unique within its chat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MessageEvent {
    pub(super) chat_id: i64,
    pub(super) message_id: MessageId,
}

/// An event id that is not a Telegram message's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event id {0:?} is not a telegram message's (`<chat>:<message>`)")]
pub(super) struct NotAMessageEvent(String);

impl fmt::Display for MessageEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}", self.chat_id, self.message_id.0)
    }
}

impl FromStr for MessageEvent {
    type Err = NotAMessageEvent;

    fn from_str(event_id: &str) -> Result<Self, Self::Err> {
        let not_ours = || NotAMessageEvent(event_id.to_owned());
        let (chat, message) = event_id.split_once(':').ok_or_else(not_ours)?;
        Ok(MessageEvent {
            chat_id: chat.parse().map_err(|_| not_ours())?,
            message_id: MessageId(message.parse().map_err(|_| not_ours())?),
        })
    }
}

/// The event id of message `message_id` of chat `chat_id`.
pub(super) fn event_id(chat_id: i64, message_id: MessageId) -> String {
    MessageEvent {
        chat_id,
        message_id,
    }
    .to_string()
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
            let conversation = target.conversation().unwrap();
            assert_eq!(ChatTarget::of_conversation(&conversation), Some(target));
        }
        assert_eq!(
            ChatTarget::of_conversation(&"matrix:-100123".parse().unwrap()),
            None
        );
        assert_eq!(ChatTarget::parse("alice"), None);
        let event = MessageEvent {
            chat_id: -100123,
            message_id: MessageId(42),
        };
        assert_eq!(event_id(-100123, MessageId(42)), "-100123:42");
        assert_eq!(event.to_string().parse(), Ok(event));
        for not_ours in ["-100123", "press:77", "-100123:42:1", "$event:matrix.org"] {
            assert_eq!(
                not_ours.parse::<MessageEvent>(),
                Err(NotAMessageEvent(not_ours.into()))
            );
        }
    }
}
