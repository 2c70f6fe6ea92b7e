//! Start-up wiring: builds every actor from a validated config, connects their
//! addresses explicitly, and starts the HTTP server. Must run inside an actix System.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, AsyncContext, Context, Recipient};
use actix_web::dev::ServerHandle;

use crate::actors::channels::matrix::{
    MATRIX_CHANNEL, MatrixChannel, MatrixSettings, MatrixStartError, StopMatrix,
};
use crate::actors::channels::telegram::{
    StopTelegram, TELEGRAM_CHANNEL, TelegramChannel, TelegramSettings, TelegramStartError,
    TelegramWebhook,
};
use crate::actors::channels::{ChannelDeps, DeliverReply, DeliverySettings, HttpChannel};
use crate::actors::delegation::{
    DELEGATE_TOOL, Delegation, DelegationTarget, DelegationTargetInfo, DelegationTool,
};
use crate::actors::llm_broker::{BrokerSettings, LlmBroker, ModelEntry};
use crate::actors::processing::{ProcessingDeps, ProcessingService};
use crate::actors::request_queue::{QueuePorts, RequestQueue, Router};
use crate::config::{LlmProviderKind, LoadedConfig, TelegramMode};
use crate::family::Family;
use crate::http::{self, ApiKeys, HttpState};
use crate::llm::anthropic::AnthropicProvider;
use crate::llm::openai::OpenAiProvider;
use crate::llm::{LlmProvider, ProviderSettings};
use crate::metrics::Metrics;
use crate::plugins::{CatalogError, ROUTE_TO_PLUGIN, RouteToPluginTool, start_plugins};
use crate::ports::StorageError;
use crate::readiness::Readiness;
use crate::storage::instance_lock::{InstanceLock, InstanceLockError};
use crate::storage::{self, Stores};
use crate::tools::mcp::{ChatElicitation, MAX_ELICITATION_WAIT, McpOptions, McpServers};
use crate::tools::{
    CompositeToolsProvider, ConfirmingToolsProvider, FilteredToolsProvider, LocalToolsProvider,
    ToolsProvider,
};

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
    pub telegram: Option<Addr<TelegramChannel>>,
    pub matrix: Option<Addr<MatrixChannel>>,
    pub mcp: Arc<McpServers>,
    pub broker: Addr<LlmBroker>,
    pub stores: Stores,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    pub http: Option<(ServerHandle, SocketAddr)>,
    /// Held while running on a database it opened itself; released by `stop` or on drop.
    instance_lock: Option<InstanceLock>,
    /// The retention task; it ends with the app.
    pruner: AbortOnDrop,
}

/// A task that ends when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl RunningApp {
    /// Stop the HTTP server gracefully and store the telemetry still buffered
    /// (actors stop with their System).
    pub async fn stop(&self) {
        if let Some((handle, _)) = &self.http {
            handle.stop(true).await;
        }
        if let Some(telegram) = &self.telegram {
            let _ = telegram.send(StopTelegram).await;
        }
        if let Some(matrix) = &self.matrix {
            let _ = matrix.send(StopMatrix).await;
        }
        self.mcp.shutdown().await;
        self.pruner.0.abort();
        self.stores.telemetry.flush().await;
        if let Some(lock) = &self.instance_lock {
            lock.release();
        }
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
    #[error(transparent)]
    Telegram(#[from] TelegramStartError),
    #[error(transparent)]
    Matrix(#[from] MatrixStartError),
    #[error("plugins cannot be loaded:\n{0}")]
    Plugins(#[from] CatalogError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

pub async fn start(loaded: &LoadedConfig, options: StartOptions) -> Result<RunningApp, StartError> {
    let config = &loaded.config;
    let serves_http = options.serve && config.http.enabled;
    // Locked before anything touches the file (migrations included): one hearth per database.
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
    let family = Arc::new(Family::with_metrics(&config.family, metrics.clone()));

    let broker = LlmBroker::new(
        build_models(loaded)?,
        BrokerSettings {
            max_concurrent_local: config.llm_max_concurrent_local,
            max_concurrent_cloud: config.llm_max_concurrent_cloud,
            retry: config.llm_retry.clone(),
        },
        stores.telemetry.clone(),
        metrics.clone(),
    )
    .start();

    // The queue is needed by MCP (servers' questions are asked through it) before it can
    // be built from the services: its context, and so its address, comes first.
    let queue_context = Context::<RequestQueue>::new();
    // A server's question waits for the member as long as a confirmation of the asking
    // profile would (`ToolContext::question_timeout`), never longer than the cap.
    let mcp_options = McpOptions {
        elicitation: Some(Arc::new(ChatElicitation::new(
            queue_context.address().recipient(),
            MAX_ELICITATION_WAIT,
        ))),
        ..McpOptions::default()
    };
    // Servers that fail to start do not stop hearth: they are retried in the background
    // and their tools answer "unavailable" meanwhile.
    let mcp = Arc::new(McpServers::start(&config.mcp_servers, mcp_options).await);
    let local_tools: Arc<dyn ToolsProvider> =
        Arc::new(LocalToolsProvider::new(stores.profiles.clone()));
    let plugins =
        start_plugins(config, &stores, family.clone(), broker.clone().recipient()).await?;
    plugins.catalog.check_approval_names(loaded)?;
    let deps = ProcessingDeps {
        broker: broker.clone().recipient(),
        memory: stores.memory.clone(),
        profiles: stores.profiles.clone(),
        family: family.clone(),
        vision_llms: ProcessingDeps::vision_llms(&config.llms),
        plugins: None,
        journal: stores.turn_journal.clone(),
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
    let mut services = HashMap::new();
    for profile in &loaded.profiles {
        // Seed 004's stack: the profile's local tools, its MCP servers' tools and
        // delegation, composed, then wrapped by the confirmation layer.
        let mut providers: Vec<Arc<dyn ToolsProvider>> =
            vec![Arc::new(FilteredToolsProvider::new(
                local_tools.clone(),
                profile.tools.enable_local_tools.iter().cloned(),
            ))];
        let routes_to_plugins = profile
            .tools
            .enable_local_tools
            .iter()
            .any(|tool| tool == ROUTE_TO_PLUGIN);
        if routes_to_plugins {
            providers.push(Arc::new(RouteToPluginTool::new(
                plugins.clone(),
                profile.processing.llm_model.clone(),
            )));
        }
        if !profile.tools.enable_mcp_server_ids.is_empty() {
            providers.push(mcp.provider(&profile.tools.enable_mcp_server_ids));
        }
        if profile
            .tools
            .enable_local_tools
            .iter()
            .any(|tool| tool == DELEGATE_TOOL)
        {
            providers.push(Arc::new(DelegationTool::new(
                &profile.id,
                &delegation_targets,
                delegation_context.address().recipient(),
            )));
        }
        let tools: Arc<dyn ToolsProvider> = Arc::new(ConfirmingToolsProvider::new(
            Arc::new(CompositeToolsProvider::new(providers)),
            profile.tools.confirm_tools.iter().cloned(),
        ));
        // Only a profile that routes to plugins completes a pending plugin call with the
        // member's next message.
        let deps = ProcessingDeps {
            plugins: routes_to_plugins.then(|| plugins.clone()),
            ..deps.clone()
        };
        let service = ProcessingService::new(profile.clone(), tools, deps).start();
        services.insert(profile.id.clone(), service);
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

    // The HTTP channel and the queue each need the other's address: the channel's
    // context is made first, and the actor starts in it once the queue runs.
    let mut channels = options.extra_channels;
    let http_context = serves_http.then(Context::<HttpChannel>::new);
    if let Some(context) = &http_context {
        channels.insert("http".into(), context.address().recipient());
    }
    let telegram_context =
        (options.serve && config.channels.telegram.enabled).then(Context::<TelegramChannel>::new);
    if let Some(context) = &telegram_context {
        channels.insert(TELEGRAM_CHANNEL.into(), context.address().recipient());
    }
    let matrix_context =
        (options.serve && config.channels.matrix.enabled).then(Context::<MatrixChannel>::new);
    if let Some(context) = &matrix_context {
        channels.insert(MATRIX_CHANNEL.into(), context.address().recipient());
    }

    // The chat platforms deliver through the durable outbox.
    let durable_channels = [
        (TELEGRAM_CHANNEL, telegram_context.is_some()),
        (MATRIX_CHANNEL, matrix_context.is_some()),
    ]
    .into_iter()
    .filter(|(_, enabled)| *enabled)
    .map(|(channel, _)| channel.to_string())
    .collect();
    let queue = queue_context.address();
    queue_context.run(RequestQueue::new(
        QueuePorts {
            inbox: stores.inbox.clone(),
            pending: stores.pending.clone(),
            plugin_calls: stores.pending_plugin_calls.clone(),
            outbox: stores.outbox.clone(),
        },
        Router::new(&loaded.profiles, &loaded.default_profile_id),
        services,
        channels,
        durable_channels,
        config.queue.clone(),
        metrics.clone(),
        readiness.clone(),
    ));

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
    };
    let telegram = telegram_context.as_ref().map(Context::address);
    let telegram_webhook = match telegram_context {
        Some(context) => {
            let settings = telegram_settings(loaded);
            let webhook = webhook_of(&settings, context.address());
            let channel = TelegramChannel::new(settings, channel_deps.clone())?;
            context.run(channel);
            webhook
        }
        None => None,
    };

    let matrix = match matrix_context {
        Some(context) => {
            let channel = MatrixChannel::build(matrix_settings(loaded), channel_deps).await?;
            let address = context.address();
            context.run(channel);
            Some(address)
        }
        None => None,
    };

    let http = match http_context {
        Some(context) => {
            let channel = context.address();
            context.run(HttpChannel::new(queue.clone()));
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
                telegram_webhook,
                plugins: plugins.clone(),
                registered_plugins: stores.registered_plugins.clone(),
                broker: broker.clone().recipient(),
                default_llm: loaded
                    .profile(&loaded.default_profile_id)
                    .map(|profile| profile.processing.llm_model.clone())
                    .unwrap_or_default(),
                llm_names: config.llms.keys().cloned().collect(),
            };
            let (handle, address) =
                http::serve(&config.http.bind, config.http.max_body_bytes, state)?;
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

    let day = Duration::from_secs(24 * 3600);
    let retention = &config.retention;
    let mut attachment_dirs: Vec<std::path::PathBuf> = Vec::new();
    for (enabled, folder) in [
        (
            config.channels.telegram.enabled,
            &config.channels.telegram.attachments_dir,
        ),
        (
            config.channels.matrix.enabled,
            &config.channels.matrix.attachments_dir,
        ),
    ] {
        let folder = std::path::PathBuf::from(folder);
        if enabled && !attachment_dirs.contains(&folder) {
            attachment_dirs.push(folder);
        }
    }
    let pruner = crate::retention::spawn_pruner(
        stores.retention.clone(),
        crate::retention::RetentionSettings {
            history: day.saturating_mul(u32::try_from(retention.history_days).unwrap_or(u32::MAX)),
            telemetry: day
                .saturating_mul(u32::try_from(retention.telemetry_days).unwrap_or(u32::MAX)),
            finished_inbox: day
                .saturating_mul(u32::try_from(retention.answered_inbox_days).unwrap_or(u32::MAX)),
            delivered_outbox: day
                .saturating_mul(u32::try_from(retention.delivered_outbox_days).unwrap_or(u32::MAX)),
            attachments: day
                .saturating_mul(u32::try_from(retention.attachments_days).unwrap_or(u32::MAX)),
            attachment_dirs,
            interval: Duration::from_secs(retention.interval_seconds),
        },
        metrics.clone(),
    );

    Ok(RunningApp {
        queue,
        telegram,
        matrix,
        mcp,
        broker,
        stores,
        metrics,
        readiness,
        http,
        instance_lock,
        pruner: AbortOnDrop(pruner),
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

/// The Telegram channel's settings from config, its secrets resolved (validation made
/// sure they are there).
fn telegram_settings(loaded: &LoadedConfig) -> TelegramSettings {
    let telegram = &loaded.config.channels.telegram;
    let (commands, default_description) = channel_commands(loaded);
    TelegramSettings {
        token: secret_named_by(loaded, &telegram.token_env).unwrap_or_default(),
        api_url: telegram.api_url.clone(),
        mode: telegram.mode,
        poll_timeout: Duration::from_secs(telegram.poll_timeout_seconds),
        webhook_url: telegram.webhook_url.clone(),
        webhook_secret: secret_named_by(loaded, &telegram.webhook_secret_env),
        max_attachment_bytes: telegram.max_attachment_bytes,
        attachments_dir: telegram.attachments_dir.clone().into(),
        commands,
        default_description,
    }
}

/// The Matrix channel's settings from config, its secrets resolved (validation made
/// sure they are there).
fn matrix_settings(loaded: &LoadedConfig) -> MatrixSettings {
    let matrix = &loaded.config.channels.matrix;
    let (commands, default_description) = channel_commands(loaded);
    MatrixSettings {
        homeserver_url: matrix.homeserver_url.clone().unwrap_or_default(),
        user_id: matrix.user_id.clone().unwrap_or_default(),
        password: secret_named_by(loaded, &matrix.password_env),
        access_token: secret_named_by(loaded, &matrix.access_token_env),
        store_path: matrix.store_path.clone().into(),
        store_passphrase: secret_named_by(loaded, &matrix.store_passphrase_env).unwrap_or_default(),
        recovery_key: secret_named_by(loaded, &matrix.recovery_key_env),
        device_name: matrix.device_name.clone(),
        max_attachment_bytes: matrix.max_attachment_bytes,
        attachments_dir: matrix.attachments_dir.clone().into(),
        commands,
        default_description,
    }
}

/// Each profile's slash commands (without the slash, lowercase) with what the profile
/// is for, and what the default profile is for: what `/help` lists on every platform.
fn channel_commands(loaded: &LoadedConfig) -> (Vec<(String, String)>, String) {
    let default_description = loaded
        .profile(&loaded.default_profile_id)
        .map(|profile| profile.description.clone())
        .unwrap_or_default();
    let commands = loaded
        .profiles
        .iter()
        .flat_map(|profile| {
            profile.slash_commands.iter().map(|command| {
                (
                    command.trim_start_matches('/').to_lowercase(),
                    profile.description.clone(),
                )
            })
        })
        .collect();
    (commands, default_description)
}

/// The webhook route to serve, in webhook mode.
fn webhook_of(
    settings: &TelegramSettings,
    channel: Addr<TelegramChannel>,
) -> Option<TelegramWebhook> {
    if settings.mode != TelegramMode::Webhook {
        return None;
    }
    let url = reqwest::Url::parse(settings.webhook_url.as_deref()?).ok()?;
    Some(TelegramWebhook {
        path: url.path().to_string(),
        secret: settings.webhook_secret.clone()?,
        channel,
    })
}

/// One provider per named model of config `llms`, sharing one HTTP client.
fn build_models(loaded: &LoadedConfig) -> Result<HashMap<String, ModelEntry>, StartError> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .map_err(|error| StartError::HttpClient(error.to_string()))?;
    let mut models = HashMap::new();
    for (name, model) in &loaded.config.llms {
        let api_key = secret_named_by(loaded, &model.api_key_env);
        let timeout = Duration::from_secs(model.timeout_seconds.max(1));
        let settings = ProviderSettings {
            base_url: model.base_url.clone(),
            model: model.model.clone(),
            api_key,
            timeout,
            max_tokens: model.max_tokens,
        };
        let provider: Arc<dyn LlmProvider> = match model.provider {
            LlmProviderKind::OpenAi => Arc::new(OpenAiProvider::new(settings, client.clone())),
            LlmProviderKind::Anthropic => {
                Arc::new(AnthropicProvider::new(settings, client.clone()))
            }
        };
        models.insert(
            name.clone(),
            ModelEntry {
                model: model.model.clone(),
                backend: model.backend,
                // The broker's bound sits just above the provider's own HTTP timeout.
                timeout: timeout + Duration::from_secs(1),
                provider,
                cost_per_million_input_tokens: model.cost_per_million_input_tokens,
                cost_per_million_output_tokens: model.cost_per_million_output_tokens,
                vision: model.vision,
            },
        );
    }
    Ok(models)
}
