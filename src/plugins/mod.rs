//! hearth's plugins: their manifests and presets, the catalog of known plugins, and the
//! parameter resolver that decides, before a plugin runs, whether every value is there and
//! certain (seed 000; DESIGN.md "Plugins"); calling plugins and the `route_to_plugin` tool.
//! Everything but `invoke`, `runtime` and the shopping list is pure apart from reading the
//! plugin files.
//!
//! Codemap:
//! - [`manifest`]: `plugins/<id>/plugin.yaml` as [`PluginManifest`] (also the JSON of the
//!   registration API); `manifest_document` is its written form and its rules.
//! - [`plugin_config`]: `plugins/<id>/config.yml`, presets and "use directly", re-read per call.
//! - [`resolver`]: message → profile → config resolution with sources, and its outcome
//!   (`Ready`, `Missing`, `Uncertain`, `Invalid`); [`resolution_text`] renders it for the
//!   model, the member (confirmation prompt, question) and telemetry (redacted).
//! - [`llm_schema`]: the JSON schema of a capability's parameters for the model.
//! - [`catalog`]: [`PluginCatalog`], folder plugins plus registered ones.
//! - `parameter_value`: fitting values to parameter types; key paths, lines and problems of
//!   the YAML files are read by `config::yaml_file`.
//! - [`invoke`]: calling a plugin (`inline`, `http`, `command`) with its timeout.
//! - `runtime`: [`PluginRuntime`], a call from resolution to answer: asking, confirming
//!   (a suspended turn), the pending call of the member's next message, post-processing,
//!   telemetry.
//! - `route_tool`: [`RouteToPluginTool`], the `route_to_plugin` tool of a profile.
//! - `shopping_list`: the built-in family shopping list.

pub mod catalog;
pub mod invoke;
pub mod llm_schema;
pub mod manifest;
mod manifest_document;
mod parameter_value;
pub mod plugin_config;
pub mod resolution_text;
pub mod resolver;
mod route_tool;
mod runtime;
mod shopping_list;

#[cfg(test)]
mod catalog_tests;
#[cfg(test)]
mod manifest_tests;
#[cfg(test)]
mod resolver_tests;

pub use catalog::{
    CatalogEntry, CatalogError, ConfigLookupError, MAX_REGISTERED_PLUGINS, PluginCatalog,
    PluginLoadError, PluginOrigin, RegisterError, Registration, restore_registered,
};
pub use invoke::{
    InlinePlugin, PluginAnswer, PluginCallError, PluginCallRequest, PluginInvoker, PluginUser,
};
pub use llm_schema::{capability_parameters_schema, directly_filled_parameters};
pub use manifest::{
    Capability, DEFAULT_TIMEOUT_SECONDS, MANIFEST_FILE_NAME, ManifestError, ParameterSpec,
    ParameterType, PluginKind, PluginManifest, load_manifest_file, parse_manifest_yaml,
};
pub use manifest_document::MAX_TIMEOUT_SECONDS;
pub use parameter_value::{display_value, expected_value};
pub use plugin_config::{
    CapabilityConfig, CapabilityDefaults, ConfigValue, PLUGIN_CONFIG_FILE_NAME, PluginConfig,
    PluginConfigError, parse_plugin_config_yaml, read_plugin_config,
};
pub use resolution_text::REDACTED;
pub use resolver::{
    ArgumentProblem, IgnoredValue, MissingParameter, Resolution, ResolutionOutcome, ResolvedCall,
    ResolvedValue, UncertainValue, ValueSource, resolve_parameters,
};
pub use route_tool::RouteToPluginTool;
pub use runtime::{PluginRuntime, ROUTE_TO_PLUGIN};
pub use shopping_list::{SHOPPING_LIST_PLUGIN, ShoppingListPlugin};
