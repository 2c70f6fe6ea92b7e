//! Start-up wiring: builds every actor from a validated config, connects their
//! addresses explicitly, and starts the HTTP server. Must run inside an actix System.
//!
//! Read `start_with_models` first: it is the sequence of steps, each a function whose doc
//! says what it builds and why it comes where it does. The files, in the order the steps
//! use them:
//!
//! - `foundation.rs`: the stores opened (under the database's instance lock), this process
//!   joined to the database's workers, the retention task;
//! - `family.rs`: the family loaded, and what follows it: each member's own chats, and the
//!   other workers woken when it changed here;
//! - `models.rs`: the LLM providers, the `LlmBroker` over them, and the small local model
//!   started when every profile answers with it;
//! - `addresses.rs`: the contexts of the actors that need each other's addresses, made
//!   before them;
//! - `tools.rs`: the tools' sources (MCP servers, plugins, family scripts, reminders) and
//!   each profile's tools stack;
//! - `plugins.rs`: the plugins' catalog and runtime, on the stores;
//! - `intents.rs`: the intents engine of `engine: intents` profiles;
//! - `profiles.rs`: a `ProcessingService` per profile, and `Delegation`;
//! - `queue.rs`: the `RequestQueue` and the `Scheduler`;
//! - `platforms.rs`: the chat platforms built into this binary (the only file here that
//!   names one), and the attachments folders, the HTTP API's among them;
//! - `channels.rs`: the platforms' channels started, and the family commands' parts they
//!   share with the HTTP API;
//! - `serving.rs`: the HTTP channel and server, sign-in, the web page's Calendar;
//! - `memory.rs`: family memory's indexer, beside the running app.

mod addresses;
mod channels;
mod family;
mod foundation;
mod intents;
mod memory;
mod models;
mod platforms;
mod plugins;
mod profiles;
mod queue;
mod serving;
mod tools;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, Recipient};
use actix_web::dev::ServerHandle;

use crate::actor_thread::ActorThreadWatch;
#[cfg(feature = "matrix")]
use crate::actors::channels::matrix::MatrixStartError;
#[cfg(feature = "telegram")]
use crate::actors::channels::telegram::TelegramStartError;
use crate::actors::llm_broker::{LlmBroker, ModelEntry};
use crate::actors::memory_indexer::{MemoryIndexer, StopIndexing};
use crate::actors::request_queue::{DeliverReply, DrainTurns, RequestQueue};
use crate::config::LoadedConfig;
use crate::family::Membership;
use crate::http;
use crate::local_model::{LocalModelError, LocalModelServer};
use crate::metrics::Metrics;
use crate::plugins::CatalogError;
use crate::ports::StorageError;
use crate::readiness::Readiness;
use crate::storage::Stores;
use crate::storage::instance_lock::{InstanceLock, InstanceLockError};
#[cfg(feature = "mcp")]
use crate::tools::McpServers;
use crate::workers::Worker;
use addresses::make_addresses_first;
use channels::{membership_parts, start_channels};
use family::load_family;
use foundation::{Foundation, OpenedStores, join_workers, open_stores, start_pruner};
use memory::start_memory_indexer;
use models::start_llm_broker;
// What `hearth doctor` builds the same way as start-up does.
pub(crate) use models::{build_embedding, build_models, build_transcription};
pub use platforms::Platforms;
#[cfg(feature = "matrix")]
pub(crate) use platforms::matrix_settings;
#[cfg(feature = "telegram")]
pub(crate) use platforms::telegram_settings;
use profiles::{start_delegation, start_profiles};
use queue::{start_queue, start_scheduler};
use serving::{HttpParts, sign_in_links, start_http, web_calendar};
pub(crate) use tools::profile_calendars;
use tools::{load_tool_sources, reminders_parts};

/// Channels that do not come from config: the console of `hearth chat`, and
/// test channels. Keyed by channel name (`Inbound::channel`).
pub type ExtraChannels = HashMap<String, Recipient<DeliverReply>>;

pub struct StartOptions {
    /// Serve the HTTP API (config `http.enabled`) and the chat platforms enabled in
    /// config; `hearth chat` turns this off: a terminal serves only itself.
    pub serve: bool,
    pub extra_channels: ExtraChannels,
    /// Use these stores instead of opening `database_url` (tests, and `hearth chat`,
    /// which holds the database's instance lock itself).
    pub stores: Option<Stores>,
}

/// A running hearth: the addresses a caller may need, and the HTTP server handle.
pub struct RunningApp {
    pub queue: Addr<RequestQueue>,
    pub platforms: Platforms,
    #[cfg(feature = "mcp")]
    pub mcp: Arc<McpServers>,
    pub broker: Addr<LlmBroker>,
    pub stores: Stores,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// The family, and changing it (invite codes).
    pub membership: Arc<Membership>,
    pub http: Option<(ServerHandle, SocketAddr)>,
    /// Held while running on a database it opened itself; released by `stop` (last) or on
    /// drop.
    instance_lock: Option<InstanceLock>,
    /// Whether `stores` were opened here (not given in `StartOptions`): `stop` closes them.
    owns_stores: bool,
    /// This process among the database's workers, when it opened the stores itself;
    /// `stop` hands its leases back.
    worker: Option<Arc<Worker>>,
    /// The retention task; it ends with the app.
    pruner: AbortOnDrop,
    /// Family memory's indexer (`None` with `memory.enabled: false`); stopped by `stop`
    /// before the database closes.
    pub memory_indexer: Option<Addr<MemoryIndexer>>,
    /// The small local model's server, when every profile answers with it; stopped by
    /// `stop`, killed on drop.
    local_model: Option<LocalModelServer>,
    /// The watch on the actors' thread (`hearth_actor_thread_stall_seconds`, stalls
    /// logged); ended by `stop` or on drop.
    actor_thread: Option<ActorThreadWatch>,
}

/// A task that ends when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long `stop` waits for the running turns. Long enough for a usual model answer; a
/// turn still running then goes on from its journal at the next start, so waiting longer
/// would only keep a stopping service (and the supervisor killing it) waiting.
const DRAIN_TURNS_LIMIT: Duration = Duration::from_secs(20);

impl RunningApp {
    /// Stop in the order that loses nothing: take no more messages (the HTTP server, then
    /// the channels), let the running turns end (`DrainTurns`, at most `DRAIN_TURNS_LIMIT`),
    /// close the MCP servers, the pruner and memory's indexer, write the telemetry still
    /// buffered, close the database it opened (queued writes committed, the writer's thread
    /// joined), and only then release the database lock, so no next hearth opens it while
    /// this one writes. Actors stop with their System.
    pub async fn stop(&self) {
        if let Some((handle, _)) = &self.http {
            handle.stop(true).await;
        }
        self.platforms.stop().await;
        match tokio::time::timeout(DRAIN_TURNS_LIMIT, self.queue.send(DrainTurns)).await {
            Ok(Ok(())) => tracing::info!("running turns ended"),
            Ok(Err(error)) => tracing::warn!(%error, "the queue did not drain"),
            Err(_) => tracing::warn!(
                limit_s = DRAIN_TURNS_LIMIT.as_secs(),
                "turns still running at the stop; they go on from their journal at the next start"
            ),
        }
        #[cfg(feature = "mcp")]
        self.mcp.shutdown().await;
        self.pruner.0.abort();
        if let Some(indexer) = &self.memory_indexer {
            // Gone already when its System stopped first: nothing left to stop.
            let _ = indexer.send(StopIndexing).await;
        }
        if let Some(server) = &self.local_model {
            server.stop().await;
        }
        if let Some(worker) = &self.worker {
            worker.leave().await;
        }
        if self.owns_stores {
            self.stores.close().await;
        } else {
            self.stores.telemetry.flush().await;
        }
        if let Some(lock) = &self.instance_lock {
            lock.release();
        }
        if let Some(watch) = &self.actor_thread {
            watch.stop();
        }
    }

    /// The small local model's OpenAI root (`http://127.0.0.1:PORT/v1`), when it answers.
    pub fn local_model_url(&self) -> Option<String> {
        self.local_model.as_ref().map(LocalModelServer::base_url)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the database: {0}")]
    Storage(#[from] StorageError),
    #[error(transparent)]
    InstanceLock(#[from] InstanceLockError),
    #[error(transparent)]
    Bind(#[from] http::BindError),
    #[error("cannot build the http client for llms: {0}")]
    HttpClient(String),
    #[cfg(feature = "telegram")]
    #[error(transparent)]
    Telegram(#[from] TelegramStartError),
    #[cfg(feature = "matrix")]
    #[error(transparent)]
    Matrix(#[from] MatrixStartError),
    #[error("plugins cannot be loaded:\n{0}")]
    Plugins(#[from] CatalogError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("family scripts cannot be loaded:\n{0}")]
    Scripts(#[from] crate::scripts::ManifestError),
    #[error("intents cannot be loaded:\n{0}")]
    Intents(#[from] crate::intents::IntentsFileError),
    #[error(transparent)]
    LocalModel(#[from] LocalModelError),
}

/// Starts hearth with the models config `llms` names; the small local model's server first,
/// when every profile answers with it. Its thread, the actors' one, is watched for stalls
/// (`actor_thread`).
pub async fn start(loaded: &LoadedConfig, options: StartOptions) -> Result<RunningApp, StartError> {
    let local_model = models::start_local_model(loaded).await?;
    let models = models::build_models(loaded, local_model.as_ref())?;
    let mut running = start_with_models(loaded, options, models).await?;
    running.local_model = local_model;
    running.actor_thread = Some(ActorThreadWatch::start(running.metrics.clone()));
    Ok(running)
}

/// `start` with these models instead of the providers config `llms` names: tests run the
/// actors on tokio's paused clock with a model in this process, since a clock that jumps
/// to the next timer would cut a socket's wait short.
///
/// The steps, in the order they must run (each step's doc says why it comes where it does):
/// the stores and this process among the database's workers, the family, the LLM broker,
/// the addresses of the actors that need each other, the tools' sources, one
/// `ProcessingService` per profile, `Delegation`, the queue, the scheduler, the chat
/// platforms' channels, the HTTP server, the retention task and memory's indexer.
pub async fn start_with_models(
    loaded: &LoadedConfig,
    options: StartOptions,
    models: HashMap<String, ModelEntry>,
) -> Result<RunningApp, StartError> {
    let serves_http = options.serve && loaded.config.http.enabled;
    let OpenedStores {
        stores,
        mut instance_lock,
        owns_stores,
    } = open_stores(&loaded.config, options.stores, serves_http).await?;
    let base = join_workers(loaded, stores, owns_stores).await?;
    let family = load_family(&loaded.config, &base).await?;
    let broker = start_llm_broker(loaded, models, &base)?;
    let addresses =
        make_addresses_first(loaded, options.serve, serves_http, options.extra_channels);
    let sources = load_tool_sources(loaded, &base, &family, &broker, &addresses.queue).await?;
    let reminders = reminders_parts(loaded, &base, &family, &addresses);
    let profiles = start_profiles(
        loaded, &base, &family, &broker, &addresses, &sources, &reminders,
    )
    .await?;
    start_delegation(loaded, addresses.delegation, &profiles.services, &base);
    let queue = start_queue(
        loaded,
        &base,
        &family,
        &broker,
        addresses.queue,
        profiles.services,
        addresses.channels,
    );
    let scheduler = start_scheduler(
        loaded,
        &base,
        &family,
        addresses.scheduler,
        &addresses.platforms,
        &queue,
    );
    let sign_in = sign_in_links(loaded, &base);
    let membership = membership_parts(
        &base,
        &family,
        &addresses.platforms,
        serves_http.then(|| sign_in.clone()),
    );
    let platforms = start_channels(
        loaded,
        &base,
        &family,
        addresses.platforms,
        &queue,
        &scheduler,
        membership.clone(),
    )
    .await?;
    let http = start_http(
        loaded,
        addresses.http,
        &base,
        &mut instance_lock,
        HttpParts {
            queue: queue.clone(),
            scheduler,
            broker: broker.clone(),
            family: family.family.clone(),
            platform_routes: platforms.http_routes.clone(),
            plugins: sources.plugins.clone(),
            reminders,
            sign_in,
            membership,
            calendar: web_calendar(
                loaded,
                &family,
                profiles.default_calendars,
                profiles.default_intents,
            ),
        },
    )
    .await?;
    let pruner = start_pruner(loaded, &base);
    let memory_indexer = start_memory_indexer(loaded, &base, &family, &broker);

    let Foundation {
        stores,
        metrics,
        readiness,
        worker,
        ..
    } = base;
    Ok(RunningApp {
        queue,
        platforms,
        #[cfg(feature = "mcp")]
        mcp: sources.mcp,
        broker,
        stores,
        metrics,
        readiness,
        membership: family.membership,
        http,
        instance_lock,
        owns_stores,
        worker,
        pruner: AbortOnDrop(pruner),
        memory_indexer,
        local_model: None,
        // Not on the paused clock's tests (`start_with_models`): their clock jumps.
        actor_thread: None,
    })
}

/// The secret in the variable a `*_env` key names, if it names one (validation made sure
/// every named variable is set).
fn secret_named_by(loaded: &LoadedConfig, variable: &Option<String>) -> Option<String> {
    variable
        .as_deref()
        .and_then(|variable| loaded.secret(variable))
        .map(str::to_string)
}
