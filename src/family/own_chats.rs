//! Each family member's own chats with hearth (a Telegram private chat, a Matrix room with
//! hearth alone), where what is only theirs goes: a parent's approval of a child's request,
//! a reminder set for them by someone else, a parent told of an unacknowledged reminder.
//! Telegram's are known from config; Matrix finds its rooms as it syncs. Shared by the
//! parts that deliver there; a platform replaces its own entries when it finds them anew.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::ids::{ConversationKey, MemberId};

#[derive(Debug, Default)]
pub struct OwnChats {
    /// Member → their own chats, in the order found.
    chats: RwLock<BTreeMap<MemberId, Vec<ConversationKey>>>,
    /// Member → the channel whose own chat they prefer (their setting on the web page).
    preferred: RwLock<BTreeMap<MemberId, String>>,
}

impl OwnChats {
    /// Starting with `chats`: `(member, chat)` pairs.
    pub fn new(chats: impl IntoIterator<Item = (MemberId, ConversationKey)>) -> Self {
        let own = OwnChats::default();
        {
            let mut known = own.write();
            for (member, place) in chats {
                known.entry(member).or_default().push(place);
            }
        }
        own
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<MemberId, Vec<ConversationKey>>> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.chats
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `member_id`'s own chats: the one of their preferred channel first, then in the
    /// order found.
    pub fn of(&self, member_id: &MemberId) -> Vec<ConversationKey> {
        let mut chats = self
            .chats
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(member_id)
            .cloned()
            .unwrap_or_default();
        if let Some(channel) = self
            .preferred
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(member_id)
        {
            // A stable sort: the preferred channel's chats first, each side in found order.
            chats.sort_by_key(|chat| chat.channel() != channel);
        }
        chats
    }

    /// The channel `member_id` prefers, if any.
    pub fn preferred(&self, member_id: &MemberId) -> Option<String> {
        self.preferred
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(member_id)
            .cloned()
    }

    /// `member_id` prefers their own chat on `channel` (`None`: no preference).
    pub fn set_preferred(&self, member_id: &MemberId, channel: Option<&str>) {
        let mut preferred = self
            .preferred
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match channel {
            Some(channel) => preferred.insert(member_id.clone(), channel.to_string()),
            None => preferred.remove(member_id),
        };
    }

    /// `chat` is `member_id`'s own too (a member who just joined in their private chat).
    pub fn add(&self, member_id: &MemberId, chat: ConversationKey) {
        let mut known = self.write();
        let places = known.entry(member_id.clone()).or_default();
        if !places.contains(&chat) {
            places.push(chat);
        }
    }

    /// `member_id` has no own chats any more (removed from the family).
    pub fn forget(&self, member_id: &MemberId) {
        self.write().remove(member_id);
    }

    /// Only `members` have own chats (the others left the family).
    pub fn keep_only(&self, members: &[MemberId]) {
        self.write().retain(|member, _| members.contains(member));
    }

    /// The channels members prefer, all of them anew (as stored).
    pub fn set_preferences(&self, preferred: impl IntoIterator<Item = (MemberId, String)>) {
        *self
            .preferred
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = preferred.into_iter().collect();
    }

    /// `channel` found its members' own chats anew: `(member, chat)` pairs replace what it
    /// had found before. A chat of another channel among them is not `channel`'s to say and
    /// is left out.
    pub fn replace_channel(&self, channel: &str, chats: Vec<(MemberId, ConversationKey)>) {
        let mut known = self.write();
        for places in known.values_mut() {
            places.retain(|place| place.channel() != channel);
        }
        for (member_id, chat) in chats {
            if chat.channel() == channel {
                known.entry(member_id).or_default().push(chat);
            }
        }
        known.retain(|_, places| !places.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str) -> MemberId {
        id.parse().unwrap()
    }

    fn place(channel: &str, conversation: &str) -> ConversationKey {
        ConversationKey::new(channel, conversation).unwrap()
    }

    #[test]
    fn a_channel_replaces_only_its_own_chats() {
        let own = OwnChats::new([(member("alice"), place("telegram", "1001"))]);
        own.replace_channel(
            "matrix",
            vec![
                (member("alice"), place("matrix", "!a")),
                (member("max"), place("matrix", "!m")),
                // Not Matrix's to say.
                (member("max"), place("telegram", "2002")),
            ],
        );
        assert_eq!(
            own.of(&member("alice")),
            [place("telegram", "1001"), place("matrix", "!a")]
        );
        assert_eq!(own.of(&member("max")), [place("matrix", "!m")]);
        own.replace_channel("matrix", vec![(member("alice"), place("matrix", "!a2"))]);
        assert_eq!(
            own.of(&member("alice")),
            [place("telegram", "1001"), place("matrix", "!a2")]
        );
        assert!(own.of(&member("max")).is_empty());
        assert!(own.of(&member("nobody")).is_empty());
    }

    #[test]
    fn a_preferred_channel_s_chat_comes_first() {
        let own = OwnChats::new([
            (member("alice"), place("telegram", "1001")),
            (member("alice"), place("matrix", "!a")),
        ]);
        own.set_preferred(&member("alice"), Some("matrix"));
        assert_eq!(
            own.of(&member("alice")),
            [place("matrix", "!a"), place("telegram", "1001")]
        );
        // Found anew, the preference still holds; and it can be dropped.
        own.replace_channel("matrix", vec![(member("alice"), place("matrix", "!b"))]);
        assert_eq!(own.of(&member("alice"))[0], place("matrix", "!b"));
        own.set_preferred(&member("alice"), None);
        assert_eq!(own.of(&member("alice"))[0], place("telegram", "1001"));
    }
}
