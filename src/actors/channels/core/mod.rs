//! The channel core: what every chat platform shares, written once. A platform is a thin
//! adapter implementing `Platform` (deliver one part of a message) plus its own way of
//! receiving events; everything else lives here:
//!
//! - `delivery.rs`: the durable outbox delivered in order per conversation, with retries,
//!   a maximum age, and what was delivered noted, so a restart loses and repeats nothing;
//! - `platform.rs`: the `Platform` trait and its error;
//! - `prompts.rs`: where a confirmation's prompts are noted, so a close reaches each;
//! - `texts.rs`: `/help`, the busy reply, the words a settled prompt ends with;
//! - `typing.rs`: "typing…" while a conversation's turns run;
//! - `attachments.rs`: safe file names and the note for a file over the size limit.
//!
//! A build without any chat platform (`--no-default-features`) still compiles the core, so
//! every build checks it, but nothing calls most of it.
#![cfg_attr(
    not(any(feature = "telegram", feature = "matrix")),
    allow(dead_code, unused_imports)
)]

pub mod attachments;
pub(crate) mod commands;
pub(crate) mod delivery;
pub(crate) mod platform;
pub(crate) mod prompts;
pub(crate) mod texts;
pub(crate) mod typing;

pub(crate) use delivery::Deliveries;
pub use delivery::DeliverySettings;
pub(crate) use platform::{DeliveryError, Platform};

use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, Addr, AsyncContext, Context};

use crate::actors::request_queue::RequestQueue;
use crate::family::Family;
use crate::metrics::Metrics;
use crate::ports::{ChannelState, Inbox, Outbox, OutgoingMessage};
use crate::readiness::Readiness;

/// What every chat platform's channel needs besides its own settings.
#[derive(Clone)]
pub struct ChannelDeps {
    pub family: Arc<Family>,
    pub queue: Addr<RequestQueue>,
    /// Read only: whether a redelivered event was accepted before.
    pub inbox: Arc<dyn Inbox>,
    /// Small durable facts of the channel (an update offset, where a prompt is shown).
    pub state: Arc<dyn ChannelState>,
    pub outbox: Arc<dyn Outbox>,
    pub readiness: Arc<Readiness>,
    pub metrics: Arc<Metrics>,
    pub delivery: DeliverySettings,
}

/// At a channel's start: read what the last run left undelivered and deliver it before
/// anything newer (tried again every few seconds while the database does not answer).
/// `field` finds the channel's deliveries in the actor.
pub(crate) fn resume_deliveries<A, P>(
    actor: &mut A,
    ctx: &mut Context<A>,
    field: fn(&mut A) -> &mut Deliveries<P>,
) where
    A: Actor<Context = Context<A>>,
    P: Platform,
{
    let loading = field(actor).undelivered();
    ctx.spawn(
        loading
            .into_actor(actor)
            .map(move |loaded, act, ctx| match loaded {
                Ok(entries) => field(act).resumed(entries),
                Err(error) => {
                    tracing::warn!(%error, "undelivered messages not read; trying again");
                    ctx.run_later(Duration::from_secs(5), move |act, ctx| {
                        resume_deliveries(act, ctx, field)
                    });
                }
            }),
    );
}

/// Store `message` in the outbox, then deliver it (what a channel says on its own: `/help`,
/// the busy reply, a prompt closed by a press). `field` finds the channel's deliveries.
pub(crate) fn send<A, P>(
    actor: &mut A,
    ctx: &mut Context<A>,
    field: fn(&mut A) -> &mut Deliveries<P>,
    message: OutgoingMessage,
) where
    A: Actor<Context = Context<A>>,
    P: Platform,
{
    let storing = field(actor).store(message);
    ctx.spawn(
        storing
            .into_actor(actor)
            .map(move |(message, stored), act, _ctx| field(act).stored(message, stored)),
    );
}
