//! The checks that belong to service profiles, each reported at the key path where the value
//! is written: a layer's timezone, model names, tool names, `confirm_tools` entries and MCP
//! server ids (`LayerChecks`, run on the defaults and on each profile's own layer before they
//! merge), the default model, profile ids and slash commands.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::{
    DEFAULT_LLM_MODEL, DEFAULTS_PATH, PluginApprovalName, ProcessingLayer, ResolvedProfile,
    ToolsLayer,
};
use crate::config::HearthConfig;
use crate::config::confirm_tools::ApprovalName;
use crate::config::error::Problems;

/// The checks of one layer's values, at the key path where each value is written.
pub(super) struct LayerChecks<'a> {
    config: &'a HearthConfig,
    known_local_tools: &'a [&'a str],
    /// Plugin names met in `confirm_tools`, checked once the plugins are known.
    plugin_approval_names: RefCell<Vec<PluginApprovalName>>,
}

impl<'a> LayerChecks<'a> {
    pub(super) fn new(config: &'a HearthConfig, known_local_tools: &'a [&'a str]) -> Self {
        LayerChecks {
            config,
            known_local_tools,
            plugin_approval_names: RefCell::new(Vec::new()),
        }
    }

    /// The plugin names met in `confirm_tools`, for `LoadedConfig::check_plugin_approval_names`.
    pub(super) fn into_plugin_approval_names(self) -> Vec<PluginApprovalName> {
        self.plugin_approval_names.into_inner()
    }

    pub(super) fn processing(
        &self,
        layer: &ProcessingLayer,
        owner_path: &str,
        problems: &mut Problems,
    ) {
        let path = format!("{owner_path}.processing_config");
        if let Some(timezone) = &layer.timezone
            && timezone.parse::<chrono_tz::Tz>().is_err()
        {
            problems.push(
                format!("{path}.timezone"),
                format!("unknown timezone {timezone:?} (expected an IANA name such as \"Europe/Berlin\" or \"UTC\")"),
            );
        }
        for (key, model) in [
            ("llm_model", &layer.llm_model),
            ("llm_fallback_model", &layer.llm_fallback_model),
        ] {
            let Some(model) = model else { continue };
            if !self.config.llms.contains_key(model) {
                problems.push(format!("{path}.{key}"), self.unknown_model_message(model));
            } else if let Some(why) = self.config.not_a_chat_model(model) {
                problems.push(format!("{path}.{key}"), why);
            }
        }
        if layer
            .intents_file
            .as_deref()
            .is_some_and(|file| file.trim().is_empty())
        {
            problems.push(
                format!("{path}.intents_file"),
                "must name a file, found an empty string (leave it out for config/intents.yaml)",
            );
        }
        if let Some(calendar) = &layer.calendar_config {
            calendar.check(&format!("{path}.calendar_config"), problems);
        }
        if layer.max_tool_iterations == Some(0) {
            problems.push(
                format!("{path}.max_tool_iterations"),
                "must be at least 1, found 0",
            );
        }
        if layer.confirmation_timeout_seconds == Some(0) {
            problems.push(
                format!("{path}.confirmation_timeout_seconds"),
                "must be at least 1, found 0 (every confirmation would expire at once)",
            );
        }
    }

    fn unknown_model_message(&self, model: &str) -> String {
        let names: Vec<&str> = self.config.llms.keys().map(String::as_str).collect();
        if names.is_empty() {
            format!("{model:?} names no entry of llms, and llms is empty")
        } else {
            format!(
                "{model:?} names no entry of llms (defined: {})",
                names.join(", ")
            )
        }
    }

    pub(super) fn tools(&self, layer: &ToolsLayer, owner_path: &str, problems: &mut Problems) {
        let path = format!("{owner_path}.tools_config");
        let known = self.known_local_tools.join(", ");
        for (index, tool) in layer.enable_local_tools.iter().flatten().enumerate() {
            if !self.known_local_tools.contains(&tool.as_str()) {
                problems.push(
                    format!("{path}.enable_local_tools[{index}]"),
                    format!("unknown local tool {tool:?} (known: {known})"),
                );
            }
        }
        for (index, entry) in layer.confirm_tools.iter().flatten().enumerate() {
            let key_path = format!("{path}.confirm_tools[{index}]");
            match ApprovalName::parse(entry) {
                Err(why) => problems.push(key_path, why),
                Ok(ApprovalName::Local(tool)) => {
                    if !self.known_local_tools.contains(&tool.as_str()) {
                        problems.push(
                            key_path,
                            format!(
                                "unknown local tool {tool:?} (known: {known}; MCP tools are written \
                                 <server>__<tool> or <server>__*, plugin capabilities \
                                 <plugin>.<capability> or <plugin>.*)"
                            ),
                        );
                    }
                }
                Ok(name @ (ApprovalName::McpTool { .. } | ApprovalName::McpServer(_))) => {
                    let server = name.mcp_server().unwrap_or_default();
                    if !self.config.mcp_servers.contains_key(server) {
                        problems.push(
                            key_path,
                            format!(
                                "{entry:?} names MCP server {server:?}, which is no entry of \
                                 mcp_servers (defined: {})",
                                self.defined_mcp_servers()
                            ),
                        );
                    }
                }
                Ok(name) => self
                    .plugin_approval_names
                    .borrow_mut()
                    .push(PluginApprovalName { key_path, name }),
            }
        }
        for (index, server_id) in layer.enable_mcp_server_ids.iter().flatten().enumerate() {
            if !self.config.mcp_servers.contains_key(server_id) {
                problems.push(
                    format!("{path}.enable_mcp_server_ids[{index}]"),
                    format!(
                        "{server_id:?} names no entry of mcp_servers (defined: {})",
                        self.defined_mcp_servers()
                    ),
                );
            }
        }
    }

    fn defined_mcp_servers(&self) -> String {
        let defined: Vec<&str> = self.config.mcp_servers.keys().map(String::as_str).collect();
        if defined.is_empty() {
            "none".to_owned()
        } else {
            defined.join(", ")
        }
    }
}

/// The built-in model name `main` applies when no layer names a model; if there is no such
/// LLM, the fix belongs in the defaults, so the problem is reported there, once.
pub(super) fn check_default_model_exists(
    config: &HearthConfig,
    default_processing: &ProcessingLayer,
    profiles: &[ResolvedProfile],
    problems: &mut Problems,
) {
    if default_processing.llm_model.is_some() {
        return;
    }
    let users: Vec<&str> = profiles
        .iter()
        .filter(|profile| profile.processing.llm_model == DEFAULT_LLM_MODEL)
        .map(|profile| profile.id.as_str())
        .collect();
    if users.is_empty() {
        return;
    }
    if config.llms.contains_key(DEFAULT_LLM_MODEL) {
        // `main` answers the profiles that name no model: it must be a chat model.
        if let Some(why) = config.not_a_chat_model(DEFAULT_LLM_MODEL) {
            problems.push(
                format!("{DEFAULTS_PATH}.processing_config.llm_model"),
                format!(
                    "not set, so profile(s) {} use {DEFAULT_LLM_MODEL:?}, but {why}",
                    users.join(", ")
                ),
            );
        }
        return;
    }
    let defined: Vec<&str> = config.llms.keys().map(String::as_str).collect();
    problems.push(
        format!("{DEFAULTS_PATH}.processing_config.llm_model"),
        format!(
            "not set, so profile(s) {} use {DEFAULT_LLM_MODEL:?}, which names no entry of llms (defined: {})",
            users.join(", "),
            if defined.is_empty() {
                "none".to_owned()
            } else {
                defined.join(", ")
            }
        ),
    );
}

pub(super) fn check_profile_ids(config: &HearthConfig, problems: &mut Problems) {
    let mut first_index_of_id: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, profile) in config.service_profiles.iter().enumerate() {
        let path = format!("service_profiles[{index}].id");
        if profile.id.trim().is_empty() {
            problems.push(path, "a profile id must not be empty");
            continue;
        }
        // A delegation's sub-conversation is keyed `…/<profile id>/<delegation id>`.
        if let Err(error) = crate::ids::check_target_profile(&profile.id) {
            problems.push(path.clone(), error.to_string());
        }
        if let Some(first_index) = first_index_of_id.get(profile.id.as_str()) {
            problems.push(
                path,
                format!(
                    "duplicate profile id {:?} (also service_profiles[{first_index}])",
                    profile.id
                ),
            );
        } else {
            first_index_of_id.insert(&profile.id, index);
        }
    }
}

/// Slash commands route a message to one profile, so each must be well-formed and unique.
pub(super) fn check_slash_commands(config: &HearthConfig, problems: &mut Problems) {
    let mut owner_of_command: BTreeMap<&str, &str> = BTreeMap::new();
    for (index, profile) in config.service_profiles.iter().enumerate() {
        let mut seen_in_profile = BTreeSet::new();
        for (command_index, command) in profile.slash_commands.iter().enumerate() {
            let path = format!("service_profiles[{index}].slash_commands[{command_index}]");
            let name = command.strip_prefix('/');
            if name.is_none_or(str::is_empty) {
                problems.push(
                    path,
                    format!("{command:?} is not a slash command (expected \"/\" and a name, e.g. \"/focus\")"),
                );
                continue;
            }
            if command.chars().any(char::is_whitespace) {
                problems.push(
                    path,
                    format!("slash command {command:?} must not contain whitespace"),
                );
                continue;
            }
            if !seen_in_profile.insert(command.as_str()) {
                continue;
            }
            match owner_of_command.get(command.as_str()) {
                Some(owner) => problems.push(
                    path,
                    format!(
                        "slash command {command:?} is already used by profile {owner:?}; a command must lead to one profile"
                    ),
                ),
                None => {
                    owner_of_command.insert(command, &profile.id);
                }
            }
        }
    }
}
