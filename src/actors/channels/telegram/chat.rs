//! Where a Telegram message is: the chat and forum topic a conversation is, and a
//! message's platform event id (`<chat>:<message>`).

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

/// `Inbound::platform_event_id` of a Telegram message: `<chat>:<message>`.
pub(super) fn event_id(chat_id: i64, message_id: MessageId) -> String {
    format!("{chat_id}:{}", message_id.0)
}

/// The message id inside an event id made by `event_id`.
pub(super) fn message_id_of_event(event_id: &str) -> Option<MessageId> {
    let (_, message) = event_id.rsplit_once(':')?;
    message.parse().ok().map(MessageId)
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
        assert_eq!(
            message_id_of_event(&event_id(-100123, MessageId(42))),
            Some(MessageId(42))
        );
    }
}
