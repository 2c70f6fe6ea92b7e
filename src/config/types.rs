//! The typed shape of `hearth.yaml`: one struct per section, with the defaults a key gets when
//! the file leaves it out.
//!
//! Every struct denies unknown keys, so a typo is an error at start-up instead of a setting that
//! silently does nothing. A key written with an empty value (`family:` with nothing after it)
//! counts as "use the default" for collections and sections, because that is what people mean
//! when they leave a section empty. The two profile sections (`processing_config`,
//! `tools_config`) stay raw YAML mappings here: they are merged key by key before they are typed,
//! which `profiles/` owns.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_yaml::Mapping;

use super::secret::Secret;
use super::yaml_file::null_as_default;
use crate::redaction::redact_url_password;

/// The whole configuration file.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HearthConfig {
    pub database_url: String,
    /// Unset: `database_connections` picks the database's own default.
    pub database_max_connections: Option<u32>,
    #[serde(deserialize_with = "null_as_default")]
    pub http: HttpConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub queue: QueueConfig,
    pub llm_max_concurrent_local: usize,
    pub llm_max_concurrent_cloud: usize,
    #[serde(deserialize_with = "null_as_default")]
    pub llm_retry: LlmRetryConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub llms: BTreeMap<String, LlmModelConfig>,
    #[serde(deserialize_with = "null_as_default")]
    pub family: Vec<FamilyMember>,
    #[serde(deserialize_with = "null_as_default")]
    pub invites: InvitesConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub channels: ChannelsConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub delivery: DeliveryConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub retention: RetentionConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub reminders: super::reminders::RemindersConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub voice_notes: super::transcription::VoiceNotesConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub memory: super::memory::MemoryConfig,
    pub plugins_dir: String,
    /// The family's scripts and their `manifest.json` (the scripts toolset).
    pub scripts_dir: String,
    #[serde(deserialize_with = "null_as_default")]
    pub scripts: ScriptsConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    pub default_service_profile_id: Option<String>,
    #[serde(deserialize_with = "null_as_default")]
    pub default_profile_settings: ProfileSettingsConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub service_profiles: Vec<ServiceProfileConfig>,
}

impl Default for HearthConfig {
    fn default() -> Self {
        Self {
            database_url: "sqlite://data/hearth.db".to_owned(),
            database_max_connections: None,
            http: HttpConfig::default(),
            queue: QueueConfig::default(),
            llm_max_concurrent_local: 1,
            llm_max_concurrent_cloud: 4,
            llm_retry: LlmRetryConfig::default(),
            llms: BTreeMap::new(),
            family: Vec::new(),
            channels: ChannelsConfig::default(),
            delivery: DeliveryConfig::default(),
            retention: RetentionConfig::default(),
            reminders: Default::default(),
            voice_notes: Default::default(),
            memory: Default::default(),
            invites: InvitesConfig::default(),
            plugins_dir: "plugins".to_owned(),
            scripts_dir: "family_scripts".to_owned(),
            scripts: ScriptsConfig::default(),
            mcp_servers: BTreeMap::new(),
            default_service_profile_id: None,
            default_profile_settings: ProfileSettingsConfig::default(),
            service_profiles: Vec::new(),
        }
    }
}

/// Connections SQLite opens to read when `database_max_connections` is unset: its writes
/// go through one connection of their own, and a family's reads need few.
pub const SQLITE_DEFAULT_CONNECTIONS: u32 = 2;
/// Connections each worker keeps to PostgreSQL when `database_max_connections` is unset:
/// every statement of a turn is a round trip, so turns of several conversations wait on
/// each other below about eight (`cargo bench --bench pipeline` on two cores: 2 gave 753
/// turns/s, 4 gave 1,085, 8 about 1,200, 12 no more).
pub const POSTGRES_DEFAULT_CONNECTIONS: u32 = 8;

impl HearthConfig {
    /// The connections to open to the database: `database_max_connections`, else the
    /// default of the database `database_url` names.
    pub fn database_connections(&self) -> u32 {
        self.database_max_connections.unwrap_or(
            if crate::storage::is_postgres_url(&self.database_url) {
                POSTGRES_DEFAULT_CONNECTIONS
            } else {
                SQLITE_DEFAULT_CONNECTIONS
            },
        )
    }
}

// Written by hand so that a PostgreSQL password in `database_url` (typically set through
// HEARTH__DATABASE_URL) never reaches a log line.
impl fmt::Debug for HearthConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("HearthConfig")
            .field("database_url", &redact_url_password(&self.database_url))
            .field("database_max_connections", &self.database_max_connections)
            .field("http", &self.http)
            .field("queue", &self.queue)
            .field("llm_max_concurrent_local", &self.llm_max_concurrent_local)
            .field("llm_max_concurrent_cloud", &self.llm_max_concurrent_cloud)
            .field("llm_retry", &self.llm_retry)
            .field("llms", &self.llms)
            .field("family", &self.family)
            .field("channels", &self.channels)
            .field("delivery", &self.delivery)
            .field("retention", &self.retention)
            .field("memory", &self.memory)
            .field("plugins_dir", &self.plugins_dir)
            .field("scripts_dir", &self.scripts_dir)
            .field("scripts", &self.scripts)
            .field("mcp_servers", &self.mcp_servers)
            .field(
                "default_service_profile_id",
                &self.default_service_profile_id,
            )
            .field("default_profile_settings", &self.default_profile_settings)
            .field("service_profiles", &self.service_profiles)
            .finish()
    }
}

/// The HTTP API (integrations, plugin callbacks, health and metrics).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    pub enabled: bool,
    pub bind: String,
    pub auth_enabled: bool,
    /// The key of the inbound API (`/inbound*`).
    pub auth_api_key_env: Option<String>,
    /// The key plugins use for the plugin API (`/api/plugins/llm/*`); unset: the plugin
    /// API is closed.
    pub plugin_api_key_env: Option<String>,
    /// The key of administration (registering plugins, and metrics with `metrics_auth`);
    /// unset: registering plugins is closed.
    pub admin_api_key_env: Option<String>,
    /// `/metrics` and the details of `/readyz` need the admin key.
    pub metrics_auth: bool,
    pub max_body_bytes: usize,
    /// An audio file sent to `POST /inbound` as `multipart/form-data` larger than this is
    /// refused (`413`); it is kept in the chat platforms' attachments folder.
    pub max_attachment_bytes: u64,
    pub reply_timeout_seconds: u64,
    /// How long a session of the web page lasts before its member signs in again.
    pub session_days: u32,
    /// The address members open the page at (`https://hearth.home.example`), for the links
    /// `hearth web-link` and set-up print; unset: `http://<bind>`. An `https://` one makes
    /// the page's cookies `Secure`.
    pub public_url: Option<String>,
    /// The reverse proxies in front of hearth (IP addresses): only their
    /// `X-Forwarded-For` (the client's address, for the sign-in and join limits) and
    /// `X-Forwarded-Proto` (HTTPS, for `Secure` cookies) are believed.
    pub trusted_proxies: Vec<String>,
}

impl HttpConfig {
    /// Where members open the page: `public_url`, else the address the running hearth
    /// serves at, else `bind`.
    pub fn page_url(&self, running_at: Option<std::net::SocketAddr>) -> String {
        match (&self.public_url, running_at) {
            (Some(url), _) => url.trim_end_matches('/').to_string(),
            (None, Some(address)) => format!("http://{address}"),
            (None, None) => format!("http://{}", self.bind),
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            bind: "127.0.0.1:8080".to_owned(),
            auth_enabled: true,
            auth_api_key_env: None,
            plugin_api_key_env: None,
            admin_api_key_env: None,
            metrics_auth: false,
            max_body_bytes: 65_536,
            max_attachment_bytes: 20 * 1024 * 1024,
            reply_timeout_seconds: 120,
            session_days: 30,
            public_url: None,
            trusted_proxies: Vec::new(),
        }
    }
}

/// The durable request queue in front of the processing services.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueConfig {
    pub max_parallel_conversations: usize,
    pub max_backlog: usize,
    pub retry_delay_seconds: u64,
    pub max_attempts: u32,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_parallel_conversations: 8,
            max_backlog: 256,
            retry_delay_seconds: 30,
            max_attempts: 5,
        }
    }
}

/// How the LLM broker retries transient backend failures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmRetryConfig {
    pub max_attempts: u32,
    pub initial_backoff_ms: u64,
    pub max_backoff_ms: u64,
    pub max_retry_after_seconds: u64,
}

impl Default for LlmRetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff_ms: 500,
            max_backoff_ms: 8_000,
            max_retry_after_seconds: 30,
        }
    }
}

/// Which wire protocol an LLM backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LlmProviderKind {
    /// The OpenAI chat-completions API, also spoken by llama.cpp, Ollama, vLLM, OpenRouter.
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
}

impl LlmProviderKind {
    const NAMES: &'static [&'static str] = &["openai", "anthropic"];

    /// The name used in the YAML file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            _ => None,
        }
    }
}

/// Which concurrency bound of the LLM broker a model counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LlmBackend {
    /// Runs on this machine; bounded by `llm_max_concurrent_local`.
    Local,
    /// A remote API; bounded by `llm_max_concurrent_cloud`.
    #[default]
    Cloud,
}

impl LlmBackend {
    const NAMES: &'static [&'static str] = &["local", "cloud"];

    /// The name used in the YAML file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Cloud => "cloud",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "local" => Some(Self::Local),
            "cloud" => Some(Self::Cloud),
            _ => None,
        }
    }
}

// The enums are read from a string by hand instead of derived: the `config` crate's own enum
// support reports a wrong name as "does not have variant constructor", while serde's
// `unknown_variant` lists the names that would have worked, which is what a user needs.
macro_rules! named_enum_serde {
    ($enum_type:ty) => {
        impl Serialize for $enum_type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $enum_type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = String::deserialize(deserializer)?;
                Self::from_name(&name).ok_or_else(|| D::Error::unknown_variant(&name, Self::NAMES))
            }
        }

        impl fmt::Display for $enum_type {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(self.as_str())
            }
        }
    };
}

named_enum_serde!(LlmProviderKind);
named_enum_serde!(LlmBackend);
// `transcription.rs` reads `LlmKind` the same way.
pub(super) use named_enum_serde;

/// One named LLM; profiles refer to it by its key in `llms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmModelConfig {
    /// `chat` (the default), `transcription` or `embedding`.
    #[serde(default)]
    pub kind: super::transcription::LlmKind,
    pub provider: LlmProviderKind,
    pub base_url: String,
    pub model: String,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub backend: LlmBackend,
    #[serde(default = "default_llm_timeout_seconds")]
    pub timeout_seconds: u64,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub cost_per_million_input_tokens: f64,
    #[serde(default)]
    pub cost_per_million_output_tokens: f64,
    /// The model can read images (the operator says so): photos are shown to it, not
    /// just described.
    #[serde(default)]
    pub vision: bool,
    /// What a minute of audio costs on a `transcription` entry (in the unit of the token
    /// costs, usually USD).
    #[serde(default)]
    pub cost_per_audio_minute: f64,
}

impl LlmModelConfig {
    /// Whether the entry answers chat completions (`kind: chat`).
    pub fn is_chat(&self) -> bool {
        self.kind == super::transcription::LlmKind::Chat
    }
}

fn default_llm_timeout_seconds() -> u64 {
    60
}

pub use crate::ids::FamilyRole;

/// A person allowed to talk to the bot, with their identity on each channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyMember {
    pub id: crate::ids::MemberId,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub telegram_user_id: Option<i64>,
    #[serde(default)]
    pub matrix_user_id: Option<String>,
    /// What intents' constraints and policy rules speak about; `parent` unless set.
    #[serde(default)]
    pub role: FamilyRole,
    /// The member's IANA time zone: every time they see or say is in it. Unset: the zone of
    /// the profile they talk to (`processing_config.timezone`).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// Joining the family by invite code (`/invite`, `/join` in chat).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InvitesConfig {
    /// A stranger writing to hearth in their own chat is told, once a day at most, to ask
    /// the family for an invite code (off: strangers get nothing at all).
    pub tell_strangers: bool,
}

/// How long the chat platforms' messages are tried before hearth gives up on them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeliveryConfig {
    /// A message the platform still refuses after this many hours is given up (logged
    /// and counted in `/metrics` as `hearth_outbox_undelivered_total`).
    pub max_age_hours: u64,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self { max_age_hours: 24 }
    }
}

/// How long what hearth keeps only for a while is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Conversation history, and the intents engine's finished plans.
    pub history_days: u64,
    /// Telemetry events and LLM-call records (tokens, latency, cost).
    pub telemetry_days: u64,
    /// Downloaded photos and documents.
    pub attachments_days: u64,
    /// Answered and failed inbox messages; also settled reminder occurrences and, once
    /// none of theirs is left, schedules that finished or were cancelled.
    pub answered_inbox_days: u64,
    /// Delivered (and given-up) outbox rows.
    pub delivered_outbox_days: u64,
    /// How often pruning runs.
    pub interval_seconds: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            history_days: 365,
            telemetry_days: 90,
            attachments_days: 30,
            answered_inbox_days: 30,
            delivered_outbox_days: 7,
            interval_seconds: 3600,
        }
    }
}

/// How the family's scripts run and how long a workflow is remembered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptsConfig {
    /// A member's script workflow left alone this long is forgotten.
    pub state_ttl_hours: u64,
    /// A script without its own `timeout_seconds` is killed after this long.
    pub default_timeout_seconds: u64,
    /// Of a script's standard output (and, separately, its error output), at most this
    /// much is kept; the rest is read and dropped.
    pub max_output_bytes: u64,
}

impl Default for ScriptsConfig {
    fn default() -> Self {
        Self {
            state_ttl_hours: 24,
            default_timeout_seconds: 60,
            max_output_bytes: 64 * 1024,
        }
    }
}

/// The chat platforms; each is off unless enabled.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelsConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub telegram: TelegramConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub matrix: MatrixConfig,
}

/// The Telegram bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    pub enabled: bool,
    pub token_env: Option<String>,
    /// The Bot API's base url (a local Bot API server, tests).
    pub api_url: String,
    pub mode: TelegramMode,
    /// How long one `getUpdates` long poll waits for updates (1–50).
    pub poll_timeout_seconds: u64,
    /// Webhook mode: the public https url Telegram posts updates to; hearth serves its
    /// path on the HTTP API's listener.
    pub webhook_url: Option<String>,
    /// Webhook mode: the variable holding the secret Telegram sends with every update.
    pub webhook_secret_env: Option<String>,
    /// Photos, documents, voice notes and audio files larger than this are not downloaded
    /// (the Bot API's own limit is 20 MB).
    pub max_attachment_bytes: u64,
    /// Where downloaded attachments are kept, one folder per message.
    pub attachments_dir: String,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            token_env: None,
            api_url: "https://api.telegram.org".to_owned(),
            mode: TelegramMode::Polling,
            poll_timeout_seconds: 30,
            webhook_url: None,
            webhook_secret_env: None,
            max_attachment_bytes: 20 * 1024 * 1024,
            attachments_dir: "data/attachments".to_owned(),
        }
    }
}

/// How the bot receives updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TelegramMode {
    /// `getUpdates` long polling: works behind NAT, needs nothing public.
    #[default]
    Polling,
    /// Telegram posts updates to `webhook_url`.
    Webhook,
}

/// The Matrix account the bot logs in as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MatrixConfig {
    pub enabled: bool,
    pub homeserver_url: Option<String>,
    pub user_id: Option<String>,
    pub password_env: Option<String>,
    pub access_token_env: Option<String>,
    /// The session, the sync position and the end-to-end encryption keys live here.
    pub store_path: String,
    /// The variable holding the passphrase the store is encrypted with.
    pub store_passphrase_env: Option<String>,
    /// The variable holding a recovery key: the bot's cross-signing identity and key
    /// backup are restored from it at start-up.
    pub recovery_key_env: Option<String>,
    /// The device name other members see.
    pub device_name: String,
    /// Images, files and audio larger than this are not downloaded.
    pub max_attachment_bytes: u64,
    /// Where downloaded attachments are kept, one folder per message.
    pub attachments_dir: String,
}

impl Default for MatrixConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            homeserver_url: None,
            user_id: None,
            password_env: None,
            access_token_env: None,
            store_path: "data/matrix".to_owned(),
            store_passphrase_env: None,
            recovery_key_env: None,
            device_name: "hearth".to_owned(),
            max_attachment_bytes: 20 * 1024 * 1024,
            attachments_dir: "data/attachments".to_owned(),
        }
    }
}

/// An MCP server: a `command` to start (stdio) or a `url` to reach (streamable HTTP).
///
/// Secrets follow the `*_env` rule: `env_from_env` and `headers_env` name hearth's environment
/// variables, and loading the configuration reads them into `resolved_env` and
/// `resolved_headers`, which are never read from the file and print as `***`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    pub command: Option<String>,
    #[serde(deserialize_with = "null_as_default")]
    pub args: Vec<String>,
    /// Stdio: variables set as written in the server's environment.
    #[serde(deserialize_with = "null_as_default")]
    pub env: BTreeMap<String, String>,
    /// Stdio: variable in the server's environment → hearth's variable to read its value from.
    #[serde(deserialize_with = "null_as_default")]
    pub env_from_env: BTreeMap<String, String>,
    pub url: Option<String>,
    /// Streamable HTTP: headers sent as written with every request.
    #[serde(deserialize_with = "null_as_default")]
    pub headers: BTreeMap<String, String>,
    /// Streamable HTTP: header name → hearth's variable to read its value from.
    #[serde(deserialize_with = "null_as_default")]
    pub headers_env: BTreeMap<String, String>,
    /// Starting or reaching the server, `initialize` and listing its tools must finish
    /// within this (default 20 s).
    pub init_timeout_seconds: Option<u64>,
    /// One tool call must answer within this (default 60 s; the clock stops while the
    /// member is asked the server's question).
    pub call_timeout_seconds: Option<u64>,
    /// The values of `env_from_env`, by the server's variable name; set by loading.
    #[serde(skip)]
    pub resolved_env: BTreeMap<String, Secret>,
    /// The values of `headers_env`, by header name; set by loading.
    #[serde(skip)]
    pub resolved_headers: BTreeMap<String, Secret>,
}

/// `default_profile_settings` as written: merged into every profile before it is typed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileSettingsConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub processing_config: Mapping,
    #[serde(deserialize_with = "null_as_default")]
    pub tools_config: Mapping,
}

/// One entry of `service_profiles` as written; see `ResolvedProfile` for the merged result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceProfileConfig {
    pub id: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub slash_commands: Vec<String>,
    #[serde(default)]
    pub confirm_slash_commands: bool,
    #[serde(default)]
    pub processing_config: Option<Mapping>,
    #[serde(default)]
    pub tools_config: Option<Mapping>,
}
