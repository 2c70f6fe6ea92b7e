//! Service profiles: merging `default_profile_settings` into each entry of `service_profiles`
//! (seed 004 §3.3 as amended by DESIGN.md) and the typed result; the checks that belong to
//! profiles (ids, slash commands, model names, tool names, timezones) are `checks.rs`.
//!
//! Merge rules, bottom to top: the built-in defaults, then `default_profile_settings`, then the
//! profile. `processing_config` and `tools_config` merge key by key; `prompts`, the one nested
//! map, merges key by key too; lists and scalars replace. So a profile that narrows
//! `enable_local_tools` keeps the default `confirm_tools` unless it sets its own, and a profile
//! can never lose a confirmation by leaving a key out. A key written with no value (`~`) counts
//! as not written and inherits, for the same reason.
//!
//! Each layer is typed on its own before merging, so an unknown or mistyped key is reported
//! once, at the place it is written, not once for every profile that inherits it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_yaml::Mapping;

mod checks;

use checks::{LayerChecks, check_default_model_exists, check_profile_ids, check_slash_commands};

use super::calendar::{CalendarConfig, CalendarLayer};
use super::confirm_tools::ApprovalName;
use super::error::Problems;
use super::load::{describe_serde_message, display_key_path};
use super::types::HearthConfig;
use super::yaml_file::KeyPath;

/// The profile used when `service_profiles` is empty.
pub const IMPLICIT_PROFILE_ID: &str = "default_assistant";

const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful family assistant. Current time is {current_time}.";
const DEFAULT_LLM_MODEL: &str = "main";
const DEFAULTS_PATH: &str = "default_profile_settings";
/// Where an `intents` profile finds its intents when `intents_file` is not set.
pub const DEFAULT_INTENTS_FILE: &str = "config/intents.yaml";

/// How another profile may delegate a task to this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelegationLevel {
    /// Delegation to this profile is refused.
    Blocked,
    /// Delegation always asks the user first. The default: nothing is delegated silently
    /// unless the configuration says so.
    #[default]
    Confirm,
    /// Delegation asks only when the delegating call requests confirmation.
    Unrestricted,
}

/// How a profile turns a message into a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The LLM tool loop.
    #[default]
    Agent,
    /// Seed 003's classifier → planner → policy → executor pipeline.
    Intents,
}

/// How family memory reaches a profile's model (`processing_config.recall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recall {
    /// The model searches memory itself: `search_memory` is offered where the profile's
    /// `enable_local_tools` names it, like every other tool. The default.
    #[default]
    Tool,
    /// As `tool`, and the best few snippets memory holds for each message go to the model
    /// with the message.
    Auto,
    /// Never: no `search_memory` (even where `enable_local_tools` names it), no snippets.
    Off,
}

/// A service profile with every setting decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedProfile {
    pub id: String,
    pub description: String,
    pub slash_commands: Vec<String>,
    pub confirm_slash_commands: bool,
    pub processing: ProcessingConfig,
    pub tools: ToolsConfig,
}

/// The merged `processing_config` of one profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessingConfig {
    pub prompts: BTreeMap<String, String>,
    #[serde(serialize_with = "serialize_timezone")]
    pub timezone: chrono_tz::Tz,
    pub max_history_messages: usize,
    pub history_max_age_hours: u64,
    pub llm_model: String,
    pub llm_fallback_model: Option<String>,
    pub max_tool_iterations: u32,
    pub delegation_security_level: DelegationLevel,
    pub confirmation_timeout_seconds: u64,
    pub engine: Engine,
    /// The intents registry of an `intents` profile (`config/intents.yaml` unless set),
    /// relative to the working directory like `plugins_dir`.
    pub intents_file: String,
    /// The calendars the calendar tools of this profile search and write.
    #[serde(rename = "calendar_config")]
    pub calendar: CalendarConfig,
    /// Give the model the titles of the notes the member may read each turn (bounded).
    pub include_notes_in_prompt: bool,
    /// How family memory reaches the model.
    pub recall: Recall,
}

/// The merged `tools_config` of one profile.
///
/// With nothing set anywhere, a profile has no tools: a tool is available only where the
/// configuration names it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ToolsConfig {
    pub enable_local_tools: Vec<String>,
    pub enable_mcp_server_ids: Vec<String>,
    pub confirm_tools: Vec<String>,
}

impl ProcessingConfig {
    /// When a question asked at `now_ms` stops waiting (`confirmation_timeout_seconds`).
    pub fn answer_deadline_ms(&self, now_ms: i64) -> i64 {
        let timeout_ms = i64::try_from(self.confirmation_timeout_seconds)
            .unwrap_or(i64::MAX / 1000)
            .saturating_mul(1000);
        now_ms.saturating_add(timeout_ms)
    }
}

fn serialize_timezone<S: Serializer>(
    timezone: &chrono_tz::Tz,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(timezone.name())
}

/// One layer of `processing_config` as written: `None` is "not set here, inherit".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessingLayer {
    prompts: Option<BTreeMap<String, String>>,
    timezone: Option<String>,
    max_history_messages: Option<usize>,
    history_max_age_hours: Option<u64>,
    llm_model: Option<String>,
    llm_fallback_model: Option<String>,
    max_tool_iterations: Option<u32>,
    delegation_security_level: Option<DelegationLevel>,
    confirmation_timeout_seconds: Option<u64>,
    engine: Option<Engine>,
    intents_file: Option<String>,
    calendar_config: Option<CalendarLayer>,
    include_notes_in_prompt: Option<bool>,
    recall: Option<Recall>,
}

impl ProcessingLayer {
    /// This layer with `upper` written over it: maps merge, everything else replaces.
    fn overlaid_with(&self, upper: &Self) -> Self {
        let prompts = match (&self.prompts, &upper.prompts) {
            (Some(lower), Some(upper)) => {
                let mut merged = lower.clone();
                merged.extend(
                    upper
                        .iter()
                        .map(|(key, value)| (key.clone(), value.clone())),
                );
                Some(merged)
            }
            (lower, upper) => upper.clone().or_else(|| lower.clone()),
        };
        Self {
            prompts,
            timezone: upper.timezone.clone().or_else(|| self.timezone.clone()),
            max_history_messages: upper.max_history_messages.or(self.max_history_messages),
            history_max_age_hours: upper.history_max_age_hours.or(self.history_max_age_hours),
            llm_model: upper.llm_model.clone().or_else(|| self.llm_model.clone()),
            llm_fallback_model: upper
                .llm_fallback_model
                .clone()
                .or_else(|| self.llm_fallback_model.clone()),
            max_tool_iterations: upper.max_tool_iterations.or(self.max_tool_iterations),
            delegation_security_level: upper
                .delegation_security_level
                .or(self.delegation_security_level),
            confirmation_timeout_seconds: upper
                .confirmation_timeout_seconds
                .or(self.confirmation_timeout_seconds),
            engine: upper.engine.or(self.engine),
            intents_file: upper
                .intents_file
                .clone()
                .or_else(|| self.intents_file.clone()),
            calendar_config: match (&self.calendar_config, &upper.calendar_config) {
                (Some(lower), Some(upper)) => Some(lower.overlaid_with(upper)),
                (lower, upper) => upper.clone().or_else(|| lower.clone()),
            },
            include_notes_in_prompt: upper
                .include_notes_in_prompt
                .or(self.include_notes_in_prompt),
            recall: upper.recall.or(self.recall),
        }
    }

    /// Fills what no layer set with the built-in defaults. An unparsable timezone has already
    /// been reported where it is written; UTC stands in so the other checks can go on.
    fn finish(self) -> ProcessingConfig {
        let mut prompts =
            BTreeMap::from([("system_prompt".to_owned(), DEFAULT_SYSTEM_PROMPT.to_owned())]);
        prompts.extend(self.prompts.unwrap_or_default());
        ProcessingConfig {
            prompts,
            timezone: self
                .timezone
                .and_then(|name| name.parse().ok())
                .unwrap_or(chrono_tz::UTC),
            max_history_messages: self.max_history_messages.unwrap_or(10),
            history_max_age_hours: self.history_max_age_hours.unwrap_or(24),
            llm_model: self
                .llm_model
                .unwrap_or_else(|| DEFAULT_LLM_MODEL.to_owned()),
            llm_fallback_model: self.llm_fallback_model,
            max_tool_iterations: self.max_tool_iterations.unwrap_or(5),
            delegation_security_level: self.delegation_security_level.unwrap_or_default(),
            confirmation_timeout_seconds: self.confirmation_timeout_seconds.unwrap_or(300),
            engine: self.engine.unwrap_or_default(),
            intents_file: self
                .intents_file
                .unwrap_or_else(|| DEFAULT_INTENTS_FILE.to_owned()),
            calendar: self.calendar_config.unwrap_or_default().finish(),
            include_notes_in_prompt: self.include_notes_in_prompt.unwrap_or(false),
            recall: self.recall.unwrap_or_default(),
        }
    }
}

/// One layer of `tools_config` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsLayer {
    enable_local_tools: Option<Vec<String>>,
    enable_mcp_server_ids: Option<Vec<String>>,
    confirm_tools: Option<Vec<String>>,
}

impl ToolsLayer {
    fn overlaid_with(&self, upper: &Self) -> Self {
        Self {
            enable_local_tools: upper
                .enable_local_tools
                .clone()
                .or_else(|| self.enable_local_tools.clone()),
            enable_mcp_server_ids: upper
                .enable_mcp_server_ids
                .clone()
                .or_else(|| self.enable_mcp_server_ids.clone()),
            confirm_tools: upper
                .confirm_tools
                .clone()
                .or_else(|| self.confirm_tools.clone()),
        }
    }

    fn finish(self) -> ToolsConfig {
        ToolsConfig {
            enable_local_tools: self.enable_local_tools.unwrap_or_default(),
            enable_mcp_server_ids: self.enable_mcp_server_ids.unwrap_or_default(),
            confirm_tools: self.confirm_tools.unwrap_or_default(),
        }
    }
}

/// The profiles of a configuration and which one answers when none is asked for.
pub(crate) struct ProfileResolution {
    pub(crate) profiles: Vec<ResolvedProfile>,
    pub(crate) default_profile_id: String,
    pub(crate) plugin_approval_names: Vec<PluginApprovalName>,
}

/// A `confirm_tools` entry naming a plugin (`plugin.capability`, `plugin.*`), where it is
/// written: plugins are known only once their folder (and the registered ones) is read, so
/// these are checked then (`LoadedConfig::check_plugin_approval_names`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginApprovalName {
    pub key_path: String,
    pub name: ApprovalName,
}

/// Merges every profile, and records every problem with the profile settings in `problems`.
pub(crate) fn resolve_profiles(
    config: &HearthConfig,
    known_local_tools: &[&str],
    problems: &mut Problems,
) -> ProfileResolution {
    let checks = LayerChecks::new(config, known_local_tools);
    let defaults = &config.default_profile_settings;
    let default_processing: ProcessingLayer = typed_layer(
        &defaults.processing_config,
        &format!("{DEFAULTS_PATH}.processing_config"),
        problems,
    );
    let default_tools: ToolsLayer = typed_layer(
        &defaults.tools_config,
        &format!("{DEFAULTS_PATH}.tools_config"),
        problems,
    );
    checks.processing(&default_processing, DEFAULTS_PATH, problems);
    checks.tools(&default_tools, DEFAULTS_PATH, problems);

    let mut profiles = Vec::new();
    if config.service_profiles.is_empty() {
        profiles.push(ResolvedProfile {
            id: IMPLICIT_PROFILE_ID.to_owned(),
            description: "The default assistant (service_profiles is empty).".to_owned(),
            slash_commands: Vec::new(),
            confirm_slash_commands: false,
            processing: default_processing.clone().finish(),
            tools: default_tools.clone().finish(),
        });
    }
    for (index, profile) in config.service_profiles.iter().enumerate() {
        let profile_path = format!("service_profiles[{index}]");
        let processing: ProcessingLayer = profile
            .processing_config
            .as_ref()
            .map_or_else(ProcessingLayer::default, |raw| {
                typed_layer(raw, &format!("{profile_path}.processing_config"), problems)
            });
        let tools: ToolsLayer = profile
            .tools_config
            .as_ref()
            .map_or_else(ToolsLayer::default, |raw| {
                typed_layer(raw, &format!("{profile_path}.tools_config"), problems)
            });
        checks.processing(&processing, &profile_path, problems);
        checks.tools(&tools, &profile_path, problems);
        profiles.push(ResolvedProfile {
            id: profile.id.clone(),
            description: profile.description.clone().unwrap_or_default(),
            slash_commands: profile.slash_commands.clone(),
            confirm_slash_commands: profile.confirm_slash_commands,
            processing: default_processing.overlaid_with(&processing).finish(),
            tools: default_tools.overlaid_with(&tools).finish(),
        });
    }

    check_default_model_exists(config, &default_processing, &profiles, problems);
    check_profile_ids(config, problems);
    check_slash_commands(config, problems);
    let default_profile_id = choose_default_profile(config, &profiles, problems);
    ProfileResolution {
        profiles,
        default_profile_id,
        plugin_approval_names: checks.into_plugin_approval_names(),
    }
}

/// A layer of profile settings: a typed mapping in which every key is optional.
trait Layer: for<'de> Deserialize<'de> + Default {
    fn overlaid_with(&self, upper: &Self) -> Self;
}

impl Layer for ProcessingLayer {
    fn overlaid_with(&self, upper: &Self) -> Self {
        ProcessingLayer::overlaid_with(self, upper)
    }
}

impl Layer for ToolsLayer {
    fn overlaid_with(&self, upper: &Self) -> Self {
        ToolsLayer::overlaid_with(self, upper)
    }
}

/// Types one raw layer key by key, so that every unknown or mistyped key of the layer is
/// reported (at its own key path), not just the first; the keys that do type still count, so
/// the remaining checks see as much of the configuration as possible.
fn typed_layer<T: Layer>(raw: &Mapping, layer_path: &str, problems: &mut Problems) -> T {
    let mut entries: Vec<(&serde_yaml::Value, &serde_yaml::Value)> = raw.iter().collect();
    // The `config` crate hands mappings over in hash order; sorting keeps reports stable.
    entries.sort_by_key(|(key, _)| yaml_key_text(key));
    let mut layer = T::default();
    for (key, value) in entries {
        let single_entry = Mapping::from_iter([(key.clone(), value.clone())]);
        match serde_path_to_error::deserialize::<_, T>(serde_yaml::Value::Mapping(single_entry)) {
            Ok(part) => layer = layer.overlaid_with(&part),
            Err(error) => {
                let inner_path = display_key_path(error.path());
                let inner_path = if inner_path == "(top level)" {
                    KeyPath::root().key(yaml_key_text(key)).to_string()
                } else {
                    inner_path
                };
                problems.push(
                    format!("{layer_path}.{inner_path}"),
                    describe_serde_message(&error.inner().to_string()),
                );
            }
        }
    }
    layer
}

fn yaml_key_text(key: &serde_yaml::Value) -> String {
    match key {
        serde_yaml::Value::String(text) => text.clone(),
        other => serde_yaml::to_string(other)
            .map(|text| text.trim_end().to_owned())
            .unwrap_or_default(),
    }
}

fn choose_default_profile(
    config: &HearthConfig,
    profiles: &[ResolvedProfile],
    problems: &mut Problems,
) -> String {
    let first_id = profiles.first().map_or_else(
        || IMPLICIT_PROFILE_ID.to_owned(),
        |profile| profile.id.clone(),
    );
    let Some(wanted) = &config.default_service_profile_id else {
        return first_id;
    };
    if profiles.iter().any(|profile| &profile.id == wanted) {
        return wanted.clone();
    }
    let ids: Vec<&str> = profiles.iter().map(|profile| profile.id.as_str()).collect();
    problems.push(
        "default_service_profile_id",
        format!("{wanted:?} names no profile (profiles: {})", ids.join(", ")),
    );
    first_id
}
