//! The channels of the chat platforms started, with what every channel core needs, among
//! it the family's commands' parts, which the HTTP API shares.

use std::time::Duration;

use actix::Addr;

use super::StartError;
use super::family::FamilyParts;
use super::foundation::Foundation;
use super::platforms::{PlatformContexts, Platforms};
use crate::actors::channels::core::ReminderAnswers;
use crate::actors::channels::{
    ChannelDeps, DeliverySettings, MembershipParts, PrivateChats, SignInLinks,
};
use crate::actors::request_queue::RequestQueue;
use crate::actors::scheduler::Scheduler;
use crate::config::LoadedConfig;

/// What the family's commands in chat (and the web page's family forms) need: changing the
/// family, each member's own chats and how to tell them something there (codes go only
/// there, through the outbox), and the sign-in links of `/signin` where hearth serves its
/// web page. Made once the platforms' addresses exist, for the channels and the HTTP API.
pub(super) fn membership_parts(
    base: &Foundation,
    family: &FamilyParts,
    platforms: &PlatformContexts,
    sign_in_links: Option<SignInLinks>,
) -> MembershipParts {
    MembershipParts {
        membership: family.membership.clone(),
        chats: PrivateChats {
            own_chats: family.own_chats.clone(),
            outbox: base.stores.outbox.clone(),
            channels: platforms.stored_deliveries(),
        },
        sign_in_links,
    }
}

/// The chat platforms' channels, started in their contexts with what every channel core
/// needs: the family, the queue it submits to, the stores it reads and notes in, the
/// scheduler answering reminders, `/reminders` and cancels, and the family's commands.
/// After the queue and the scheduler, which they send to; before the HTTP server, which
/// serves a platform's routes (Telegram's webhook).
pub(super) async fn start_channels(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    contexts: PlatformContexts,
    queue: &Addr<RequestQueue>,
    scheduler: &Addr<Scheduler>,
    membership: MembershipParts,
) -> Result<Platforms, StartError> {
    let config = &loaded.config;
    let stores = &base.stores;
    let deps = ChannelDeps {
        family: family.family.clone(),
        queue: queue.clone(),
        inbox: stores.inbox.clone(),
        state: stores.channel_state.clone(),
        outbox: stores.outbox.clone(),
        readiness: base.readiness.clone(),
        metrics: base.metrics.clone(),
        delivery: DeliverySettings {
            max_age: Duration::from_secs(config.delivery.max_age_hours.saturating_mul(3600)),
        },
        own_chats: family.own_chats.clone(),
        membership: Some(membership),
        worker: base.shared_worker.clone(),
        reminders: Some(ReminderAnswers {
            settle: scheduler.clone().recipient(),
            list: scheduler.clone().recipient(),
            cancel: scheduler.clone().recipient(),
            snooze_minutes: config.reminders.snooze_minutes,
        }),
    };
    contexts.start(loaded, deps).await
}
