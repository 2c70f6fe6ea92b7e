//! The configuration a test runs hearth with, built as a typed `HearthConfig` and written
//! with serde, never as YAML text: [`TestConfig::new`] is the usual test family and
//! models; methods add members' accounts, channels and profiles; [`TestConfig::with`]
//! changes anything else in the typed value. [`TestConfig::write`] writes `hearth.yaml`
//! into the test's folder, for `Hearth::start_from` (in process) or `Hearth::spawn`
//! (the real binary).
//!
//! A profile's `processing_config` and `tools_config` are mappings in the file's own shape
//! (each profile layer is typed when hearth merges the layers): [`processing`] and
//! [`tools`] build them from keys and values.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hearth::config::{
    FamilyMember, FamilyRole, HearthConfig, HttpConfig, LlmBackend, LlmModelConfig,
    LlmProviderKind, LlmRetryConfig, Mapping, MatrixConfig, McpServerConfig, ProfileSettingsConfig,
    QueueConfig, ServiceProfileConfig, TelegramConfig,
};
use serde_yaml::Value;

/// A configuration for one test, typed.
#[derive(Clone)]
pub struct TestConfig {
    pub config: HearthConfig,
}

impl TestConfig {
    /// SQLite in `folder`, HTTP on a free loopback port with the three test keys (from
    /// `test_env`), models `main` and `backup` on the scripted server at `llm_base_url`,
    /// family alice and bob, profiles `default_assistant` and `focused_assistant` (`/focus`):
    /// what `write_config` writes.
    pub fn new(folder: &Path, llm_base_url: &str) -> TestConfig {
        let model = |name: &str| LlmModelConfig {
            kind: Default::default(),
            provider: LlmProviderKind::OpenAi,
            base_url: llm_base_url.to_owned(),
            model: name.to_owned(),
            api_key_env: None,
            backend: LlmBackend::Cloud,
            timeout_seconds: 5,
            max_tokens: None,
            cost_per_million_input_tokens: 0.0,
            cost_per_million_output_tokens: 0.0,
            vision: false,
            cost_per_audio_minute: 0.0,
        };
        let config = HearthConfig {
            database_url: format!("sqlite://{}", folder.join("hearth.db").display()),
            http: HttpConfig {
                bind: "127.0.0.1:0".to_owned(),
                auth_enabled: true,
                auth_api_key_env: Some("TEST_HEARTH_API_KEY".to_owned()),
                plugin_api_key_env: Some("TEST_HEARTH_PLUGIN_KEY".to_owned()),
                admin_api_key_env: Some("TEST_HEARTH_ADMIN_KEY".to_owned()),
                reply_timeout_seconds: 10,
                ..HttpConfig::default()
            },
            queue: QueueConfig {
                max_parallel_conversations: 8,
                max_backlog: 256,
                retry_delay_seconds: 1,
                max_attempts: 4,
            },
            llm_retry: LlmRetryConfig {
                max_attempts: 3,
                initial_backoff_ms: 10,
                max_backoff_ms: 50,
                max_retry_after_seconds: 5,
            },
            llms: BTreeMap::from([
                ("main".to_owned(), model("scripted-main")),
                ("backup".to_owned(), model("scripted-backup")),
            ]),
            family: vec![member("alice", "Alice"), member("bob", "Bob")],
            default_service_profile_id: Some("default_assistant".to_owned()),
            default_profile_settings: ProfileSettingsConfig {
                processing_config: processing(&[
                    (
                        "prompts",
                        entries(&[(
                            "system_prompt",
                            "You are a test assistant. Current time is {current_time}.".into(),
                        )]),
                    ),
                    ("timezone", "Europe/Berlin".into()),
                    ("max_history_messages", 10.into()),
                    ("history_max_age_hours", 24.into()),
                    ("llm_model", "main".into()),
                ]),
                tools_config: tools(&["profile_get", "profile_update"], &[]),
            },
            service_profiles: vec![
                profile("default_assistant"),
                ServiceProfileConfig {
                    slash_commands: vec!["/focus".to_owned()],
                    processing_config: Some(processing(&[
                        (
                            "prompts",
                            entries(&[("system_prompt", "You are focused.".into())]),
                        ),
                        ("max_history_messages", 2.into()),
                    ])),
                    ..profile("focused_assistant")
                },
            ],
            ..HearthConfig::default()
        };
        TestConfig { config }
    }

    /// Any other change to the typed configuration.
    pub fn with(mut self, change: impl FnOnce(&mut HearthConfig)) -> TestConfig {
        change(&mut self.config);
        self
    }

    /// The family member `id` (added when missing), changed by `change`.
    pub fn member(mut self, id: &str, change: impl FnOnce(&mut FamilyMember)) -> TestConfig {
        let position = match self
            .config
            .family
            .iter()
            .position(|member| member.id.as_str() == id)
        {
            Some(position) => position,
            None => {
                self.config.family.push(FamilyMember {
                    name: None,
                    ..member(id, "")
                });
                self.config.family.len() - 1
            }
        };
        change(&mut self.config.family[position]);
        self
    }

    /// Member `id` (added when missing) called `name`.
    pub fn named(self, id: &str, name: &str) -> TestConfig {
        self.member(id, |member| member.name = Some(name.to_owned()))
    }

    /// Member `id`'s Telegram account.
    pub fn on_telegram(self, id: &str, telegram_user_id: i64) -> TestConfig {
        self.member(id, |member| {
            member.telegram_user_id = Some(telegram_user_id)
        })
    }

    /// Member `id` a parent.
    pub fn parent(self, id: &str) -> TestConfig {
        self.member(id, |member| member.role = FamilyRole::Parent)
    }

    /// Member `id` a child.
    pub fn child(self, id: &str) -> TestConfig {
        self.member(id, |member| member.role = FamilyRole::Child)
    }

    /// The local tools every profile enables unless it says otherwise, as
    /// `enable_local_tools` lists them (`"profile_get, schedule_reminder"`; the tool-list
    /// constants of `tool_lists.rs` and `reminders.rs` are written so).
    pub fn default_tools(mut self, names: &str) -> TestConfig {
        self.config
            .default_profile_settings
            .tools_config
            .insert("enable_local_tools".into(), list(&self::names(names)));
        self
    }

    /// Member `id`'s Matrix account.
    pub fn on_matrix(self, id: &str, matrix_user_id: &str) -> TestConfig {
        self.member(id, |member| {
            member.matrix_user_id = Some(matrix_user_id.to_owned())
        })
    }

    /// The tools every profile asks the member about before they run, unless it says
    /// otherwise (`confirm_tools` of `default_profile_settings`).
    pub fn default_confirm(mut self, names: &[&str]) -> TestConfig {
        self.config
            .default_profile_settings
            .tools_config
            .insert("confirm_tools".into(), list(names));
        self
    }

    /// The MCP servers whose tools every profile has unless it says otherwise.
    pub fn default_mcp_servers(mut self, ids: &[&str]) -> TestConfig {
        self.config
            .default_profile_settings
            .tools_config
            .insert("enable_mcp_server_ids".into(), list(ids));
        self
    }

    /// A `processing_config` key every profile has unless it says otherwise.
    pub fn default_processing(mut self, key: &str, value: Value) -> TestConfig {
        self.config
            .default_profile_settings
            .processing_config
            .insert(key.into(), value);
        self
    }

    /// Telegram long-polling the Bot API at `api_url` with the token in
    /// `TEST_TELEGRAM_TOKEN`, files kept in `folder/attachments` up to 4 KiB.
    pub fn telegram(mut self, api_url: &str, folder: &Path) -> TestConfig {
        self.config.channels.telegram = TelegramConfig {
            enabled: true,
            token_env: Some("TEST_TELEGRAM_TOKEN".to_owned()),
            api_url: api_url.to_owned(),
            poll_timeout_seconds: 1,
            attachments_dir: folder.join("attachments").display().to_string(),
            max_attachment_bytes: 4096,
            ..TelegramConfig::default()
        };
        self
    }

    /// Matrix as `bot_user_id` on the homeserver at `homeserver_url`, the password in
    /// `TEST_MATRIX_PASSWORD`, the store in `folder/matrix` (its passphrase in
    /// `TEST_MATRIX_STORE_PASSPHRASE`), files kept in `folder/attachments`.
    pub fn matrix(mut self, homeserver_url: &str, bot_user_id: &str, folder: &Path) -> TestConfig {
        self.config.channels.matrix = MatrixConfig {
            enabled: true,
            homeserver_url: Some(homeserver_url.to_owned()),
            user_id: Some(bot_user_id.to_owned()),
            password_env: Some("TEST_MATRIX_PASSWORD".to_owned()),
            store_path: folder.join("matrix").display().to_string(),
            store_passphrase_env: Some("TEST_MATRIX_STORE_PASSPHRASE".to_owned()),
            attachments_dir: folder.join("attachments").display().to_string(),
            ..MatrixConfig::default()
        };
        self
    }

    /// The database at `database_url` (a PostgreSQL one) instead of the SQLite file.
    pub fn database(mut self, database_url: &str) -> TestConfig {
        self.config.database_url = database_url.to_owned();
        self
    }

    /// The MCP server `id` started as `command` with `args`; `change` sets anything else.
    pub fn mcp_server(
        mut self,
        id: &str,
        command: &str,
        args: &[String],
        change: impl FnOnce(&mut McpServerConfig),
    ) -> TestConfig {
        let mut server = McpServerConfig {
            command: Some(command.to_owned()),
            args: args.to_vec(),
            ..McpServerConfig::default()
        };
        change(&mut server);
        self.config.mcp_servers.insert(id.to_owned(), server);
        self
    }

    /// One more service profile, after the others.
    pub fn profile(mut self, profile: ServiceProfileConfig) -> TestConfig {
        self.config.service_profiles.push(profile);
        self
    }

    /// More service profiles, after the others.
    pub fn profiles(mut self, profiles: &[ServiceProfileConfig]) -> TestConfig {
        self.config.service_profiles.extend_from_slice(profiles);
        self
    }

    /// Writes the configuration as `folder/hearth.yaml`.
    pub fn write(&self, folder: &Path) -> PathBuf {
        let path = folder.join("hearth.yaml");
        let text = serde_yaml::to_string(&self.config).expect("the test config serializes");
        std::fs::write(&path, text).expect("test config written");
        path
    }
}

/// A family member with a name and nothing else.
pub fn member(id: &str, name: &str) -> FamilyMember {
    FamilyMember {
        id: id.parse().expect("a member id"),
        name: Some(name.to_owned()).filter(|name| !name.is_empty()),
        telegram_user_id: None,
        matrix_user_id: None,
        role: FamilyRole::default(),
        timezone: None,
    }
}

/// A family member with a name and a Telegram account (`name` empty: none).
pub fn telegram_member(id: &str, name: &str, telegram_user_id: i64) -> FamilyMember {
    let mut member = member(id, name);
    member.telegram_user_id = Some(telegram_user_id);
    member
}

/// A service profile with only its id: everything else from `default_profile_settings`.
pub fn profile(id: &str) -> ServiceProfileConfig {
    ServiceProfileConfig {
        id: id.to_owned(),
        description: None,
        slash_commands: Vec::new(),
        confirm_slash_commands: false,
        processing_config: None,
        tools_config: None,
    }
}

/// A `processing_config` layer of these keys.
pub fn processing(keys: &[(&str, Value)]) -> Mapping {
    keys.iter()
        .map(|(key, value)| (Value::from(*key), value.clone()))
        .collect()
}

/// A mapping of these keys, as a value (`prompts`, `calendar_config`).
pub fn entries(keys: &[(&str, Value)]) -> Value {
    Value::Mapping(processing(keys))
}

/// A `tools_config` layer: these local tools, of which `confirm` need the member's approval.
pub fn tools(local: &[&str], confirm: &[&str]) -> Mapping {
    let mut layer = Mapping::new();
    layer.insert("enable_local_tools".into(), list(local));
    if !confirm.is_empty() {
        layer.insert("confirm_tools".into(), list(confirm));
    }
    layer
}

/// A list of names, as a value.
fn list(names: &[&str]) -> Value {
    Value::Sequence(names.iter().map(|&name| name.into()).collect())
}

/// A service profile said by its parts: `profile("secure").command("/secure")
/// .local_tools(&["profile_get", "profile_update"]).confirm(&["profile_update"])`.
pub trait ProfileParts {
    /// One more slash command routing to the profile.
    fn command(self, command: &str) -> Self;
    /// What the profile is for (delegation and `/help` show it).
    fn description(self, text: &str) -> Self;
    /// Its slash commands ask the member before the turn runs (`confirm_slash_commands`).
    fn confirming_commands(self) -> Self;
    /// Keys of its `processing_config`, added to (or replacing) those it has.
    fn processing(self, keys: &[(&str, Value)]) -> Self;
    /// Its local tools (`enable_local_tools`), in place of the default ones.
    fn local_tools(self, names: &[&str]) -> Self;
    /// The tools that ask the member before they run (`confirm_tools`; empty: none, not the
    /// default ones).
    fn confirm(self, names: &[&str]) -> Self;
    /// The MCP servers whose tools it has (`enable_mcp_server_ids`).
    fn mcp_servers(self, ids: &[&str]) -> Self;
}

impl ProfileParts for ServiceProfileConfig {
    fn command(mut self, command: &str) -> Self {
        self.slash_commands.push(command.to_owned());
        self
    }

    fn description(mut self, text: &str) -> Self {
        self.description = Some(text.to_owned());
        self
    }

    fn confirming_commands(mut self) -> Self {
        self.confirm_slash_commands = true;
        self
    }

    fn processing(mut self, keys: &[(&str, Value)]) -> Self {
        self.processing_config
            .get_or_insert_with(Mapping::new)
            .extend(processing(keys));
        self
    }

    fn local_tools(mut self, names: &[&str]) -> Self {
        self.tools_config
            .get_or_insert_with(Mapping::new)
            .insert("enable_local_tools".into(), list(names));
        self
    }

    fn confirm(mut self, names: &[&str]) -> Self {
        self.tools_config
            .get_or_insert_with(Mapping::new)
            .insert("confirm_tools".into(), list(names));
        self
    }

    fn mcp_servers(mut self, ids: &[&str]) -> Self {
        self.tools_config
            .get_or_insert_with(Mapping::new)
            .insert("enable_mcp_server_ids".into(), list(ids));
        self
    }
}

/// Names written as `enable_local_tools` lists them (`"profile_get, schedule_reminder"`;
/// the tool-list constants are written so), one by one.
pub fn names(list: &str) -> Vec<&str> {
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect()
}
