//! A plugin's preset values, `plugins/<id>/config.yml` (seed 000 §3.3): `default_parameters`,
//! whether values taken from them are used without asking (`use_defaults_directly`,
//! `use_default_directly_for`), and the same per capability. Owns the typed file, reading it
//! (again at every plugin call, so an edit takes effect without a restart) and merging a
//! capability's section over the plugin-wide one.
//!
//! ```yaml
//! default_parameters: { address: "123 Main St", payment_method: card }
//! use_default_directly_for: [payment_method]
//! capabilities:
//!   place_order:
//!     default_parameters: { address: "1 Shop Rd" }   # over the plugin-wide address
//!     use_defaults_directly: true
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::manifest::{Capability, ParameterSpec, PluginManifest};
use crate::config::yaml_file::{
    KeyPath, PluginFileProblem, ProblemLines, null_as_default, parse_yaml_document,
};

/// The file name of a plugin's config inside its folder.
pub const PLUGIN_CONFIG_FILE_NAME: &str = "config.yml";

/// The whole `config.yml`; an absent file is the default (no presets, nothing used directly).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// Optional; when written it must be the plugin's id (seed 000's example starts with it).
    #[serde(default)]
    pub id: Option<String>,
    /// A note for the people who edit the file; hearth does not read it.
    #[serde(default)]
    pub description: Option<String>,
    /// Preset values, by parameter name or by a parameter's `config_key`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub default_parameters: BTreeMap<String, Value>,
    /// Every value filled from the config is used without asking the member.
    #[serde(default, deserialize_with = "null_as_default")]
    pub use_defaults_directly: bool,
    /// These parameters, when filled from the config, are used without asking the member.
    #[serde(default, deserialize_with = "null_as_default")]
    pub use_default_directly_for: Vec<String>,
    /// Per capability id; each value here overrides the plugin-wide one.
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: BTreeMap<String, CapabilityConfig>,
}

/// One capability's section of `config.yml`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityConfig {
    #[serde(default, deserialize_with = "null_as_default")]
    pub default_parameters: BTreeMap<String, Value>,
    #[serde(default)]
    pub use_defaults_directly: Option<bool>,
    #[serde(default)]
    pub use_default_directly_for: Option<Vec<String>>,
}

/// The config as one capability sees it: its section merged over the plugin-wide values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CapabilityDefaults {
    /// Plugin-wide presets with the capability's on top, key by key.
    pub default_parameters: BTreeMap<String, Value>,
    pub use_defaults_directly: bool,
    pub use_default_directly_for: Vec<String>,
}

/// A value found in the config for a parameter, and the key it was found under.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfigValue<'config> {
    pub key: &'config str,
    pub value: &'config Value,
}

impl PluginConfig {
    /// The merged view for `capability_id`: `default_parameters` merge key by key; the
    /// capability's `use_defaults_directly` and `use_default_directly_for` replace the
    /// plugin-wide ones when written (a list replaces a list, as everywhere in hearth's config).
    pub fn for_capability(&self, capability_id: &str) -> CapabilityDefaults {
        let mut merged = CapabilityDefaults {
            default_parameters: self.default_parameters.clone(),
            use_defaults_directly: self.use_defaults_directly,
            use_default_directly_for: self.use_default_directly_for.clone(),
        };
        if let Some(section) = self.capabilities.get(capability_id) {
            merged.default_parameters.extend(
                section
                    .default_parameters
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
            if let Some(directly) = section.use_defaults_directly {
                merged.use_defaults_directly = directly;
            }
            if let Some(names) = &section.use_default_directly_for {
                merged.use_default_directly_for = names.clone();
            }
        }
        merged
    }
}

impl CapabilityDefaults {
    /// The keys the config is searched under for `parameter`, in order: its `config_key`,
    /// then its own name.
    pub fn keys_for(parameter: &ParameterSpec) -> Vec<&str> {
        let mut keys: Vec<&str> = parameter.config_key.iter().map(String::as_str).collect();
        if !keys.contains(&parameter.name.as_str()) {
            keys.push(&parameter.name);
        }
        keys
    }

    /// Every non-null preset for `parameter`, in the order of [`Self::keys_for`]; the resolver
    /// takes the first that fits the parameter's type.
    pub fn values_for<'config>(
        &'config self,
        parameter: &'config ParameterSpec,
    ) -> Vec<ConfigValue<'config>> {
        Self::keys_for(parameter)
            .into_iter()
            .filter_map(|key| {
                self.default_parameters
                    .get(key)
                    .filter(|value| !value.is_null())
                    .map(|value| ConfigValue { key, value })
            })
            .collect()
    }

    /// Whether a value of `parameter_name` that came from the config is used without asking.
    pub fn is_used_directly(&self, parameter_name: &str) -> bool {
        self.use_defaults_directly
            || self
                .use_default_directly_for
                .iter()
                .any(|name| name == parameter_name)
    }
}

/// Why a plugin's `config.yml` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginConfigError {
    #[error("{}: cannot read the plugin config: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// One problem per line as `file:line: key.path: what is wrong`.
    #[error("{}", ProblemLines { file, problems })]
    Invalid {
        file: PathBuf,
        problems: Vec<PluginFileProblem>,
    },
}

impl PluginConfigError {
    pub fn problems(&self) -> &[PluginFileProblem] {
        match self {
            Self::Read { .. } => &[],
            Self::Invalid { problems, .. } => problems,
        }
    }
}

/// Reads `<plugin_folder>/config.yml` now, blocking (loading the catalog at start-up; calls
/// read it through `PluginCatalog::read_config`), and checks it against the plugin's
/// manifest. No file is no presets.
pub fn read_plugin_config(
    plugin_folder: &Path,
    manifest: &PluginManifest,
) -> Result<PluginConfig, PluginConfigError> {
    let file = plugin_folder.join(PLUGIN_CONFIG_FILE_NAME);
    match std::fs::read_to_string(&file) {
        Ok(text) => parse_plugin_config_yaml(&text, &file, manifest),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(PluginConfig::default()),
        Err(source) => Err(PluginConfigError::Read { file, source }),
    }
}

/// Reads a plugin config from its YAML `text`; `file` names it in problems. Every key must
/// mean something to the plugin: a preset under a misspelt name would silently never be used.
pub fn parse_plugin_config_yaml(
    text: &str,
    file: &Path,
    manifest: &PluginManifest,
) -> Result<PluginConfig, PluginConfigError> {
    let invalid = |problems| PluginConfigError::Invalid {
        file: file.to_path_buf(),
        problems,
    };
    let config: PluginConfig =
        parse_yaml_document(text).map_err(|problem| invalid(vec![problem]))?;
    let problems = config_problems(&config, manifest);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(invalid(
            problems
                .into_iter()
                .map(|problem| problem.located_in(text))
                .collect(),
        ))
    }
}

fn config_problems(config: &PluginConfig, manifest: &PluginManifest) -> Vec<PluginFileProblem> {
    let root = KeyPath::root();
    let mut problems = Vec::new();
    if let Some(id) = &config.id
        && *id != manifest.id
    {
        problems.push(PluginFileProblem::new(
            root.key("id"),
            format!(
                "id {id:?} is not this plugin's id {:?}; fix it or remove the key",
                manifest.id
            ),
        ));
    }
    let every_capability: Vec<&Capability> = manifest.capabilities.iter().collect();
    check_section(
        &root,
        &config.default_parameters,
        Some(&config.use_default_directly_for),
        &every_capability,
        &format!("plugin {}", manifest.id),
        &mut problems,
    );
    for (capability_id, section) in &config.capabilities {
        let path = root.key("capabilities").key(capability_id.clone());
        let Some(capability) = manifest.capability(capability_id) else {
            let known: Vec<&str> = manifest
                .capabilities
                .iter()
                .map(|capability| capability.id.as_str())
                .collect();
            problems.push(PluginFileProblem::new(
                path,
                format!(
                    "plugin {} has no capability {capability_id:?}; its capabilities are: {}",
                    manifest.id,
                    known.join(", ")
                ),
            ));
            continue;
        };
        check_section(
            &path,
            &section.default_parameters,
            section.use_default_directly_for.as_ref(),
            &[capability],
            &format!("capability {}/{}", manifest.id, capability.id),
            &mut problems,
        );
    }
    problems
}

/// Checks that each preset key is a parameter name or a `config_key`, and each name in
/// `use_default_directly_for` a parameter, of the capabilities the section applies to.
fn check_section(
    path: &KeyPath,
    default_parameters: &BTreeMap<String, Value>,
    use_default_directly_for: Option<&Vec<String>>,
    capabilities: &[&Capability],
    owner: &str,
    problems: &mut Vec<PluginFileProblem>,
) {
    let parameter_names: BTreeSet<&str> = capabilities
        .iter()
        .flat_map(|capability| &capability.parameters)
        .map(|parameter| parameter.name.as_str())
        .collect();
    let preset_keys: BTreeSet<&str> = capabilities
        .iter()
        .flat_map(|capability| &capability.parameters)
        .flat_map(CapabilityDefaults::keys_for)
        .collect();
    let listed = |names: &BTreeSet<&str>| names.iter().copied().collect::<Vec<_>>().join(", ");
    for key in default_parameters.keys() {
        if !preset_keys.contains(key.as_str()) {
            problems.push(PluginFileProblem::new(
                path.key("default_parameters").key(key.clone()),
                format!(
                    "{key:?} is neither a parameter nor a config_key of {owner}, so it would never be used; known keys: {}",
                    listed(&preset_keys)
                ),
            ));
        }
    }
    for (index, name) in use_default_directly_for.into_iter().flatten().enumerate() {
        if !parameter_names.contains(name.as_str()) {
            problems.push(PluginFileProblem::new(
                path.key("use_default_directly_for").index(index),
                format!(
                    "{name:?} is not a parameter of {owner}; its parameters are: {}",
                    listed(&parameter_names)
                ),
            ));
        }
    }
}
