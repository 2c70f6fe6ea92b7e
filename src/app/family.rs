//! The family as the database has it, loaded before any actor, and what follows it: each
//! member's own chats, read anew with the roster (the platforms' chats of each member's
//! accounts, the channel each prefers, nothing kept of who left), and, among the workers
//! of a shared database, the others woken when the family changed here.

use std::sync::Arc;

use super::StartError;
use super::foundation::Foundation;
use super::platforms;
use crate::config::HearthConfig;
use crate::family::{Family, Membership, OwnChats};
use crate::ports::{WakeTopic, WakeUp};
use crate::workers::Worker;

/// The family and what changes and follows it.
pub(super) struct FamilyParts {
    /// Who is a member (the configuration's and those the database keeps).
    pub family: Arc<Family>,
    /// Changing the family: invites, links, joins, roles, removals.
    pub membership: Arc<Membership>,
    /// Each member's own chats, following the family.
    pub own_chats: Arc<OwnChats>,
}

/// The family of config and of the database, loaded before any actor so the members who
/// joined in chat answer from the first message on; each member's own chats follow it, and
/// on a shared database a change made here wakes the other workers.
pub(super) async fn load_family(
    config: &HearthConfig,
    base: &Foundation,
) -> Result<FamilyParts, StartError> {
    let stores = &base.stores;
    let family = Arc::new(
        Family::with_metrics(&config.family, base.metrics.clone())
            .stored_in(stores.members.clone()),
    );
    let membership = Arc::new(Membership::new(
        family.clone(),
        stores.members.clone(),
        stores.family_memory.clone(),
        config.invites.tell_strangers,
    ));
    let own_chats = own_chats_following(&family);
    // The members who joined in chat answer from the first message on.
    membership.load().await?;
    if let Some(worker) = &base.shared_worker {
        share_changes(worker, &membership);
    }
    Ok(FamilyParts {
        family,
        membership,
        own_chats,
    })
}

/// Each member's own chats, following `family` whenever it is read anew.
fn own_chats_following(family: &Family) -> Arc<OwnChats> {
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
fn share_changes(worker: &Arc<Worker>, membership: &Arc<Membership>) {
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
