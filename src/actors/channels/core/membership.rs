//! The family's commands in chat, the same on every platform: `/invite [parent|child]
//! [name]` and `/family [role NAME parent|child | remove NAME]` for parents, `/link` for any
//! member, and `/join CODE [name]`, the one thing a stranger may say. What each may do is
//! `family::Membership`'s; here they are read, answered, and the parents told in their own
//! chats (through the outbox of the channel each chat is on) when someone joins.
//!
//! A code is never logged: the command's text goes nowhere but to `Membership`, and the
//! reply carrying a new code only to the chat it was asked in.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Recipient;

use super::adapter::{IncomingMessage, PlatformAdapter};
use super::commands::{MembershipCommand, say};
use crate::actors::channels::{ChannelError, DeliverStored};
use crate::config::FamilyMember;
use crate::family::{Change, Issued, Joined, Membership, MembershipError, OwnChats, display};
use crate::ids::{ConversationKey, FamilyRole, MemberId};
use crate::ports::{Outbox, OutgoingKind, OutgoingMessage, PlatformUser, now_ms};

/// What the family's commands need besides the channel itself.
#[derive(Clone)]
pub struct MembershipParts {
    pub membership: Arc<Membership>,
    pub own_chats: Arc<OwnChats>,
    pub outbox: Arc<dyn Outbox>,
    /// Every chat platform's channel by name: where parents are told.
    pub channels: HashMap<String, Recipient<DeliverStored>>,
}

/// The reply to a stranger who wrote anything but `/join`, when strangers are told.
pub(crate) const ASK_FOR_A_CODE: &str = "I only talk with my family. If you belong to it, ask a parent for an invite code and send it to me as `/join CODE`.";

/// The help lines of the family's commands, for `member`.
pub(crate) fn help_lines(member: &FamilyMember, alternate_prefix: Option<char>) -> String {
    let also = |command: &str| match alternate_prefix {
        Some(prefix) => format!("`/{command}` (or `{prefix}{command}`)"),
        None => format!("`/{command}`"),
    };
    let mut text = String::new();
    if member.role == FamilyRole::Parent {
        text.push_str(&format!(
            "\n- {} [parent|child] [name]: a code that lets someone join the family",
            also("invite")
        ));
        text.push_str(&format!(
            "\n- {}: the family; `role NAME parent|child` or `remove NAME` to change it",
            also("family")
        ));
    } else {
        text.push_str(&format!("\n- {}: the family", also("family")));
    }
    text.push_str(&format!(
        "\n- {}: a code to use from your other account (Telegram or Matrix)",
        also("link")
    ));
    text
}

fn how_to_join(issued: &Issued, prefix: Option<char>) -> String {
    // Rounded up: a code issued a moment ago is valid for 24 hours, not 23.
    let hours = ((issued.expires_at_ms - now_ms()).max(0) as u64).div_ceil(3_600_000);
    let matrix = prefix
        .map(|prefix| {
            format!(
                " (`{prefix}join {}` in Matrix clients that take `/`)",
                issued.code
            )
        })
        .unwrap_or_default();
    format!(
        "`/join {}`{matrix}, to me on Telegram or Matrix (or enter it under Join on my web page), within {hours} hours. The code works once.",
        issued.code
    )
}

impl MembershipParts {
    /// A member's family command; the reply.
    pub(crate) async fn member_command<A: PlatformAdapter>(
        &self,
        adapter: &A,
        member: &FamilyMember,
        message: &IncomingMessage<A::MessageSource>,
        command: MembershipCommand,
        rest: &str,
    ) -> Result<Vec<OutgoingMessage>, ChannelError> {
        let now = now_ms();
        let prefix = A::ALTERNATE_PREFIX;
        let text = match command {
            MembershipCommand::Invite => {
                let mut words = rest.split_whitespace().peekable();
                let role = match words.peek().and_then(|word| FamilyRole::parse(word)) {
                    Some(role) => {
                        words.next();
                        role
                    }
                    None => FamilyRole::Child,
                };
                let name = words.collect::<Vec<_>>().join(" ");
                let name = (!name.is_empty()).then_some(name);
                match self
                    .membership
                    .invite(member, role, name.clone(), now)
                    .await
                    .map_err(storage)?
                {
                    Change::Done(issued) => format!(
                        "Invite code for {} as a {}: **{}**\nThey send {}{}",
                        name.as_deref().unwrap_or("someone"),
                        role.as_str(),
                        issued.code,
                        how_to_join(&issued, prefix),
                        if role == FamilyRole::Child {
                            " (`/invite parent NAME` invites a parent.)"
                        } else {
                            ""
                        }
                    ),
                    Change::Refused(text) => text,
                }
            }
            MembershipCommand::Link => {
                let issued = self
                    .membership
                    .link_code(member, now)
                    .await
                    .map_err(storage)?;
                format!(
                    "To be the same {} on another account, send {}",
                    display(member),
                    how_to_join(&issued, prefix)
                )
            }
            MembershipCommand::Join => {
                let Some(user) = adapter.platform_user(&message.sender) else {
                    return Ok(Vec::new());
                };
                return self.join(adapter, &user, message, rest).await;
            }
            MembershipCommand::Family => self.family_command(member, rest, now).await?,
        };
        Ok(vec![say(
            &message.conversation,
            text,
            Some(message.event_id.clone()),
        )])
    }

    async fn family_command(
        &self,
        member: &FamilyMember,
        rest: &str,
        now: i64,
    ) -> Result<String, ChannelError> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let usage = "`/family` lists the family; a parent changes it with `/family role NAME parent|child` or `/family remove NAME`.";
        Ok(match words.as_slice() {
            [] => self.membership.list(),
            ["role", target, role] => match FamilyRole::parse(role) {
                Some(role) => match self
                    .membership
                    .set_role(Some(member), target, role, now)
                    .await?
                {
                    Change::Done(changed) => {
                        format!("{} is now a {}.", display(&changed), changed.role.as_str())
                    }
                    Change::Refused(text) => text,
                },
                None => format!("{role:?} is no role: say parent or child."),
            },
            ["remove", target] => match self.membership.remove(Some(member), target, now).await? {
                Change::Done(removed) => {
                    self.own_chats.forget(&removed.id);
                    format!(
                        "{} is no longer in the family: I won't answer them any more.",
                        display(&removed)
                    )
                }
                Change::Refused(text) => text,
            },
            _ => usage.to_string(),
        })
    }

    /// `/join` from `user` (a stranger, or a member linking an account); the replies.
    pub(crate) async fn join<A: PlatformAdapter>(
        &self,
        adapter: &A,
        user: &PlatformUser,
        message: &IncomingMessage<A::MessageSource>,
        rest: &str,
    ) -> Result<Vec<OutgoingMessage>, ChannelError> {
        let joined = self
            .membership
            .join(user, rest, message.sender_name.clone(), now_ms())
            .await?;
        let reply = |text: String| say(&message.conversation, text, Some(message.event_id.clone()));
        let (member, text) = match joined {
            Change::Refused(text) => return Ok(vec![reply(text)]),
            Change::Done(Joined::Linked(member)) => {
                let text = format!(
                    "Linked: this account is {} too now. Your conversations stay separate per chat.",
                    display(&member)
                );
                (member, text)
            }
            Change::Done(Joined::Member { member, invited_by }) => {
                let text = format!(
                    "Welcome to the family, {}! You joined as a {}. Just write to me, or send /help.",
                    display(&member),
                    member.role.as_str()
                );
                self.tell_parents(&member, invited_by.as_ref(), user).await;
                (member, text)
            }
        };
        if adapter.own_chat_of(&message.sender, &message.conversation) {
            self.own_chats.add(&member.id, message.conversation.clone());
        }
        adapter.members_changed();
        Ok(vec![reply(text)])
    }

    /// Tell the parents but `member` that `member` joined, each in their own chats.
    pub async fn tell_parents(
        &self,
        member: &FamilyMember,
        invited_by: Option<&MemberId>,
        user: &PlatformUser,
    ) {
        let family = self.membership.family();
        let by = invited_by
            .map(|id| format!(", invited by {}", family.display_name(id)))
            .unwrap_or_default();
        let text = format!(
            "{} joined the family as a {} (on {}{by}). `/family` lists everyone.",
            display(member),
            member.role.as_str(),
            user.channel()
        );
        for parent in family.members() {
            if parent.role != FamilyRole::Parent || parent.id == member.id {
                continue;
            }
            self.tell_member(&parent.id, &text).await;
        }
    }
}

impl MembershipParts {
    /// Tell `member_id` `text` in each of their own chats, through the outbox (so it is
    /// sent once, after a restart too); how many chats it was stored for.
    pub async fn tell_member(&self, member_id: &MemberId, text: &str) -> usize {
        let mut told = 0;
        for place in self.own_chats.of(member_id) {
            if self.tell_in(member_id, place, text).await {
                told += 1;
            }
        }
        told
    }

    /// Tell `member_id` `text` in one own chat only, their preferred one first (a sign-in
    /// code goes to one place); whether it was stored for one.
    pub async fn tell_member_once(&self, member_id: &MemberId, text: &str) -> bool {
        for place in self.own_chats.of(member_id) {
            if self.tell_in(member_id, place, text).await {
                return true;
            }
        }
        false
    }

    async fn tell_in(&self, member_id: &MemberId, place: ConversationKey, text: &str) -> bool {
        let Some(channel) = self.channels.get(place.channel()) else {
            return false;
        };
        let message = OutgoingMessage {
            conversation: place,
            inbox_id: None,
            text: text.to_string(),
            kind: OutgoingKind::Reply,
            reply_to_event: None,
        };
        match self.outbox.enqueue(&message).await {
            Ok(outbox_id) => {
                channel.do_send(DeliverStored { outbox_id, message });
                true
            }
            Err(error) => {
                tracing::warn!(member = %member_id, %error, "member not told in their own chat");
                false
            }
        }
    }
}

fn storage(error: MembershipError) -> ChannelError {
    match error {
        MembershipError::Storage(error) => ChannelError::Storage(error),
        MembershipError::NoRandomness(error) => {
            ChannelError::Storage(crate::ports::StorageError::Database(error.to_string()))
        }
    }
}
