//! Each family member's own chats with hearth (a Telegram private chat, a Matrix room with
//! hearth alone), where what is only theirs goes: a parent's approval of a child's request,
//! a reminder set for them by someone else, a parent told of an unacknowledged reminder.
//! Telegram's are known from config; Matrix finds its rooms as it syncs. Shared by the
//! parts that deliver there; a platform replaces its own entries when it finds them anew.

use std::collections::BTreeMap;
use std::sync::RwLock;

/// A chat on a channel: where something is delivered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChatPlace {
    pub channel: String,
    pub conversation_id: String,
}

#[derive(Debug, Default)]
pub struct OwnChats {
    /// Member id → their own chats, in the order found.
    chats: RwLock<BTreeMap<String, Vec<ChatPlace>>>,
}

impl OwnChats {
    /// Starting with `chats`: `(member id, place)` pairs.
    pub fn new(chats: impl IntoIterator<Item = (String, ChatPlace)>) -> Self {
        let own = OwnChats::default();
        {
            let mut known = own.write();
            for (member, place) in chats {
                known.entry(member).or_default().push(place);
            }
        }
        own
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Vec<ChatPlace>>> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.chats
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `member_id`'s own chats, in the order found.
    pub fn of(&self, member_id: &str) -> Vec<ChatPlace> {
        self.chats
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(member_id)
            .cloned()
            .unwrap_or_default()
    }

    /// `channel` found its members' own chats anew: `(member id, conversation id)` pairs
    /// replace what it had found before.
    pub fn replace_channel(&self, channel: &str, chats: Vec<(String, String)>) {
        let mut known = self.write();
        for places in known.values_mut() {
            places.retain(|place| place.channel != channel);
        }
        for (member_id, conversation_id) in chats {
            known.entry(member_id).or_default().push(ChatPlace {
                channel: channel.to_string(),
                conversation_id,
            });
        }
        known.retain(|_, places| !places.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(channel: &str, conversation: &str) -> ChatPlace {
        ChatPlace {
            channel: channel.into(),
            conversation_id: conversation.into(),
        }
    }

    #[test]
    fn a_channel_replaces_only_its_own_chats() {
        let own = OwnChats::new([("alice".to_string(), place("telegram", "1001"))]);
        own.replace_channel(
            "matrix",
            vec![("alice".into(), "!a".into()), ("max".into(), "!m".into())],
        );
        assert_eq!(
            own.of("alice"),
            [place("telegram", "1001"), place("matrix", "!a")]
        );
        own.replace_channel("matrix", vec![("alice".into(), "!a2".into())]);
        assert_eq!(
            own.of("alice"),
            [place("telegram", "1001"), place("matrix", "!a2")]
        );
        assert!(own.of("max").is_empty());
        assert!(own.of("nobody").is_empty());
    }
}
