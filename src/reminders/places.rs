//! Who a reminder is for and where it goes. A reminder is for the asking member; a parent
//! may set one for another member, a child may not. One set for oneself comes to the chat
//! where it was set; one set for another member, or set where nothing can be delivered by
//! itself (the HTTP API, the terminal), goes to the member's own chat with hearth.

use crate::config::{FamilyMember, FamilyRole};
use crate::family::{Family, OwnChats};
use crate::ids::{ConversationKey, HTTP_CHANNEL, MemberId};

/// Why a reminder cannot be set for that member or delivered to them; nothing is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    #[error("no family member is called {0:?}: name one of {1}")]
    UnknownMember(String, String),
    #[error("only a parent may set a reminder for someone else; {asking} is a child")]
    ChildForOther { asking: MemberId },
    #[error(
        "{member} has no chat with hearth on Telegram or Matrix yet, so nothing could reach them there; ask them to message hearth once"
    )]
    NoOwnChat { member: MemberId },
}

/// The family member `name` names: their id or their name, in any case.
pub fn find_member(family: &Family, name: &str) -> Result<FamilyMember, PlaceError> {
    let wanted = name.trim();
    let members = family.members();
    members
        .iter()
        .find(|member| {
            member.id.as_str().eq_ignore_ascii_case(wanted)
                || member
                    .name
                    .as_deref()
                    .is_some_and(|known| known.eq_ignore_ascii_case(wanted))
        })
        .cloned()
        .ok_or_else(|| {
            let known: Vec<&str> = members.iter().map(|member| member.id.as_str()).collect();
            PlaceError::UnknownMember(wanted.to_string(), known.join(", "))
        })
}

/// Who asks and for whom: the target, checked against the asking member's role.
pub fn target(
    family: &Family,
    asking: &FamilyMember,
    for_member: Option<&str>,
) -> Result<FamilyMember, PlaceError> {
    let Some(name) = for_member.map(str::trim).filter(|name| !name.is_empty()) else {
        return Ok(asking.clone());
    };
    let target = find_member(family, name)?;
    if target.id != asking.id && asking.role != FamilyRole::Parent {
        return Err(PlaceError::ChildForOther {
            asking: asking.id.clone(),
        });
    }
    Ok(target)
}

/// Where something for `member_id` goes when it was set in `asked_in`: there, when it is
/// the member's own request in a chat that delivers by itself; else the member's own chat,
/// preferring the channel it was set on; else, for a member with no such chat, the HTTP
/// API's conversation of theirs (`GET /api/reminders` shows it), when it was set there.
pub fn delivery_place(
    own_chats: &OwnChats,
    push_channels: &[String],
    member_id: &MemberId,
    for_oneself: bool,
    asked_in: &ConversationKey,
) -> Result<ConversationKey, PlaceError> {
    let pushes = |place: &ConversationKey| {
        push_channels
            .iter()
            .any(|channel| channel == place.channel())
    };
    if for_oneself && pushes(asked_in) {
        return Ok(asked_in.clone());
    }
    let own: Vec<ConversationKey> = own_chats
        .of(member_id)
        .into_iter()
        .filter(|place| pushes(place))
        .collect();
    if let Some(place) = own
        .iter()
        .find(|place| place.channel() == asked_in.channel())
        .or_else(|| own.first())
    {
        return Ok(place.clone());
    }
    if asked_in.channel() == HTTP_CHANNEL {
        if for_oneself {
            return Ok(asked_in.clone());
        }
        if let Ok(theirs) = ConversationKey::http_session(member_id, None) {
            return Ok(theirs);
        }
    }
    Err(PlaceError::NoOwnChat {
        member: member_id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, name: &str, role: FamilyRole) -> FamilyMember {
        FamilyMember {
            id: id.parse().unwrap(),
            name: Some(name.into()),
            telegram_user_id: None,
            matrix_user_id: None,
            role,
            timezone: None,
        }
    }

    fn family() -> Family {
        Family::new(&[
            member("alice", "Alice", FamilyRole::Parent),
            member("max", "Max", FamilyRole::Child),
            member("lea", "Lea", FamilyRole::Child),
        ])
    }

    fn place(channel: &str, conversation: &str) -> ConversationKey {
        ConversationKey::new(channel, conversation).unwrap()
    }

    fn id(member: &str) -> MemberId {
        member.parse().unwrap()
    }

    #[test]
    fn a_parent_may_set_one_for_another_member_and_a_child_may_not() {
        let family = family();
        let alice = &family.member("alice").unwrap();
        let max = &family.member("max").unwrap();
        assert_eq!(target(&family, alice, Some("MAX")).unwrap().id, "max");
        assert_eq!(target(&family, alice, None).unwrap().id, "alice");
        assert_eq!(target(&family, max, Some("max")).unwrap().id, "max");
        assert_eq!(
            target(&family, max, Some("Lea")).unwrap_err(),
            PlaceError::ChildForOther { asking: id("max") }
        );
        assert!(matches!(
            target(&family, alice, Some("grandma")),
            Err(PlaceError::UnknownMember(..))
        ));
    }

    #[test]
    fn one_s_own_goes_where_it_was_set_and_another_s_to_their_own_chat() {
        let own = OwnChats::new([
            (id("max"), place("matrix", "!max")),
            (id("max"), place("telegram", "2002")),
        ]);
        let push = ["telegram".to_string(), "matrix".to_string()];
        let group = place("telegram", "-100");
        assert_eq!(
            delivery_place(&own, &push, &id("alice"), true, &group).unwrap(),
            group
        );
        assert_eq!(
            delivery_place(&own, &push, &id("max"), false, &group).unwrap(),
            place("telegram", "2002")
        );
        assert_eq!(
            delivery_place(&own, &push, &id("max"), true, &place("http", "max")).unwrap(),
            place("matrix", "!max")
        );
        assert_eq!(
            delivery_place(&own, &push, &id("alice"), true, &place("http", "alice/s1")).unwrap(),
            place("http", "alice/s1")
        );
        assert_eq!(
            delivery_place(&own, &push, &id("lea"), false, &place("http", "alice")).unwrap(),
            place("http", "lea")
        );
        assert_eq!(
            delivery_place(&own, &push, &id("lea"), false, &place("console", "alice")).unwrap_err(),
            PlaceError::NoOwnChat { member: id("lea") }
        );
    }
}
