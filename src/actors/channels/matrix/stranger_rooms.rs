//! Rooms joined on a stranger's invite. Someone not yet in the family can only send
//! `/join CODE` in a room with hearth, so while a code adding a member is open hearth
//! accepts a stranger's invite, but for `MAX_STRANGER_ROOMS` rooms at most; each is noted
//! in `ChannelState` (so a worker taking the platform over knows them), and once no code is
//! open it is left, unless a family member other than hearth is in it by then (the
//! stranger joined: it is their room now).

use std::sync::atomic::{AtomicBool, Ordering};

use matrix_sdk::RoomMemberships;
use matrix_sdk::ruma::OwnedRoomId;

use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::ports::now_ms;

/// Rooms joined on strangers' invites at once, at most.
pub(super) const MAX_STRANGER_ROOMS: usize = 5;
const NOTE_PREFIX: &str = "stranger_room:";

/// Whether some stranger's room may be noted (true at start: the notes are read once).
#[derive(Debug)]
pub(super) struct StrangerRooms {
    maybe_some: AtomicBool,
}

impl Default for StrangerRooms {
    fn default() -> Self {
        StrangerRooms {
            maybe_some: AtomicBool::new(true),
        }
    }
}

impl StrangerRooms {
    /// Whether a stranger's invite to `room` may be accepted now: a code is open and fewer
    /// than `MAX_STRANGER_ROOMS` are joined; noted when it may.
    pub(super) async fn admit(&self, adapter: &MatrixAdapter, room: &OwnedRoomId) -> bool {
        if !adapter.family.invites_open(now_ms()) {
            return false;
        }
        let noted = match adapter.state.list_state(MATRIX_CHANNEL, NOTE_PREFIX).await {
            Ok(noted) => noted,
            Err(error) => {
                tracing::warn!(%error, "stranger rooms not read; invite refused");
                return false;
            }
        };
        if noted.len() >= MAX_STRANGER_ROOMS {
            tracing::warn!(
                rooms = noted.len(),
                "a stranger's room invite refused: enough rooms are open to strangers"
            );
            return false;
        }
        let key = format!("{NOTE_PREFIX}{room}");
        if let Err(error) = adapter
            .state
            .put_state(MATRIX_CHANNEL, &key, &now_ms().to_string())
            .await
        {
            tracing::warn!(%error, "stranger room not noted; invite refused");
            return false;
        }
        self.maybe_some.store(true, Ordering::SeqCst);
        true
    }

    /// Once no code is open, leave the noted rooms no family member is in; forget them.
    pub(super) async fn tidy(&self, adapter: &MatrixAdapter) {
        if !self.maybe_some.load(Ordering::SeqCst) {
            return;
        }
        if let Err(error) = adapter.family.refresh().await {
            tracing::debug!(%error, "family not read; stranger rooms looked at later");
            return;
        }
        if adapter.family.invites_open(now_ms()) {
            return;
        }
        let noted = match adapter.state.list_state(MATRIX_CHANNEL, NOTE_PREFIX).await {
            Ok(noted) => noted,
            Err(error) => {
                tracing::debug!(%error, "stranger rooms not read; looked at later");
                return;
            }
        };
        let own = adapter.client.user_id().map(ToOwned::to_owned);
        let mut left_all = true;
        for (key, _) in noted {
            let Some(room) = key
                .strip_prefix(NOTE_PREFIX)
                .and_then(|id| id.parse::<OwnedRoomId>().ok())
                .and_then(|id| adapter.client.get_room(&id))
            else {
                let _ = adapter.state.delete_state(MATRIX_CHANNEL, &key).await;
                continue;
            };
            let members = room
                .members_no_sync(RoomMemberships::JOIN)
                .await
                .unwrap_or_default();
            let family_there = members.iter().any(|member| {
                Some(member.user_id()) != own.as_deref()
                    && adapter
                        .family
                        .member_by_matrix_id(member.user_id().as_str())
                        .is_some()
            });
            if !family_there {
                if let Err(error) = room.leave().await {
                    tracing::warn!(room = %room.room_id(), %error, "stranger's room not left yet");
                    left_all = false;
                    continue;
                }
                tracing::info!(room = %room.room_id(), "stranger's room left: no code is open");
            }
            let _ = adapter.state.delete_state(MATRIX_CHANNEL, &key).await;
        }
        if left_all {
            self.maybe_some.store(false, Ordering::SeqCst);
        }
    }
}
