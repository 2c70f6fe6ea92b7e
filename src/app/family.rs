//! What follows the family as the database has it: each member's own chats, read anew
//! with the roster (the platforms' chats of each member's accounts, the channel each
//! prefers, nothing kept of who left), and, among the workers of a shared database, the
//! others woken when the family changed here.

use std::sync::Arc;

use super::platforms;
use crate::family::{Family, Membership, OwnChats};
use crate::ports::{WakeTopic, WakeUp};
use crate::workers::Worker;

/// Each member's own chats, following `family` whenever it is read anew.
pub(super) fn own_chats_following(family: &Family) -> Arc<OwnChats> {
    let own_chats = Arc::new(OwnChats::default());
    let following = own_chats.clone();
    family.on_reload(Box::new(move |members, stored| {
        let ids: Vec<_> = members.iter().map(|member| member.id.clone()).collect();
        following.keep_only(&ids);
        for (channel, chats) in platforms::roster_chats(members) {
            following.replace_channel(channel, chats);
        }
        following.set_preferences(
            stored
                .iter()
                .filter_map(|row| Some((row.id.clone(), row.preferred_channel.clone()?))),
        );
    }));
    own_chats
}

/// Among the workers of a shared database, a change of the family made here wakes the
/// others, and each reads the family again when woken: what a worker does unasked (a
/// reminder escalated to the parents, a member's own chats) follows at once. Every request
/// checks the family's version anyway (`Family::refresh`), so a wake-up missed only delays
/// the unasked.
pub(super) fn share_changes(worker: &Arc<Worker>, membership: &Arc<Membership>) {
    let waking = worker.clone();
    membership.on_change(Box::new(move |version| {
        let worker = waking.clone();
        tokio::spawn(async move {
            let wake_up = WakeUp::new(WakeTopic::Members, version.to_string());
            worker.wake(wake_up).await;
        });
    }));
    let family = membership.family().clone();
    let mut wake_ups = worker.wake_ups();
    tokio::spawn(async move {
        use futures::StreamExt;
        while let Some(wake_up) = wake_ups.next().await {
            if wake_up.topic != WakeTopic::Members {
                continue;
            }
            if let Err(error) = family.refresh().await {
                tracing::warn!(%error, "family not read after a wake-up; the next request reads it");
            }
        }
    });
}
