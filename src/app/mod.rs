//! Start-up wiring: builds every actor from a validated config, connects their
//! addresses explicitly, and starts the HTTP server. Must run inside an actix System.
//!
//! - `platforms.rs`: the chat platforms built into this binary (the only file here that
//!   names one);
//! - `tools.rs`: each profile's tools stack;
//! - `models.rs`: the LLM providers, and the small local model started when every profile
//!   answers with it;
//! - `plugins.rs`: the plugins' catalog and runtime, on the stores;
//! - `intents.rs`: the intents engine of `engine: intents` profiles;
//! - `family.rs`: what follows the family as the database has it: each member's own
//!   chats, and the other workers woken when it changed here.

mod family;
mod intents;
mod models;
mod platforms;
mod plugins;
mod tools;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, AsyncContext, Context, Recipient};
use actix_web::dev::ServerHandle;

use crate::actor_thread::ActorThreadWatch;
use crate::actors::channels::core::ReminderAnswers;
#[cfg(feature = "matrix")]
use crate::actors::channels::matrix::MatrixStartError;
#[cfg(feature = "telegram")]
use crate::actors::channels::telegram::TelegramStartError;
use crate::actors::channels::{
    ChannelDeps, DeliverySettings, HttpChannel, MembershipParts, PrivateChats, SignInLinks,
};
use crate::actors::delegation::{Delegation, DelegationTarget, DelegationTargetInfo};
use crate::actors::llm_broker::{BrokerSettings, LlmBroker, ModelEntry};
use crate::actors::processing::{ProcessingDeps, ProcessingService};
use crate::actors::request_queue::{
    DeliverReply, DrainTurns, QueuePorts, RequestQueue, Router, VoiceNotes,
};
use crate::actors::scheduler::{Scheduler, SchedulerDeps};
use crate::config::LoadedConfig;
use crate::family::{Family, Membership};
use crate::http::{self, ApiKeys, HttpState};
use crate::identity::Identity;
use crate::local_model::{LocalModelError, LocalModelServer};
use crate::local_time::ZoneName;
use crate::metrics::Metrics;
use crate::plugins::CatalogError;
use crate::ports::StorageError;
use crate::readiness::Readiness;
use crate::reminders::{RemindersParts, RemindersToolset};
use crate::retention::{RetentionSettings, spawn_pruner};
use crate::storage::instance_lock::{InstanceLock, InstanceLockError};
use crate::storage::{self, Stores};
#[cfg(feature = "mcp")]
use crate::tools::mcp::{ChatElicitation, MAX_ELICITATION_WAIT, McpOptions, McpServers};
use crate::tools::{LocalToolsProvider, ToolsProvider};
use crate::workers::Worker;
// What `hearth doctor` builds the same way as start-up does.
pub(crate) use models::{build_models, build_transcription};
use platforms::PlatformContexts;
pub use platforms::Platforms;
#[cfg(feature = "matrix")]
pub(crate) use platforms::matrix_settings;
#[cfg(feature = "telegram")]
pub(crate) use platforms::telegram_settings;
use plugins::start_plugins;
pub(crate) use tools::profile_calendars;
use tools::{ToolParts, profile_tools};

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
    /// close the MCP servers and the pruner, write the telemetry still buffered, close the
    /// database it opened (queued writes committed, the writer's thread joined), and only
    /// then release the database lock, so no next hearth opens it while this one writes.
    /// Actors stop with their System.
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
pub async fn start_with_models(
    loaded: &LoadedConfig,
    options: StartOptions,
    models: HashMap<String, ModelEntry>,
) -> Result<RunningApp, StartError> {
    let config = &loaded.config;
    let serves_http = options.serve && config.http.enabled;
    // Locked before anything touches the file (migrations included): one hearth per database.
    let owns_stores = options.stores.is_none();
    let (stores, mut instance_lock) = match options.stores {
        Some(stores) => (stores, None),
        None => {
            let lock = InstanceLock::acquire_for_url(&config.database_url, serves_http).await?;
            let stores =
                storage::open(&config.database_url, config.database_max_connections).await?;
            (stores, lock)
        }
    };
    let metrics = Arc::new(Metrics::default());
    let readiness = Arc::new(Readiness::with_secrets(loaded.secrets.values()));
    let worker = if owns_stores {
        let worker = Worker::join(stores.coordination.clone(), readiness.clone()).await?;
        Some(Arc::new(worker))
    } else {
        None
    };
    // Conversations and platforms move between workers only on PostgreSQL: SQLite has one
    // process.
    let shared_worker = worker.clone().filter(|_| stores.postgres.is_some());
    let family = Arc::new(
        Family::with_metrics(&config.family, metrics.clone()).stored_in(stores.members.clone()),
    );
    let membership = Arc::new(Membership::new(
        family.clone(),
        stores.members.clone(),
        config.invites.tell_strangers,
    ));
    let own_chats = family::own_chats_following(&family);
    // The members who joined in chat answer from the first message on.
    membership.load().await?;
    if let Some(worker) = &shared_worker {
        family::share_changes(worker, &membership);
    }

    let broker = LlmBroker::new(
        models,
        BrokerSettings {
            max_concurrent_local: config.llm_max_concurrent_local,
            max_concurrent_cloud: config.llm_max_concurrent_cloud,
            retry: config.llm_retry.clone(),
            transcription: models::build_transcription(loaded)?,
        },
        stores.telemetry.clone(),
        metrics.clone(),
    )
    .start();

    // The queue is needed by MCP (servers' questions are asked through it) before it can
    // be built from the services: its context, and so its address, comes first.
    let queue_context = Context::<RequestQueue>::new();
    #[cfg(feature = "mcp")]
    let mcp = start_mcp(loaded, &queue_context).await;
    let local_tools: Arc<dyn ToolsProvider> =
        Arc::new(LocalToolsProvider::new(stores.profiles.clone()));
    let plugins =
        start_plugins(config, &stores, family.clone(), broker.clone().recipient()).await?;
    plugins.catalog.check_approval_names(loaded)?;
    let scripts = crate::scripts::load_if_used(loaded).await?.map(|catalog| {
        Arc::new(crate::scripts::ScriptsToolset::new(
            catalog,
            stores.script_workflows.clone(),
            config.scripts.clone(),
        ))
    });
    let deps = ProcessingDeps {
        broker: broker.clone().recipient(),
        memory: stores.memory.clone(),
        profiles: stores.profiles.clone(),
        family: family.clone(),
        vision_llms: ProcessingDeps::vision_llms(&config.llms),
        plugins: None,
        journal: stores.turn_journal.clone(),
    };
    // The HTTP channel and the queue each need the other's address: the channel's
    // context is made first, and the actor starts in it once the queue runs.
    let mut channels = options.extra_channels;
    let http_context = serves_http.then(Context::<HttpChannel>::new);
    if let Some(context) = &http_context {
        channels.insert("http".into(), context.address().recipient());
    }
    let platform_contexts = PlatformContexts::new(loaded, options.serve, &mut channels);
    // The chat platforms deliver through the durable outbox.
    let durable_channels = platform_contexts.durable_channels();
    // The scheduler and the reminder tools each need the other: its context comes first,
    // the actor starts once the queue and the channels it hands work to exist.
    let scheduler_context = Context::<Scheduler>::new();
    let reminders_parts = RemindersParts {
        schedules: stores.schedules.clone(),
        family: family.clone(),
        own_chats: own_chats.clone(),
        settings: config.reminders.clone(),
        push_channels: durable_channels.iter().cloned().collect(),
        profiles: loaded
            .profiles
            .iter()
            .map(|profile| profile.id.clone())
            .collect(),
        changes: scheduler_context.address().recipient(),
        settle: scheduler_context.address().recipient(),
    };
    // The delegation actor and the profiles' tools each need the other: its context
    // (and so its address) comes first, the actor starts once the services exist.
    let delegation_context = Context::<Delegation>::new();
    let delegation_targets: Vec<DelegationTargetInfo> = loaded
        .profiles
        .iter()
        .map(|profile| DelegationTargetInfo {
            id: profile.id.clone(),
            description: profile.description.clone(),
            level: profile.processing.delegation_security_level,
        })
        .collect();
    let calendars = tools::profile_calendars(loaded, &readiness);
    let default_calendars = calendars.get(&loaded.default_profile_id).cloned();
    let parts = ToolParts {
        local_tools,
        calendars,
        plugins: plugins.clone(),
        #[cfg(feature = "mcp")]
        mcp: mcp.clone(),
        delegation_targets,
        delegation: delegation_context.address().recipient(),
        scripts,
        reminders: reminders_parts.clone(),
        notes: stores.notes.clone(),
        family: family.clone(),
    };
    let intents_deps = crate::intents::IntentsDeps {
        broker: broker.clone().recipient(),
        memory: stores.memory.clone(),
        plans: stores.plans.clone(),
        journal: stores.turn_journal.clone(),
        telemetry: stores.telemetry.clone(),
        metrics: metrics.clone(),
        roles: intents::roles(loaded),
        tell: queue_context.address().recipient(),
    };
    let mut services = HashMap::new();
    let mut default_intents = None;
    for profile in &loaded.profiles {
        let intents_profile = intents::load_intents(profile, &stores).await?;
        if profile.id == loaded.default_profile_id {
            default_intents = intents_profile
                .as_ref()
                .map(|intents| intents.registry.clone());
        }
        let own_tools = intents_profile
            .as_ref()
            .and_then(|intents| intents.own_tools.clone());
        let (tools, routes_to_plugins) = profile_tools(profile, &parts, own_tools);
        // Only a profile that routes to plugins completes a pending plugin call with the
        // member's next message.
        let deps = ProcessingDeps {
            plugins: routes_to_plugins.then(|| plugins.clone()),
            ..deps.clone()
        };
        let mut service = ProcessingService::new(profile.clone(), tools.clone(), deps);
        if let Some(intents_profile) = intents_profile {
            service = service.with_intents(
                intents::intents_engine(profile, intents_profile, tools, intents_deps.clone())
                    .await?,
            );
        }
        services.insert(profile.id.clone(), service.start());
    }
    let targets = loaded
        .profiles
        .iter()
        .map(|profile| {
            (
                profile.id.clone(),
                DelegationTarget {
                    level: profile.processing.delegation_security_level,
                    service: services[&profile.id].clone(),
                },
            )
        })
        .collect();
    delegation_context.run(Delegation::new(targets, stores.memory.clone()));

    let queue = queue_context.address();
    let scheduler = scheduler_context.address();
    queue_context.run(
        RequestQueue::new(
            QueuePorts {
                inbox: stores.inbox.clone(),
                pending: stores.pending.clone(),
                plugin_calls: stores.pending_plugin_calls.clone(),
                script_workflows: stores.script_workflows.clone(),
                outbox: stores.outbox.clone(),
                plans: stores.plans.clone(),
            },
            Router::new(&loaded.profiles, &loaded.default_profile_id),
            services,
            channels,
            durable_channels,
            config.queue.clone(),
            metrics.clone(),
            readiness.clone(),
        )
        .with_own_chats(own_chats.clone())
        .with_worker(shared_worker.clone(), stores.channel_state.clone())
        .with_voice_notes(VoiceNotes {
            transcriber: broker.clone().recipient(),
            settings: config.voice_notes.clone(),
        }),
    );
    scheduler_context.run(Scheduler::new(SchedulerDeps {
        schedules: stores.schedules.clone(),
        family: family.clone(),
        own_chats: own_chats.clone(),
        settings: config.reminders.clone(),
        metrics: metrics.clone(),
        telemetry: stores.telemetry.clone(),
        channels: platform_contexts.stored_deliveries(),
        queue: queue.clone().recipient(),
        worker: shared_worker.clone(),
    }));

    let identity = Identity::new(stores.web_access.clone(), config.http.session_days);
    // Known once the HTTP server listens.
    let page_url = Arc::new(std::sync::OnceLock::new());
    let membership_parts = MembershipParts {
        membership: membership.clone(),
        chats: PrivateChats {
            own_chats: own_chats.clone(),
            outbox: stores.outbox.clone(),
            channels: platform_contexts.stored_deliveries(),
        },
        sign_in_links: serves_http.then(|| SignInLinks {
            identity: identity.clone(),
            page_url: page_url.clone(),
        }),
    };
    let channel_deps = ChannelDeps {
        family: family.clone(),
        queue: queue.clone(),
        inbox: stores.inbox.clone(),
        state: stores.channel_state.clone(),
        outbox: stores.outbox.clone(),
        readiness: readiness.clone(),
        metrics: metrics.clone(),
        delivery: DeliverySettings {
            max_age: Duration::from_secs(config.delivery.max_age_hours.saturating_mul(3600)),
        },
        own_chats: own_chats.clone(),
        membership: Some(membership_parts.clone()),
        worker: shared_worker.clone(),
        reminders: Some(ReminderAnswers {
            settle: scheduler.clone().recipient(),
            list: scheduler.clone().recipient(),
            cancel: scheduler.clone().recipient(),
            snooze_minutes: config.reminders.snooze_minutes,
        }),
    };
    let platforms = platform_contexts.start(loaded, channel_deps).await?;
    let default_zone = loaded
        .profile(&loaded.default_profile_id)
        .map(|profile| crate::local_time::ZoneName::from(profile.processing.timezone))
        .unwrap_or_else(|| chrono_tz::UTC.into());
    let web_toolset = default_calendars.clone().map(|calendars| {
        Arc::new(crate::calendar::CalendarToolset::new(
            calendars,
            family.clone(),
            default_zone,
        ))
    });
    let web_calendar = http::WebCalendar::of_default_profile(
        loaded,
        default_calendars,
        web_toolset,
        default_intents,
    );
    let http = match http_context {
        Some(context) => {
            let channel = context.address();
            let actor = HttpChannel::new(queue.clone());
            context.run(match &shared_worker {
                Some(worker) => {
                    actor.shared_with(worker.clone(), stores.inbox.clone(), stores.pending.clone())
                }
                None => actor,
            });
            let keys = config.http.auth_enabled.then(|| {
                ApiKeys::new(
                    secret_named_by(loaded, &config.http.auth_api_key_env),
                    secret_named_by(loaded, &config.http.plugin_api_key_env),
                    secret_named_by(loaded, &config.http.admin_api_key_env),
                )
            });
            let state = HttpState {
                queue: queue.clone(),
                channel,
                inbox: stores.inbox.clone(),
                pending: stores.pending.clone(),
                family: family.clone(),
                metrics: metrics.clone(),
                readiness: readiness.clone(),
                keys,
                metrics_auth: config.http.metrics_auth,
                reply_timeout: Duration::from_secs(config.http.reply_timeout_seconds),
                platform_routes: platforms.http_routes.clone(),
                plugins: plugins.clone(),
                registered_plugins: stores.registered_plugins.clone(),
                broker: broker.clone().recipient(),
                default_llm: loaded
                    .profile(&loaded.default_profile_id)
                    .map(|profile| profile.processing.llm_model.clone())
                    .unwrap_or_default(),
                llm_names: models::chat_llm_names(config),
                schedules: stores.schedules.clone(),
                reminders: Some(scheduler.clone().recipient()),
                cancel_reminder: Some(scheduler.clone().recipient()),
                // Members without a zone of their own are in the default profile's.
                reminder_forms: Some(Arc::new(RemindersToolset::new(
                    reminders_parts.clone(),
                    loaded
                        .profile(&loaded.default_profile_id)
                        .map(|profile| ZoneName::from(profile.processing.timezone))
                        .unwrap_or_else(|| chrono_tz::UTC.into()),
                ))),
                notes: stores.notes.clone(),
                usage: stores.usage.clone(),
                script_workflows: stores.script_workflows.clone(),
                identity,
                memory: stores.memory.clone(),
                membership: Some(membership_parts),
                calendar: Arc::new(web_calendar),
                attachments_dir: platforms::http_attachments_dir(loaded),
                max_attachment_bytes: config.http.max_attachment_bytes,
                client: http::client::ClientView::of(&config.http),
            };
            let (handle, address) =
                http::serve(&config.http.bind, config.http.max_body_bytes, state)?;
            let _ = page_url.set(config.http.page_url(Some(address)));
            if let Some(worker) = &worker {
                worker.record_http_address(address);
            }
            if let Some(lock) = &mut instance_lock
                && let Err(error) = lock.record_http_address(address).await
            {
                // Serving goes on; only `hearth chat` cannot find this hearth's address.
                tracing::warn!(%error, "http address not written to the database lock file");
            }
            tracing::info!(%address, "http api listening");
            Some((handle, address))
        }
        None => None,
    };

    let pruner = spawn_pruner(
        stores.retention.clone(),
        stores.web_access.clone(),
        RetentionSettings::from_config(&config.retention, platforms::attachment_dirs(loaded)),
        metrics.clone(),
    );

    Ok(RunningApp {
        queue,
        platforms,
        #[cfg(feature = "mcp")]
        mcp,
        broker,
        stores,
        metrics,
        readiness,
        membership,
        http,
        instance_lock,
        owns_stores,
        worker,
        pruner: AbortOnDrop(pruner),
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

/// The MCP servers of config, connected (or retried in the background: a server that fails
/// to start does not stop hearth, its tools answer "unavailable" meanwhile).
#[cfg(feature = "mcp")]
async fn start_mcp(
    loaded: &LoadedConfig,
    queue_context: &Context<RequestQueue>,
) -> Arc<McpServers> {
    // A server's question waits for the member as long as a confirmation of the asking
    // profile would (`ToolContext::question_timeout`), never longer than the cap.
    let options = McpOptions {
        elicitation: Some(Arc::new(ChatElicitation::new(
            queue_context.address().recipient(),
            MAX_ELICITATION_WAIT,
        ))),
        ..McpOptions::default()
    };
    Arc::new(McpServers::start(&loaded.config.mcp_servers, options).await)
}
