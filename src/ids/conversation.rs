//! `ConversationKey`: which conversation a message, its history, its lane and what waits in
//! it belong to, and for a delegated turn the conversation that delegated. One parser reads
//! the stored form `<channel>:<conversation id>`; `Display` writes it back.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{IdError, MemberId, deserialize_parsed, serialize_as_text};

/// The channel of delegated turns: their conversations belong to no chat.
pub const DELEGATION_CHANNEL: &str = "delegation";

/// The HTTP API's channel: its conversations are a member's (`<member>`) or one of their
/// sessions (`<member>/<session>`).
pub const HTTP_CHANNEL: &str = "http";

/// The key a conversation's history, order and questions are kept under: a channel and
/// that channel's conversation id (`telegram:-100123/7`, `matrix:!room:example.org`,
/// `http:alice/session`), or, for a delegated turn, the conversation that delegated, the
/// target profile and the delegation's id, written
/// `delegation:<parent key>/<target profile>/<delegation id>` and nested as deep as
/// delegation goes.
///
/// Its string form is kept whole (it is what is stored and compared), with where its parts
/// lie; equality, hashing and order are the string form's.
#[derive(Clone)]
pub struct ConversationKey {
    text: String,
    /// The channel is `text[..channel_len]`, followed by `:`.
    channel_len: usize,
    /// For a delegated conversation: the conversation that delegated.
    delegation: Option<Box<Delegation>>,
}

#[derive(Clone)]
struct Delegation {
    parent: ConversationKey,
    target_profile: String,
    delegation_id: String,
}

fn is_channel_name(channel: &str) -> bool {
    !channel.is_empty()
        && channel.chars().all(|character| {
            character.is_ascii_lowercase() || character.is_ascii_digit() || "_-".contains(character)
        })
}

/// A part of a delegated conversation's key after its parent (the target profile, the
/// delegation's id): not empty, and without `/`, which separates the parts.
fn check_delegation_part(part: &str) -> Result<(), IdError> {
    if part.is_empty() || part.contains('/') || part.chars().any(char::is_control) {
        return Err(IdError::BadDelegationPart(part.to_owned()));
    }
    Ok(())
}

/// Whether a profile may be delegated to: its id names the sub-conversations of the
/// delegations to it. Configuration checks every profile id with it.
pub fn check_target_profile(profile_id: &str) -> Result<(), IdError> {
    check_delegation_part(profile_id)
}

impl ConversationKey {
    /// The conversation `conversation_id` of `channel`, as a channel or a stored row names
    /// it. For the delegation channel, `conversation_id` is
    /// `<parent key>/<target profile>/<delegation id>`.
    pub fn new(channel: &str, conversation_id: &str) -> Result<Self, IdError> {
        if !is_channel_name(channel) {
            return Err(IdError::BadChannel(channel.to_owned()));
        }
        if channel == DELEGATION_CHANNEL {
            return Self::parse_delegated(conversation_id);
        }
        if conversation_id.is_empty() || conversation_id.chars().any(char::is_control) {
            return Err(IdError::BadConversationId(conversation_id.to_owned()));
        }
        Ok(ConversationKey {
            text: format!("{channel}:{conversation_id}"),
            channel_len: channel.len(),
            delegation: None,
        })
    }

    /// The HTTP conversation of `member_id`'s session: their own, whatever session id
    /// another member uses (`alice`, or `alice/<session>`; a member id holds no `/`), so
    /// nobody continues another's conversation.
    pub fn http_session(member_id: &MemberId, session_id: Option<&str>) -> Result<Self, IdError> {
        match session_id {
            None => Self::new(HTTP_CHANNEL, member_id.as_str()),
            Some(session) => Self::new(HTTP_CHANNEL, &format!("{member_id}/{session}")),
        }
    }

    /// A fresh sub-conversation of `parent` for a delegation to `target_profile`, named
    /// `delegation_id`.
    pub fn delegated(
        parent: &ConversationKey,
        target_profile: &str,
        delegation_id: &str,
    ) -> Result<Self, IdError> {
        check_target_profile(target_profile)?;
        check_delegation_part(delegation_id)?;
        Ok(ConversationKey {
            text: format!("{DELEGATION_CHANNEL}:{parent}/{target_profile}/{delegation_id}"),
            channel_len: DELEGATION_CHANNEL.len(),
            delegation: Some(Box::new(Delegation {
                parent: parent.clone(),
                target_profile: target_profile.to_owned(),
                delegation_id: delegation_id.to_owned(),
            })),
        })
    }

    /// `<parent key>/<target profile>/<delegation id>`: the last two parts hold no `/`, so
    /// the parent key is everything before them, whatever it holds.
    fn parse_delegated(conversation_id: &str) -> Result<Self, IdError> {
        let bad = || IdError::BadDelegation(conversation_id.to_owned());
        let mut parts = conversation_id.rsplitn(3, '/');
        let (Some(delegation_id), Some(target_profile), Some(parent)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let parent: ConversationKey = parent.parse().map_err(|_| bad())?;
        Self::delegated(&parent, target_profile, delegation_id).map_err(|_| bad())
    }

    /// The string form, as stored.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// `http`, `console`, `telegram`, `matrix`, or `delegation`.
    pub fn channel(&self) -> &str {
        &self.text[..self.channel_len]
    }

    /// What follows the channel: the channel's own conversation id (a chat, a room, a
    /// member's session), or for a delegated conversation its parent, target and id.
    pub fn conversation_id(&self) -> &str {
        &self.text[self.channel_len + 1..]
    }

    pub fn is_delegated(&self) -> bool {
        self.delegation.is_some()
    }

    /// The conversation that delegated, for a delegated one.
    pub fn parent(&self) -> Option<&ConversationKey> {
        self.delegation
            .as_ref()
            .map(|delegation| &delegation.parent)
    }

    /// The profile a delegated conversation runs on.
    pub fn target_profile(&self) -> Option<&str> {
        self.delegation
            .as_ref()
            .map(|delegation| delegation.target_profile.as_str())
    }

    /// The id of the delegation a delegated conversation is.
    pub fn delegation_id(&self) -> Option<&str> {
        self.delegation
            .as_ref()
            .map(|delegation| delegation.delegation_id.as_str())
    }

    /// The member's own conversation this one belongs to: itself, or for a delegated one
    /// the conversation at the top of its chain of delegations.
    pub fn root(&self) -> &ConversationKey {
        let mut key = self;
        while let Some(parent) = key.parent() {
            key = parent;
        }
        key
    }

    /// Whether this conversation is `place` or a thread, topic or session within it (a
    /// channel's conversation id followed by `/` and more): same channel, and a conversation
    /// id that is `place`'s or continues it past a `/`.
    pub fn is_within(&self, place: &ConversationKey) -> bool {
        if self.is_delegated() || place.is_delegated() || self.channel() != place.channel() {
            return false;
        }
        let (here, outer) = (self.conversation_id(), place.conversation_id());
        here == outer
            || here
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

impl FromStr for ConversationKey {
    type Err = IdError;

    fn from_str(text: &str) -> Result<Self, IdError> {
        let (channel, conversation_id) = text
            .split_once(':')
            .ok_or_else(|| IdError::NoChannel(text.to_owned()))?;
        ConversationKey::new(channel, conversation_id)
    }
}

impl TryFrom<&str> for ConversationKey {
    type Error = IdError;
    fn try_from(text: &str) -> Result<Self, IdError> {
        text.parse()
    }
}

impl fmt::Display for ConversationKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

impl fmt::Debug for ConversationKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.text.as_str(), formatter)
    }
}

// The parts are read from the string form, so the string form alone decides.
impl PartialEq for ConversationKey {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for ConversationKey {}

impl Hash for ConversationKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl PartialOrd for ConversationKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ConversationKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.text.cmp(&other.text)
    }
}

impl Borrow<str> for ConversationKey {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for ConversationKey {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for ConversationKey {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for ConversationKey {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl Serialize for ConversationKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_as_text(&self.text, serializer)
    }
}

impl<'de> Deserialize<'de> for ConversationKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_parsed(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> ConversationKey {
        text.parse().unwrap()
    }

    #[test]
    fn conversation_keys_round_trip_through_their_string_form() {
        for text in [
            "http:alice",
            "http:alice/kitchen tablet",
            "console:alice",
            "telegram:-100123",
            "telegram:-100123/7",
            "matrix:!abc:example.org",
            "delegation:http:alice/helper/0192",
            "delegation:delegation:telegram:-100/7/helper/01/vault/02",
            "delegation:matrix:!abc:example.org/helper/01",
        ] {
            let parsed = key(text);
            assert_eq!(parsed.to_string(), text);
            assert_eq!(parsed.as_str(), text);
            let (channel, conversation_id) = text.split_once(':').unwrap();
            assert_eq!(
                ConversationKey::new(channel, conversation_id).unwrap(),
                parsed
            );
            assert_eq!(
                (parsed.channel(), parsed.conversation_id()),
                (channel, conversation_id)
            );
            let json = serde_json::to_string(&parsed).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(
                serde_json::from_str::<ConversationKey>(&json).unwrap(),
                parsed
            );
        }
    }

    #[test]
    fn a_chat_id_keeps_its_colons_and_slashes() {
        let room = key("matrix:!abc:example.org");
        assert_eq!(room.channel(), "matrix");
        assert_eq!(room.conversation_id(), "!abc:example.org");
        assert!(!room.is_delegated());
        let topic = ConversationKey::new("telegram", "-100123/7").unwrap();
        assert_eq!(topic.to_string(), "telegram:-100123/7");
    }

    #[test]
    fn a_delegated_conversation_knows_its_parent_target_and_root() {
        let parent = key("telegram:-100/7");
        let first = ConversationKey::delegated(&parent, "helper", "01").unwrap();
        assert_eq!(first.to_string(), "delegation:telegram:-100/7/helper/01");
        let second = ConversationKey::delegated(&first, "vault", "02").unwrap();
        assert_eq!(
            second.to_string(),
            "delegation:delegation:telegram:-100/7/helper/01/vault/02"
        );
        let parsed = key(second.as_str());
        assert!(parsed.is_delegated());
        assert_eq!(parsed.channel(), DELEGATION_CHANNEL);
        assert_eq!(parsed.parent(), Some(&first));
        assert_eq!(parsed.target_profile(), Some("vault"));
        assert_eq!(parsed.delegation_id(), Some("02"));
        assert_eq!(parsed.parent().unwrap().parent(), Some(&parent));
        assert_eq!(parsed.root(), &parent);
        assert_eq!(parent.root(), &parent);
        assert_eq!(parent.parent(), None);
        assert_eq!(
            key("delegation:http:alice/helper/0192").root(),
            &key("http:alice")
        );
    }

    #[test]
    fn a_delegation_part_never_holds_a_slash() {
        let parent = key("http:alice");
        assert_eq!(
            ConversationKey::delegated(&parent, "help/er", "01"),
            Err(IdError::BadDelegationPart("help/er".into()))
        );
        assert_eq!(
            ConversationKey::delegated(&parent, "helper", ""),
            Err(IdError::BadDelegationPart("".into()))
        );
    }

    #[test]
    fn a_thread_or_session_lies_within_its_chat() {
        let chat = key("telegram:-100");
        assert!(key("telegram:-100").is_within(&chat));
        assert!(key("telegram:-100/7").is_within(&chat));
        assert!(!key("telegram:-1001").is_within(&chat));
        assert!(!key("matrix:-100").is_within(&chat));
        assert!(!key("telegram:-100").is_within(&key("telegram:-100/7")));
        assert!(!key("delegation:telegram:-100/helper/1").is_within(&chat));
    }

    #[test]
    fn malformed_conversation_keys_are_refused_naming_the_value() {
        let refused = |text: &str| text.parse::<ConversationKey>().unwrap_err();
        assert_eq!(refused("alice"), IdError::NoChannel("alice".into()));
        assert_eq!(refused(":alice"), IdError::BadChannel("".into()));
        assert_eq!(refused("HTTP:alice"), IdError::BadChannel("HTTP".into()));
        assert_eq!(refused("http:"), IdError::BadConversationId("".into()));
        assert_eq!(
            refused("http:a\nb"),
            IdError::BadConversationId("a\nb".into())
        );
        for delegated in [
            "delegation:http:alice",
            "delegation:http:alice/helper",
            "delegation:alice/helper/01",
            "delegation:http:alice//01",
            "delegation:http:alice/helper/",
        ] {
            let (_, rest) = delegated.split_once(':').unwrap();
            assert_eq!(
                refused(delegated),
                IdError::BadDelegation(rest.into()),
                "{delegated}"
            );
        }
        assert_eq!(
            refused("alice").to_string(),
            "conversation key \"alice\" has no channel: expected `<channel>:<conversation id>`"
        );
        assert!(serde_json::from_str::<ConversationKey>("\"alice\"").is_err());
    }
}
