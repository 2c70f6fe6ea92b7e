//! Configuration: `hearth.yaml` typed, overridden from the environment, its service profiles
//! merged, everything validated at start-up, and the secrets it names read from the
//! environment.
//!
//! The entry points are [`load`] (the real process environment) and [`load_with_env`] (an
//! explicit one, for tests). Either returns a [`LoadedConfig`] that the rest of the program can
//! trust, or a [`ConfigError`] naming the file, the key path and what is wrong; validation
//! reports every problem it finds at once, one per line, so a broken file is fixed in one pass.
//!
//! - `types.rs`: the file's shape and defaults;
//! - `load.rs`: reading, `HEARTH__*` overrides, typing with key paths;
//! - `yaml_syntax.rs`: what the text must be before it is typed (YAML, one document, a
//!   mapping, keys that are text, numbers or booleans), each mistake at its line and column;
//! - `profiles/`: profile merging and the resolved profile types (`mod.rs`), the checks of
//!   profile settings at the key where each is written (`checks.rs`);
//! - `validate.rs`: the other checks;
//! - `env_secrets.rs`: the secrets the configuration names, read from the environment;
//! - `mcp_names.rs`: how an MCP server's tools are named to the model, and so which server
//!   ids can be configured;
//! - `reminders.rs`: `reminders` and each member's `family[].timezone`;
//! - `transcription.rs`: what an `llms` entry is for (`kind`), voice notes' entry and
//!   `voice_notes`;
//! - `memory.rs`: `memory` and the `kind: embedding` entries;
//! - `calendar.rs`: a profile's `calendar_config` (its CalDAV account and subscriptions);
//! - `built_parts.rs`: config that needs a part this binary was built without;
//! - `local_model.rs`: every profile pointed at the small local model (`--local-model`, or no
//!   `llms` configured);
//! - `confirm_tools.rs`: how `confirm_tools` entries name tools, and how a call is matched;
//! - `secret.rs`: the type that keeps a secret inside the configuration out of `Debug`;
//! - `yaml_file.rs`: the YAML files configuration names (plugins', intents files) read with
//!   every problem's file, line and key path;
//! - `error.rs`: the error and problem types.

mod built_parts;
mod calendar;
mod confirm_tools;
mod env_secrets;
mod error;
mod load;
mod local_model;
mod mcp_names;
mod memory;
mod profiles;
mod reminders;
mod secret;
mod transcription;
mod types;
mod validate;
pub(crate) mod yaml_file;
mod yaml_syntax;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use calendar::{CaldavConfig, CalendarConfig, subscription_url};
pub use confirm_tools::{ApprovalName, ApprovalSubject, describe_asking_tools};
pub use error::{ConfigError, ConfigProblem};
pub use local_model::{LOCAL_MODEL_LLM, LocalModelUse};
pub use mcp_names::{
    BadServerId, MAX_SERVER_ID_LEN, MAX_TOOL_NAME_LEN, TOOL_NAME_SEPARATOR, check_server_id,
    namespaced_tool_name, tool_server_id,
};
pub use memory::MemoryConfig;
pub use profiles::{
    DEFAULT_INTENTS_FILE, DelegationLevel, Engine, IMPLICIT_PROFILE_ID, PluginApprovalName,
    ProcessingConfig, Recall, ResolvedProfile, ToolsConfig,
};
pub use reminders::RemindersConfig;
pub use secret::Secret;
pub use serde_yaml::Mapping;
pub use transcription::{LlmKind, VoiceNotesConfig};
pub use types::{
    ChannelsConfig, DeliveryConfig, FamilyMember, FamilyRole, HearthConfig, HttpConfig,
    InvitesConfig, LlmBackend, LlmModelConfig, LlmProviderKind, LlmRetryConfig, MatrixConfig,
    McpServerConfig, ProfileSettingsConfig, QueueConfig, RetentionConfig, ScriptsConfig,
    ServiceProfileConfig, TelegramConfig, TelegramMode,
};
pub use yaml_file::{KeyPath, KeySegment, PluginFileProblem};

/// A validated configuration, ready to build the actors from.
#[derive(Clone)]
pub struct LoadedConfig {
    /// The file it was read from.
    pub file: PathBuf,
    /// The file's content with the environment overrides applied.
    pub config: HearthConfig,
    /// Every service profile, merged, in `service_profiles` order (or the one implicit profile).
    pub profiles: Vec<ResolvedProfile>,
    /// The profile that answers messages that do not ask for one.
    pub default_profile_id: String,
    /// Environment variable name → value, for every `*_env` key this configuration needs.
    pub secrets: BTreeMap<String, String>,
    /// The `confirm_tools` entries that name plugins, checked once the plugins are known.
    pub plugin_approval_names: Vec<PluginApprovalName>,
    /// Set when the small local model answers every profile (its `llms` entry is
    /// [`LOCAL_MODEL_LLM`]): where it is installed, and whether it was asked for.
    pub local_model: Option<LocalModelUse>,
}

impl LoadedConfig {
    /// The resolved profile with this id.
    pub fn profile(&self, id: &str) -> Option<&ResolvedProfile> {
        self.profiles.iter().find(|profile| profile.id == id)
    }

    /// The value of a secret by its variable name, if the configuration needed it.
    pub fn secret(&self, var_name: &str) -> Option<&str> {
        self.secrets.get(var_name).map(String::as_str)
    }

    /// The family member with this id.
    pub fn family_member(&self, id: &crate::ids::MemberId) -> Option<&FamilyMember> {
        self.config.family.iter().find(|member| member.id == *id)
    }

    /// Refuses `confirm_tools` entries naming a plugin or capability that does not exist:
    /// `capabilities_of` gives a plugin's capability ids, `None` for an unknown plugin.
    /// Every such entry is reported at its key path.
    pub fn check_plugin_approval_names(
        &self,
        capabilities_of: impl Fn(&str) -> Option<Vec<String>>,
        known_plugins: &[String],
    ) -> Result<(), ConfigError> {
        let mut problems = error::Problems::default();
        for PluginApprovalName { key_path, name } in &self.plugin_approval_names {
            let plugin = name.plugin().unwrap_or_default();
            let Some(capabilities) = capabilities_of(plugin) else {
                problems.push(
                    key_path.clone(),
                    format!(
                        "{name} names plugin {plugin:?}, which is neither in {} nor registered \
                         (plugins: {})",
                        self.config.plugins_dir,
                        if known_plugins.is_empty() {
                            "none".to_owned()
                        } else {
                            known_plugins.join(", ")
                        }
                    ),
                );
                continue;
            };
            if let ApprovalName::PluginCapability { capability, .. } = name
                && !capabilities.contains(capability)
            {
                problems.push(
                    key_path.clone(),
                    format!(
                        "{name} names capability {capability:?}, which plugin {plugin:?} does \
                         not have (its capabilities: {})",
                        capabilities.join(", ")
                    ),
                );
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(ConfigError::Invalid {
            file: self.file.clone(),
            problems: problems.into_vec(),
        })
    }
}

// Written by hand so that logging a loaded configuration can never print a secret's value.
impl fmt::Debug for LoadedConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LoadedConfig")
            .field("file", &self.file)
            .field("config", &self.config)
            .field("profiles", &self.profiles)
            .field("default_profile_id", &self.default_profile_id)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("local_model", &self.local_model)
            .finish()
    }
}

/// What the loader needs to know about the rest of the program.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// Names of the local tools this build provides; `enable_local_tools` and the
    /// un-namespaced entries of `confirm_tools` must name one of them.
    pub known_local_tools: &'a [&'a str],
    /// Every profile answers with the small local model (`--local-model`), whatever `llms`
    /// says; without it, only a configuration with no `llms` does.
    pub local_model: bool,
}

/// Reads the file, applies `HEARTH__A__B` overrides from the real process environment,
/// resolves the profiles and validates everything; secrets come from the same environment.
pub fn load(path: &Path, options: &LoadOptions) -> Result<LoadedConfig, ConfigError> {
    // Variables that are not unicode cannot be a key override or a secret this program can use.
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    load_with_env(path, &env, options)
}

/// Same as [`load`], with an explicit environment used both for the `HEARTH__*` overrides and
/// for the secret lookups.
pub fn load_with_env(
    path: &Path,
    env: &BTreeMap<String, String>,
    options: &LoadOptions,
) -> Result<LoadedConfig, ConfigError> {
    let raw = load::read_config(path, env)?;
    let mut config = raw.config;

    let mut problems = error::Problems::default();
    let local_model = local_model::apply(&mut config, options.local_model, env, &mut problems);
    let resolution = profiles::resolve_profiles(&config, options.known_local_tools, &mut problems);
    validate::check_settings(&config, &mut problems);
    let secrets = env_secrets::collect_secrets(&config, &resolution.profiles, env, &mut problems);
    env_secrets::resolve_mcp_secrets(&mut config, &secrets, &mut problems);

    if !problems.is_empty() {
        return Err(ConfigError::Invalid {
            file: path.to_path_buf(),
            problems: load::with_override_sources(problems.into_vec(), &raw.overrides),
        });
    }

    tracing::info!(
        file = %path.display(),
        profiles = resolution.profiles.len(),
        default_profile = %resolution.default_profile_id,
        overrides = raw.overrides.len(),
        "configuration loaded"
    );
    Ok(LoadedConfig {
        file: path.to_path_buf(),
        config,
        profiles: resolution.profiles,
        default_profile_id: resolution.default_profile_id,
        secrets,
        plugin_approval_names: resolution.plugin_approval_names,
        local_model,
    })
}

/// The YAML printed by `hearth check-config`: the default profile id and every resolved
/// profile. Secrets are not part of a profile, so they cannot appear.
pub fn render_resolved_profiles(loaded: &LoadedConfig) -> String {
    #[derive(Serialize)]
    struct ResolvedView<'a> {
        default_profile_id: &'a str,
        profiles: &'a [ResolvedProfile],
    }
    let view = ResolvedView {
        default_profile_id: &loaded.default_profile_id,
        profiles: &loaded.profiles,
    };
    // Plain strings, numbers, lists and maps always serialize; the fallback keeps the command
    // from panicking if that ever changes.
    serde_yaml::to_string(&view)
        .unwrap_or_else(|error| format!("# cannot render the resolved profiles: {error}\n"))
}
