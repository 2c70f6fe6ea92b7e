//! The ids the core passes around instead of strings: a family member (`MemberId`), a
//! confirmation (`ConfirmationId`) and a conversation (`ConversationKey`: a chat of a
//! channel, or a delegated turn's sub-conversation under the conversation that delegated).
//!
//! Each is parsed once, where it comes in (a platform adapter, an HTTP handler, a stored
//! row, the configuration), by its one parser, and written back by `Display` in exactly the
//! form hearth stores and sends: the database, the HTTP API's JSON and Telegram's callback
//! data read the same as before the types existed. Serde goes through that string form
//! too. Nothing outside this module builds these strings or takes them apart.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a string is not the id it was read as; names the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("member id {0:?} is blank")]
    BlankMemberId(String),
    /// `/` would make `<member>/<session>` (an HTTP conversation) ambiguous between members.
    #[error("member id {0:?} contains '/' or a control character")]
    BadMemberId(String),
    #[error(
        "confirmation id {0:?} is not 1 to {MAX_CONFIRMATION_ID_LEN} letters, digits, '-' or '_'"
    )]
    BadConfirmationId(String),
    #[error("conversation key {0:?} has no channel: expected `<channel>:<conversation id>`")]
    NoChannel(String),
    #[error("channel {0:?} is not a channel name: lowercase letters, digits, '_' or '-'")]
    BadChannel(String),
    #[error("conversation id {0:?} is empty or contains a control character")]
    BadConversationId(String),
    #[error("delegated conversation {0:?} is not `<parent key>/<target profile>/<delegation id>`")]
    BadDelegation(String),
    #[error("delegation part {0:?} is empty or contains '/' or a control character")]
    BadDelegationPart(String),
}

/// The channel of delegated turns: their conversations belong to no chat.
pub const DELEGATION_CHANNEL: &str = "delegation";

/// Short enough to travel in a chat platform's button data (Telegram allows 64 bytes
/// for the id together with what says which button it is).
pub const MAX_CONFIRMATION_ID_LEN: usize = 48;

/// Serialises `value` as its string form.
fn serialize_as_text<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(text)
}

/// Reads a string and parses it with `T`'s one parser.
fn deserialize_parsed<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = IdError>,
{
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}

/// Implements what every id shares: its string form shown (`Display`, and `Debug` as that
/// string, so messages quoting an id read as before), compared with strings, serde through
/// the string form, and `TryFrom` both string types through `FromStr`.
macro_rules! string_id {
    ($name:ident) => {
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self.0.as_str(), formatter)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        // Hash and Eq are the string's, so a map keyed by the id is read with a `&str`.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl TryFrom<&str> for $name {
            type Error = IdError;
            fn try_from(text: &str) -> Result<Self, IdError> {
                text.parse()
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(text: String) -> Result<Self, IdError> {
                text.parse()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serialize_as_text(&self.0, serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserialize_parsed(deserializer)
            }
        }
    };
}

/// A family member's hearth id (config `family[].id`): who asks, who answers, whose data.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberId(String);

string_id!(MemberId);

impl FromStr for MemberId {
    type Err = IdError;

    fn from_str(text: &str) -> Result<Self, IdError> {
        if text.trim().is_empty() {
            return Err(IdError::BlankMemberId(text.to_owned()));
        }
        if text.contains('/') || text.chars().any(char::is_control) {
            return Err(IdError::BadMemberId(text.to_owned()));
        }
        Ok(MemberId(text.to_owned()))
    }
}

/// A confirmation's id: opaque and unguessable, it travels in buttons and API calls and is
/// never more than a name for the stored confirmation.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfirmationId(String);

string_id!(ConfirmationId);

impl ConfirmationId {
    /// A new, unguessable id (a UUIDv7).
    pub fn generate() -> Self {
        ConfirmationId(uuid::Uuid::now_v7().to_string())
    }
}

impl FromStr for ConfirmationId {
    type Err = IdError;

    fn from_str(text: &str) -> Result<Self, IdError> {
        let well_formed = (1..=MAX_CONFIRMATION_ID_LEN).contains(&text.len())
            && text
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "-_".contains(character));
        if !well_formed {
            return Err(IdError::BadConfirmationId(text.to_owned()));
        }
        Ok(ConfirmationId(text.to_owned()))
    }
}

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

fn is_delegation_part(part: &str) -> bool {
    !part.is_empty() && !part.contains('/') && !part.chars().any(char::is_control)
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

    /// A fresh sub-conversation of `parent` for a delegation to `target_profile`, named
    /// `delegation_id`.
    pub fn delegated(
        parent: &ConversationKey,
        target_profile: &str,
        delegation_id: &str,
    ) -> Result<Self, IdError> {
        for part in [target_profile, delegation_id] {
            if !is_delegation_part(part) {
                return Err(IdError::BadDelegationPart(part.to_owned()));
            }
        }
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
        let parsed = key(&second.to_string());
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

    #[test]
    fn member_ids_round_trip_and_refuse_what_would_be_ambiguous() {
        let alice: MemberId = "alice".parse().unwrap();
        assert_eq!(alice.to_string(), "alice");
        assert_eq!(format!("{alice:?}"), "\"alice\"");
        assert_eq!(alice, "alice");
        assert_eq!(serde_json::to_string(&alice).unwrap(), "\"alice\"");
        assert_eq!(
            serde_json::from_str::<MemberId>("\"alice\"").unwrap(),
            alice
        );
        assert_eq!(MemberId::try_from("mom:dad").unwrap().as_str(), "mom:dad");
        assert_eq!(
            "".parse::<MemberId>(),
            Err(IdError::BlankMemberId("".into()))
        );
        assert_eq!(
            " ".parse::<MemberId>().unwrap_err().to_string(),
            "member id \" \" is blank"
        );
        assert_eq!(
            "alice/work".parse::<MemberId>(),
            Err(IdError::BadMemberId("alice/work".into()))
        );
        assert!(serde_json::from_str::<MemberId>("\"\"").is_err());
    }

    #[test]
    fn confirmation_ids_are_short_and_plain() {
        let generated = ConfirmationId::generate();
        assert_eq!(
            generated.as_str().parse::<ConfirmationId>().unwrap(),
            generated
        );
        assert_eq!(
            ConfirmationId::try_from("01234567-89ab-cdef-0123-456789abcdef")
                .unwrap()
                .to_string(),
            "01234567-89ab-cdef-0123-456789abcdef"
        );
        let too_long = "x".repeat(MAX_CONFIRMATION_ID_LEN + 1);
        for bad in ["", "a:b", "a b", too_long.as_str()] {
            assert_eq!(
                bad.parse::<ConfirmationId>(),
                Err(IdError::BadConfirmationId(bad.to_owned()))
            );
        }
        assert_eq!(
            "a:b".parse::<ConfirmationId>().unwrap_err().to_string(),
            "confirmation id \"a:b\" is not 1 to 48 letters, digits, '-' or '_'"
        );
    }
}
