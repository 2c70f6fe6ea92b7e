//! The ids the core passes around instead of strings: a family member (`MemberId`) and
//! their role (`FamilyRole`), a
//! confirmation (`ConfirmationId`), a conversation (`ConversationKey`: a chat of a
//! channel, or a delegated turn's sub-conversation under the conversation that delegated)
//! and a prompt a member answers (`PromptId`: a confirmation, or a fired reminder's
//! occurrence, `FiringId`).
//!
//! Each is parsed once, where it comes in (a platform adapter, an HTTP handler, a stored
//! row, the configuration), by its one parser, and written back by `Display` in exactly the
//! form hearth stores and sends: the database, the HTTP API's JSON and Telegram's callback
//! data read the same as before the types existed. Serde goes through that string form
//! too. Nothing outside this module builds these strings or takes them apart.

mod conversation;
mod prompt;

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use conversation::{ConversationKey, DELEGATION_CHANNEL, HTTP_CHANNEL, check_target_profile};
pub use prompt::{FiringId, PromptId};

/// Why a string is not the id it was read as; names the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("member id {0:?} is empty")]
    EmptyMemberId(String),
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
    #[error("{0:?} names no occurrence of a reminder (`reminder:<schedule>.<due ms>`)")]
    BadFiringId(String),
    #[error(
        "{0:?} cannot name a delegated conversation: it is empty or contains '/' or a control character"
    )]
    BadDelegationPart(String),
    /// A Matrix conversation id is `<room id>/<thread root>`: a `/` in the room id (which
    /// the Matrix ids' parser lets through) would end it early and name another room.
    #[error("matrix room id {0:?} contains '/'")]
    SlashInRoomId(String),
}

/// A family member's role: a `child` may be limited by intents and policy, and a
/// `parent` answers what a child's request needs approved.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum FamilyRole {
    Child,
    #[default]
    Parent,
}

impl FamilyRole {
    pub fn as_str(self) -> &'static str {
        match self {
            FamilyRole::Child => "child",
            FamilyRole::Parent => "parent",
        }
    }

    /// `text` (`parent` or `child`, any case), if it names a role.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_lowercase().as_str() {
            "child" => Some(FamilyRole::Child),
            "parent" => Some(FamilyRole::Parent),
            _ => None,
        }
    }
}

/// Short enough to travel in a chat platform's button data (Telegram allows 64 bytes
/// for the id together with what says which button it is).
pub const MAX_CONFIRMATION_ID_LEN: usize = 48;

/// Serialises an id as its string form, `text`.
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
            return Err(IdError::EmptyMemberId(text.to_owned()));
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

#[cfg(test)]
mod tests {
    use super::*;

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
            Err(IdError::EmptyMemberId("".into()))
        );
        assert_eq!(
            " ".parse::<MemberId>().unwrap_err().to_string(),
            "member id \" \" is empty"
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
