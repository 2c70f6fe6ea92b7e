//! The addresses made before their actors. Several actors need each other: the queue hands
//! turns to the profiles' services and replies to the channels, while the MCP servers, the
//! intents engine and the channels send to the queue; the reminder tools tell the
//! scheduler, which hands what it fires to the queue and the channels; the delegation tool
//! of every profile sends to `Delegation`, which runs the profiles' services. So each of
//! these actors' context (and with it its address) is made first, and the actor starts in
//! it once what it needs runs.

use std::collections::HashSet;

use actix::{AsyncContext, Context};

use super::ExtraChannels;
use super::platforms::PlatformContexts;
use crate::actors::channels::HttpChannel;
use crate::actors::delegation::Delegation;
use crate::actors::request_queue::RequestQueue;
use crate::actors::scheduler::Scheduler;
use crate::config::LoadedConfig;

/// The contexts of the actors started later, whose addresses are handed out before.
pub(super) struct EarlyAddresses {
    pub queue: Context<RequestQueue>,
    pub scheduler: Context<Scheduler>,
    pub delegation: Context<Delegation>,
    /// The HTTP API's channel, when hearth serves HTTP.
    pub http: Option<Context<HttpChannel>>,
    /// Each chat platform enabled in config (none when hearth does not serve).
    pub platforms: PlatformContexts,
    /// Every channel the queue delivers to.
    pub channels: QueueChannels,
}

/// The channels the queue delivers replies to.
pub(super) struct QueueChannels {
    /// Every channel by its name (`Inbound::channel`): the extra ones given at start, the
    /// HTTP API's and the chat platforms'.
    pub by_name: ExtraChannels,
    /// The channels that deliver through the durable outbox: the chat platforms.
    pub durable: HashSet<String>,
}

/// Every context the later steps hand addresses of; made before the tools' sources, since
/// the MCP servers ask their questions through the queue.
pub(super) fn make_addresses_first(
    loaded: &LoadedConfig,
    serve: bool,
    serves_http: bool,
    extra_channels: ExtraChannels,
) -> EarlyAddresses {
    let mut by_name = extra_channels;
    let http = serves_http.then(Context::<HttpChannel>::new);
    if let Some(context) = &http {
        by_name.insert("http".into(), context.address().recipient());
    }
    let platforms = PlatformContexts::new(loaded, serve, &mut by_name);
    // The chat platforms deliver through the durable outbox.
    let durable = platforms.durable_channels();
    EarlyAddresses {
        queue: Context::new(),
        scheduler: Context::new(),
        delegation: Context::new(),
        http,
        platforms,
        channels: QueueChannels { by_name, durable },
    }
}
