//! Which rooms are family members' own chats with hearth: a direct chat, a joined room
//! whose only members, invited ones included, are hearth and that member (a room with
//! someone else invited is no one's own: they may join and read on). What is only the
//! member's goes there: a code, a sign-in link, a child's request a parent approves. Read
//! from the client's store after a sync that changed some room's members (or hearth's
//! rooms) or after the family changed (on any worker), and written to the family's
//! shared `OwnChats` (read by the queue's escalations and the scheduler) when the answer
//! changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use matrix_sdk::ruma::events::room::member::{MembershipState, OriginalSyncRoomMemberEvent};
use matrix_sdk::{Client, RoomMemberships};

use super::rooms::Conversation;
use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::ids::{ConversationKey, MemberId};

/// The own chats found last, and whether a membership changed since.
pub(super) struct OwnRooms {
    members_changed: Arc<AtomicBool>,
    chats: Option<Vec<(MemberId, ConversationKey)>>,
    /// The family's version the rooms were found at.
    family_version: Option<i64>,
}

impl OwnRooms {
    /// Watch `client`'s membership events (hearth's own joins and leaves among them);
    /// `members_changed` is also set when the family changed (`MatrixAdapter`).
    pub(super) fn watch(client: &Client, members_changed: Arc<AtomicBool>) -> OwnRooms {
        members_changed.store(true, Ordering::SeqCst);
        let flag = members_changed.clone();
        client.add_event_handler(move |_: OriginalSyncRoomMemberEvent| {
            let flag = flag.clone();
            async move { flag.store(true, Ordering::SeqCst) }
        });
        OwnRooms {
            members_changed,
            chats: None,
            family_version: None,
        }
    }

    /// Look again after a sync that changed some room's members; the queue hears of a
    /// change.
    pub(super) async fn refresh(&mut self, adapter: &MatrixAdapter) {
        let family_version = adapter.family.version();
        let family_changed = family_version != self.family_version;
        if !self.members_changed.swap(false, Ordering::SeqCst) && !family_changed {
            return;
        }
        self.family_version = family_version;
        let own = adapter.client.user_id().map(ToOwned::to_owned);
        let mut chats = Vec::new();
        for room in adapter.client.joined_rooms() {
            let members = match room
                .members_no_sync(RoomMemberships::JOIN | RoomMemberships::INVITE)
                .await
            {
                Ok(members) => members,
                Err(error) => {
                    tracing::debug!(room = %room.room_id(), %error, "room members not read");
                    continue;
                }
            };
            let mut others = members
                .iter()
                .filter(|member| Some(member.user_id()) != own.as_deref());
            if let (Some(other), None) = (others.next(), others.next())
                && other.membership() == &MembershipState::Join
                && let Some(member) = adapter.family.member_by_matrix_id(other.user_id().as_str())
            {
                let conversation = Conversation::room(room.room_id().to_owned());
                if let Ok(key) = conversation.key() {
                    chats.push((member.id.clone(), key));
                }
            }
        }
        chats.sort();
        if self.chats.as_ref() != Some(&chats) {
            self.chats = Some(chats.clone());
            tracing::info!(chats = chats.len(), "members' own rooms found");
            adapter.own_chats.replace_channel(MATRIX_CHANNEL, chats);
        }
    }
}
