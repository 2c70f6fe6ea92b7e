//! Telling a member something in their own chats with hearth, through the outbox of the
//! channel each chat is on (so it is sent once, after a restart too), and where a secret
//! goes: a code that makes someone a member or an account a member's, or a sign-in link,
//! is written only where the member alone reads it (the private chat it was asked in, or
//! their private chat on that platform, else on another), stored as a secret (its text
//! removed from the outbox once delivered), never in a group.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Recipient;

use crate::actors::channels::DeliverStored;
use crate::family::OwnChats;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{Outbox, OutgoingKind, OutgoingMessage};

/// Where a member's own chats are and how to write there.
#[derive(Clone)]
pub struct PrivateChats {
    pub own_chats: Arc<OwnChats>,
    pub outbox: Arc<dyn Outbox>,
    /// Every chat platform's channel by name.
    pub channels: HashMap<String, Recipient<DeliverStored>>,
}

/// Where a secret for a member who asked in `asked_in` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SecretPlace {
    /// The chat it was asked in: the member's own.
    Here,
    /// Their own chat elsewhere (on this platform if they have one there).
    Elsewhere(ConversationKey),
    /// They have no own chat hearth can write to.
    Nowhere,
}

impl PrivateChats {
    /// Where a secret for `member_id`, who asked in `asked_in` (`is_own`: their own chat),
    /// goes.
    pub(crate) fn secret_place(
        &self,
        member_id: &MemberId,
        asked_in: &ConversationKey,
        is_own: bool,
    ) -> SecretPlace {
        if is_own {
            return SecretPlace::Here;
        }
        let chats: Vec<ConversationKey> = self
            .own_chats
            .of(member_id)
            .into_iter()
            .filter(|chat| self.channels.contains_key(chat.channel()))
            .collect();
        let same_platform = chats
            .iter()
            .find(|chat| chat.channel() == asked_in.channel());
        match same_platform.or(chats.first()) {
            Some(chat) if chat == asked_in => SecretPlace::Here,
            Some(chat) => SecretPlace::Elsewhere(chat.clone()),
            None => SecretPlace::Nowhere,
        }
    }

    /// Tell `member_id` `text` in each of their own chats; how many chats it was stored
    /// for.
    pub async fn tell_member(&self, member_id: &MemberId, text: &str) -> usize {
        let mut told = 0;
        for place in self.own_chats.of(member_id) {
            if self.tell_in(member_id, place, text, None, false).await {
                told += 1;
            }
        }
        told
    }

    /// Tell `member_id` `text` in each of their own chats but `not_in`.
    pub async fn tell_member_elsewhere(
        &self,
        member_id: &MemberId,
        text: &str,
        not_in: &ConversationKey,
    ) {
        for place in self.own_chats.of(member_id) {
            if place != *not_in {
                self.tell_in(member_id, place, text, None, false).await;
            }
        }
    }

    /// Tell `member_id` `text` in their own chats on `channel` only.
    pub async fn tell_member_on(&self, member_id: &MemberId, channel: &str, text: &str) -> bool {
        let mut told = false;
        for place in self.own_chats.of(member_id) {
            if place.channel() == channel {
                told |= self.tell_in(member_id, place, text, None, false).await;
            }
        }
        told
    }

    /// Tell `member_id` `text` in one own chat only, their preferred one first; whether it
    /// was stored for one.
    pub async fn tell_member_once(&self, member_id: &MemberId, text: &str) -> bool {
        for place in self.own_chats.of(member_id) {
            if self.tell_in(member_id, place, text, None, false).await {
                return true;
            }
        }
        false
    }

    /// Tell `member_id` a secret (`text` carries a code or a link) in one own chat only,
    /// their preferred one first; whether it was stored for one.
    pub async fn tell_secret_once(&self, member_id: &MemberId, text: &str) -> bool {
        for place in self.own_chats.of(member_id) {
            if self.tell_in(member_id, place, text, None, true).await {
                return true;
            }
        }
        false
    }

    /// Store `text` for `place` (a secret's text removed once delivered) and hand it to
    /// its channel; whether it was stored.
    pub(crate) async fn tell_in(
        &self,
        member_id: &MemberId,
        place: ConversationKey,
        text: &str,
        reply_to_event: Option<String>,
        secret: bool,
    ) -> bool {
        let Some(channel) = self.channels.get(place.channel()) else {
            return false;
        };
        let message = OutgoingMessage {
            conversation: place,
            inbox_id: None,
            text: text.to_string(),
            kind: OutgoingKind::Reply,
            reply_to_event,
        };
        let stored = if secret {
            self.outbox.enqueue_secret(&message).await
        } else {
            self.outbox.enqueue(&message).await
        };
        match stored {
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
