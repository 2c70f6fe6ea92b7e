//! The family's commands in chat, the same on every platform: `/invite [parent|child]
//! [name]` and `/family [role NAME parent|child | remove NAME]` for parents, `/link` (and
//! `/link switch`) and `/signin` for any member, and `/join CODE [name]`, the one thing a
//! stranger may say. What each may do is `family::Membership`'s; here they are read,
//! answered, and the members told in their own chats (`private_chats.rs`).
//!
//! A code or a sign-in link goes only where the member alone reads it: typed in a group,
//! the group hears only that it went to the member's private chat (or how to open one); it
//! is stored as a secret, its text gone from the outbox once delivered, and never logged.
//! Linking an account tells the member in all their chats; a `/link` code used from a
//! second account of a platform where the member has one asks them first, in the chat of
//! the account they have (`/link switch` there says yes).

use std::sync::{Arc, OnceLock};

use super::adapter::{IncomingMessage, PlatformAdapter};
use super::commands::{MembershipCommand, say};
use super::private_chats::{PrivateChats, SecretPlace};
use crate::actors::channels::ChannelError;
use crate::config::FamilyMember;
use crate::family::{Change, Issued, Joined, Membership, MembershipError, display};
use crate::identity::{Identity, SIGN_IN_LINK_VALID_MS};
use crate::ids::{FamilyRole, MemberId};
use crate::ports::{OutgoingMessage, PlatformUser, now_ms};

/// One-time sign-in links sent to a member's own chat (`/signin`, the page's "send me a
/// link"): the way in no guessing can block.
#[derive(Clone)]
pub struct SignInLinks {
    pub identity: Identity,
    /// Where members open the page, once the HTTP server listens.
    pub page_url: Arc<OnceLock<String>>,
}

impl SignInLinks {
    /// A new link for `member_id`, as the text to send them; `None` while the page's
    /// address is not known (or hearth serves no page).
    pub async fn link_text(&self, member_id: &MemberId, now: i64) -> Option<String> {
        let page = self.page_url.get()?;
        match self.identity.new_sign_in_link(member_id, now).await {
            Ok(secret) => Some(format!(
                "Your link to sign in to hearth's web page: {page}/sign-in/link/{secret}\nIt works once, within {} hours. If you did not ask for it, ignore this message.",
                SIGN_IN_LINK_VALID_MS / 3_600_000
            )),
            Err(error) => {
                tracing::error!(member = %member_id, %error, "sign-in link not made");
                None
            }
        }
    }
}

/// What the family's commands need besides the channel itself.
#[derive(Clone)]
pub struct MembershipParts {
    pub membership: Arc<Membership>,
    /// Each member's own chats, and how to tell them something there.
    pub chats: PrivateChats,
    /// `/signin`'s links; `None` where hearth serves no web page.
    pub sign_in_links: Option<SignInLinks>,
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
    text.push_str(&format!(
        "\n- {}: a link that signs you in to my web page",
        also("signin")
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

/// What a member's command answers: replies in the chat it was typed in, and whether it
/// was handled (a secret stored for its place).
type Replies = Vec<OutgoingMessage>;

impl MembershipParts {
    /// A member's family command; the replies for the chat it was typed in.
    pub(crate) async fn member_command<A: PlatformAdapter>(
        &self,
        adapter: &A,
        member: &FamilyMember,
        message: &IncomingMessage<A::MessageSource>,
        command: MembershipCommand,
        rest: &str,
    ) -> Result<Replies, ChannelError> {
        let now = now_ms();
        let prefix = A::ALTERNATE_PREFIX;
        let reply = |text: String| {
            vec![say(
                &message.conversation,
                text,
                Some(message.event_id.clone()),
            )]
        };
        match command {
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
                let place = self.secret_place(adapter, member, message);
                if place == SecretPlace::Nowhere {
                    return Ok(reply(no_private_chat::<A>("an invite code")));
                }
                let issued = self
                    .membership
                    .invite(member, role, name.clone(), now)
                    .await;
                let text = match issued.map_err(storage)? {
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
                    Change::Refused(text) => return Ok(reply(text)),
                };
                Ok(self
                    .send_secret::<A>(member, message, place, &text, "invite code")
                    .await)
            }
            MembershipCommand::Link if rest.trim().eq_ignore_ascii_case("switch") => {
                let channel = message.conversation.channel();
                let switched = self.membership.confirm_switch(member, channel, now).await?;
                let Some((member, account)) = switched else {
                    return Ok(reply(
                        "No other account waits for your yes: a `/link` code used from another account asks here first, for as long as the code is valid.".into(),
                    ));
                };
                let text = format!(
                    "{} is now your account on {} instead of this one, {}.",
                    account.describe(),
                    account.channel(),
                    display(&member)
                );
                self.chats
                    .tell_member_elsewhere(&member.id, &text, &message.conversation)
                    .await;
                adapter.members_changed();
                Ok(reply(text))
            }
            MembershipCommand::Link => {
                let place = self.secret_place(adapter, member, message);
                if place == SecretPlace::Nowhere {
                    return Ok(reply(no_private_chat::<A>("a link code")));
                }
                let text = match self
                    .membership
                    .link_code(member, now)
                    .await
                    .map_err(storage)?
                {
                    Change::Done(issued) => format!(
                        "To be the same {} on another account, send {}",
                        display(member),
                        how_to_join(&issued, prefix)
                    ),
                    Change::Refused(text) => return Ok(reply(text)),
                };
                Ok(self
                    .send_secret::<A>(member, message, place, &text, "link code")
                    .await)
            }
            MembershipCommand::SignIn => {
                let Some(links) = &self.sign_in_links else {
                    return Ok(reply("I have no web page to sign in to.".into()));
                };
                let place = self.secret_place(adapter, member, message);
                if place == SecretPlace::Nowhere {
                    return Ok(reply(no_private_chat::<A>("a sign-in link")));
                }
                let Some(text) = links.link_text(&member.id, now).await else {
                    return Ok(reply(
                        "No sign-in link could be made just now; try again in a moment.".into(),
                    ));
                };
                Ok(self
                    .send_secret::<A>(member, message, place, &text, "sign-in link")
                    .await)
            }
            MembershipCommand::Join => {
                let Some(user) = adapter.platform_user(&message.sender) else {
                    return Ok(Vec::new());
                };
                self.join(adapter, &user, message, rest).await
            }
            MembershipCommand::Family => Ok(reply(self.family_command(member, rest, now).await?)),
        }
    }

    fn secret_place<A: PlatformAdapter>(
        &self,
        adapter: &A,
        member: &FamilyMember,
        message: &IncomingMessage<A::MessageSource>,
    ) -> SecretPlace {
        let is_own = adapter.own_chat_of(&message.sender, &message.conversation);
        self.chats
            .secret_place(&member.id, &message.conversation, is_own)
    }

    /// Store `text` (carrying a secret, `what`) for `place`; the replies for the chat it
    /// was asked in.
    async fn send_secret<A: PlatformAdapter>(
        &self,
        member: &FamilyMember,
        message: &IncomingMessage<A::MessageSource>,
        place: SecretPlace,
        text: &str,
        what: &str,
    ) -> Replies {
        let here = &message.conversation;
        let event = Some(message.event_id.clone());
        let (place, reply_to) = match place {
            SecretPlace::Here => (here.clone(), event.clone()),
            SecretPlace::Elsewhere(chat) => (chat, None),
            SecretPlace::Nowhere => return Vec::new(),
        };
        let elsewhere = place != *here;
        if !self
            .chats
            .tell_in(&member.id, place.clone(), text, reply_to, true)
            .await
        {
            return vec![say(
                here,
                format!("The {what} could not be stored just now; try again in a moment."),
                event,
            )];
        }
        if !elsewhere {
            return Vec::new();
        }
        let where_to = if place.channel() == here.channel() {
            "our private chat".to_string()
        } else {
            format!("your own chat with me on {}", capitalised(place.channel()))
        };
        let hint = if place.channel() == here.channel() {
            format!(
                " Nothing there? {}, then ask again.",
                capitalised(A::PRIVATE_CHAT_HINT)
            )
        } else {
            String::new()
        };
        vec![say(
            here,
            format!(
                "I sent the {what} to {where_to}, {}: codes go only where you alone read them.{hint}",
                display(member)
            ),
            event,
        )]
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
                Change::Done(removed) => format!(
                    "{} is no longer in the family: I won't answer them any more.",
                    display(&removed)
                ),
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
    ) -> Result<Replies, ChannelError> {
        let joined = self
            .membership
            .join(user, rest, message.sender_name.clone(), now_ms())
            .await?;
        let here = &message.conversation;
        let reply = |text: String| vec![say(here, text, Some(message.event_id.clone()))];
        let (member, text) = match joined {
            Change::Refused(text) => return Ok(reply(text)),
            Change::Done(Joined::AlreadyTheirs(member)) => {
                let text = format!(
                    "This account is yours already, {}: nothing changed.",
                    display(&member)
                );
                return Ok(reply(text));
            }
            Change::Done(Joined::SwitchAsked { member, existing }) => {
                let asked = format!(
                    "Someone used your `/link` code from {} to become you on {} instead of this account ({}). If that was you, send `/link switch` here; if not, ignore this: nothing changes.",
                    user.describe(),
                    capitalised(user.channel()),
                    existing.describe(),
                );
                self.chats
                    .tell_member_on(&member.id, user.channel(), &asked)
                    .await;
                let text = format!(
                    "You have another {} account in the family ({}). I asked you there whether this one should replace it: send `/link switch` from that account while the code is valid.",
                    capitalised(user.channel()),
                    existing.describe()
                );
                return Ok(reply(text));
            }
            Change::Done(Joined::Linked(member)) => {
                let told = format!(
                    "{} is now linked to you, {}: I know you there as you.",
                    user.describe(),
                    display(&member)
                );
                self.chats
                    .tell_member_elsewhere(&member.id, &told, here)
                    .await;
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
        if adapter.own_chat_of(&message.sender, here) {
            self.chats.own_chats.add(&member.id, here.clone());
        }
        adapter.members_changed();
        Ok(reply(text))
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
            self.chats.tell_member(&parent.id, &text).await;
        }
    }
}

/// What a member who asked for `what` in a group is told when hearth has no private chat
/// with them.
fn no_private_chat<A: PlatformAdapter>(what: &str) -> String {
    format!(
        "I can send {what} only to your private chat with me, and I have none with you yet: {}, then ask again there.",
        A::PRIVATE_CHAT_HINT
    )
}

/// `text` with its first letter in capitals: `Telegram`.
fn capitalised(text: &str) -> String {
    let mut letters = text.chars();
    match letters.next() {
        Some(first) => first.to_uppercase().chain(letters).collect(),
        None => String::new(),
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
