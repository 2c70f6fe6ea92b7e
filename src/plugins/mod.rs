//! hearth's plugins: their manifests and presets, the catalog of known plugins, and the
//! parameter resolver that decides, before a plugin runs, whether every value is there and
//! certain (seed 000; DESIGN.md "Plugins"). Everything here is pure apart from reading the
//! plugin files; calling a plugin (inline, HTTP, command) and the `route_to_plugin` tool live
//! with the tools.
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
//! - `parameter_value`: fitting values to parameter types; `yaml_file`: key paths, lines and
//!   problems of the YAML files.

pub mod catalog;
pub mod llm_schema;
pub mod manifest;
mod manifest_document;
mod parameter_value;
pub mod plugin_config;
pub mod resolution_text;
pub mod resolver;
mod yaml_file;

#[cfg(test)]
mod catalog_tests;
#[cfg(test)]
mod manifest_tests;
#[cfg(test)]
mod resolver_tests;

pub use catalog::{
    CatalogEntry, CatalogError, ConfigLookupError, PluginCatalog, PluginLoadError, PluginOrigin,
    RegisterError, Registration,
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
pub use yaml_file::{KeyPath, KeySegment, PluginFileProblem};
