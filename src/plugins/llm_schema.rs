//! What the model is told about a capability's parameters (seed 000 §3.4): a JSON schema for
//! the `parameters` of `route_to_plugin`. Parameters that the config fills directly are left
//! out — the model never sees those values and need not think about them — and a parameter
//! is `required` only when nothing but the user can give it.

use serde_json::{Map, Value, json};

use super::manifest::{Capability, ParameterSpec, ParameterType};
use super::parameter_value::{Fitted, fit_to_type};
use super::plugin_config::{CapabilityDefaults, PluginConfig};

/// The parameters that the config fills without asking: listed in `use_default_directly_for`
/// (or all, with `use_defaults_directly`) and with a preset of the right type in the config.
pub fn directly_filled_parameters<'capability>(
    capability: &'capability Capability,
    config: &PluginConfig,
) -> Vec<&'capability str> {
    let defaults = config.for_capability(&capability.id);
    capability
        .parameters
        .iter()
        .filter(|parameter| {
            defaults.is_used_directly(&parameter.name) && has_usable_preset(parameter, &defaults)
        })
        .map(|parameter| parameter.name.as_str())
        .collect()
}

/// The JSON schema (an object schema) of the `parameters` the model may pass for `capability`.
pub fn capability_parameters_schema(capability: &Capability, config: &PluginConfig) -> Value {
    let defaults = config.for_capability(&capability.id);
    let filled_directly = directly_filled_parameters(capability, config);
    let mut properties = Map::new();
    let mut required = Vec::new();
    for parameter in &capability.parameters {
        if filled_directly.contains(&parameter.name.as_str()) {
            continue;
        }
        let from_profile = parameter.profile_key.is_some();
        let from_config = parameter.config_key.is_some() || has_usable_preset(parameter, &defaults);
        if parameter.required && !from_profile && !from_config {
            required.push(Value::String(parameter.name.clone()));
        }
        properties.insert(
            parameter.name.clone(),
            property_schema(parameter, from_profile, from_config),
        );
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn has_usable_preset(parameter: &ParameterSpec, defaults: &CapabilityDefaults) -> bool {
    defaults
        .values_for(parameter)
        .iter()
        .any(|preset| matches!(fit_to_type(&parameter.kind, preset.value), Fitted::Value(_)))
}

fn property_schema(parameter: &ParameterSpec, from_profile: bool, from_config: bool) -> Value {
    let mut property = Map::new();
    let json_type = match &parameter.kind {
        ParameterType::Enum(values) => {
            property.insert("enum".to_owned(), json!(values));
            "string"
        }
        other => other.type_name(),
    };
    property.insert("type".to_owned(), json!(json_type));
    let mut description = parameter.description.trim().to_owned();
    // Tells the model it may leave the value out instead of inventing one.
    let fallback = match (from_profile, from_config) {
        (true, _) => {
            Some("If the user did not say it, leave it out: it is taken from their profile.")
        }
        (false, true) => Some(
            "If the user did not say it, leave it out: it is taken from the plugin's settings.",
        ),
        (false, false) => None,
    };
    if let Some(fallback) = fallback {
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str(fallback);
    }
    if !description.is_empty() {
        property.insert("description".to_owned(), json!(description));
    }
    Value::Object(property)
}
