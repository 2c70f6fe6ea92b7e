//! The `route_to_plugin` tool: how a profile's model reaches the plugins. Its description
//! lists every plugin and capability with the parameters the model should pass (those the
//! config fills directly left out, seed 000 §3.4); the calls go to `PluginRuntime`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::llm_schema::capability_parameters_schema;
use super::plugin_config::PluginConfig;
use super::runtime::{PluginRuntime, ROUTE_TO_PLUGIN};
use crate::config::ApprovalSubject;
use crate::llm::ToolSpec;
use crate::ports::Decision;
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub struct RouteToPluginTool {
    runtime: Arc<PluginRuntime>,
    /// The profile's model, which also post-processes plugin answers.
    llm_name: String,
}

impl RouteToPluginTool {
    pub fn new(runtime: Arc<PluginRuntime>, llm_name: String) -> Self {
        RouteToPluginTool { runtime, llm_name }
    }

    async fn describe(&self) -> (String, Vec<String>) {
        let mut lines = Vec::new();
        let mut ids = Vec::new();
        for entry in self.runtime.catalog.list() {
            let manifest = &entry.manifest;
            // A broken config.yml is reported when the plugin is called; the listing uses
            // no presets meanwhile.
            let config = self
                .runtime
                .catalog
                .read_config(&manifest.id)
                .await
                .unwrap_or_else(|_| PluginConfig::default());
            ids.push(manifest.id.clone());
            lines.push(format!(
                "- {}: {}",
                manifest.id,
                manifest.description.trim()
            ));
            for capability in &manifest.capabilities {
                let schema = capability_parameters_schema(capability, &config);
                lines.push(format!(
                    "  - capability {}: {} Parameters: {}",
                    capability.id,
                    capability.description.trim(),
                    compact(&schema)
                ));
            }
        }
        (lines.join("\n"), ids)
    }
}

/// A parameters schema as a short line: `item (string, required): What to add; ...`.
fn compact(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return "none".into();
    };
    if properties.is_empty() {
        return "none".into();
    }
    properties
        .iter()
        .map(|(name, property)| {
            let mut kind = property["type"].as_str().unwrap_or("string").to_string();
            if let Some(values) = property["enum"].as_array() {
                let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                kind = format!("one of {}", values.join("|"));
            }
            let need = if required.contains(&name.as_str()) {
                ", required"
            } else {
                ""
            };
            let description = property["description"].as_str().unwrap_or_default();
            format!("{name} ({kind}{need}): {description}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn invalid(message: &str) -> ToolError {
    ToolError::InvalidArguments {
        tool: ROUTE_TO_PLUGIN.into(),
        message: message.into(),
    }
}

#[async_trait]
impl ToolsProvider for RouteToPluginTool {
    async fn tools(&self) -> Vec<ToolSpec> {
        let (listing, ids) = self.describe().await;
        if ids.is_empty() {
            return Vec::new();
        }
        vec![ToolSpec {
            name: ROUTE_TO_PLUGIN.into(),
            description: format!(
                "Run a plugin for the family member. Pass what the member said; hearth fills \
                 the rest from their profile and the plugin's settings and tells you what is \
                 missing or needs their confirmation. Plugins:\n{listing}"
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "plugin_id": {"type": "string", "enum": ids},
                    "capability_id": {"type": "string",
                        "description": "the capability; may be left out when the plugin has one"},
                    "parameters": {"type": "object",
                        "description": "the capability's parameters, as listed"}
                },
                "required": ["plugin_id"],
                "additionalProperties": false
            }),
        }]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        if name != ROUTE_TO_PLUGIN {
            return Err(ToolError::UnknownTool(name.to_string()));
        }
        let plugin_id = arguments
            .get("plugin_id")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("missing string argument `plugin_id`"))?;
        let capability_id = arguments.get("capability_id").and_then(Value::as_str);
        let parameters = match arguments.get("parameters") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(parameters)) => parameters.clone(),
            Some(other) => {
                return Err(invalid(&format!(
                    "`parameters` must be an object of parameter values, not {other}"
                )));
            }
        };
        self.runtime
            .route(
                plugin_id,
                capability_id,
                &parameters,
                context,
                &self.llm_name,
            )
            .await
    }

    /// A plugin call is named `<plugin>.<capability>` in `confirm_tools`; a call that names
    /// no capability of a plugin with one is that capability's.
    async fn approval_subject(&self, name: &str, arguments: &Value) -> ApprovalSubject {
        if name != ROUTE_TO_PLUGIN {
            return ApprovalSubject::Unknown(name.to_string());
        }
        let plugin = arguments
            .get("plugin_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let capability = match arguments.get("capability_id").and_then(Value::as_str) {
            Some(capability) => capability.to_string(),
            None => self
                .runtime
                .catalog
                .manifest(&plugin)
                .and_then(|manifest| match manifest.capabilities.as_slice() {
                    [only] => Some(only.id.clone()),
                    _ => None,
                })
                .unwrap_or_default(),
        };
        ApprovalSubject::Plugin {
            tool: ROUTE_TO_PLUGIN.to_string(),
            plugin,
            capability,
        }
    }

    async fn resume(
        &self,
        name: &str,
        state: &Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        if name != ROUTE_TO_PLUGIN {
            return Err(ToolError::NotResumable(name.to_string()));
        }
        self.runtime
            .resume(state, decision, context, &self.llm_name)
            .await
    }
}
