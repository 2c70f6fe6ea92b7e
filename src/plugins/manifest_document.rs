//! The written form of a plugin manifest — the YAML of `plugin.yaml` and the JSON of the
//! registration API — and the rules a manifest must follow before it becomes a
//! [`PluginManifest`]. Every rule is checked and every broken one reported with its key path,
//! so that a plugin author fixes the whole file in one go.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::manifest::{
    Capability, DEFAULT_TIMEOUT_SECONDS, ParameterSpec, ParameterType, PluginKind, PluginManifest,
};
use crate::config::yaml_file::{KeyPath, PluginFileProblem, null_as_default};

/// The longest a plugin call may be allowed to take: a member is waiting for the answer.
pub const MAX_TIMEOUT_SECONDS: u64 = 600;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestDocument {
    pub(crate) id: String,
    /// Defaults to the id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
    description: String,
    #[serde(rename = "type")]
    kind: PluginKindName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(default = "default_timeout_seconds")]
    timeout_seconds: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    capabilities: Vec<CapabilityDocument>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PluginKindName {
    Inline,
    Http,
    Command,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapabilityDocument {
    id: String,
    /// Defaults to the id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
    description: String,
    #[serde(default)]
    post_process: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    post_process_prompt: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    parameters: Vec<ParameterDocument>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ParameterDocument {
    name: String,
    /// Defaults to `string`, the type of most things a member says.
    #[serde(rename = "type", default = "default_parameter_type")]
    kind: ParameterTypeName,
    /// The choices of an `enum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    values: Option<Vec<String>>,
    #[serde(default)]
    required: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config_key: Option<String>,
    #[serde(default)]
    confirm_if_uncertain: bool,
    #[serde(default)]
    sensitive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ParameterTypeName {
    String,
    Number,
    Integer,
    Boolean,
    Enum,
}

fn default_timeout_seconds() -> u64 {
    DEFAULT_TIMEOUT_SECONDS
}

fn default_parameter_type() -> ParameterTypeName {
    ParameterTypeName::String
}

/// Plugin and capability ids: they are folder names, tool arguments and telemetry labels.
pub(crate) fn is_valid_id(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
}

/// Parameter names: keys of the JSON the model writes, which tool-calling APIs restrict.
fn is_valid_parameter_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

impl ManifestDocument {
    /// Checks every rule; the typed manifest when none is broken, otherwise each broken rule.
    pub(crate) fn into_manifest(self) -> Result<PluginManifest, Vec<PluginFileProblem>> {
        let root = KeyPath::root();
        let mut problems = Vec::new();
        let mut problem = |path: KeyPath, message: String| {
            problems.push(PluginFileProblem::new(path, message));
        };

        if !is_valid_id(&self.id) {
            problem(
                root.key("id"),
                format!(
                    "plugin id {:?} must be lowercase letters, digits and underscores",
                    self.id
                ),
            );
        } else if self.id.contains("__") {
            // `confirm_tools` reads a name with `__` as an MCP tool's.
            problem(
                root.key("id"),
                format!(
                    "plugin id {:?} must not contain \"__\" (confirm_tools reads such a name as \
                     an MCP tool's)",
                    self.id
                ),
            );
        }
        if self.description.trim().is_empty() {
            problem(
                root.key("description"),
                "must say what the plugin is for: the model chooses plugins by it".to_owned(),
            );
        }
        let kind = match self.kind {
            PluginKindName::Inline => PluginKind::Inline,
            PluginKindName::Http => PluginKind::Http {
                url: self.url.clone().unwrap_or_default(),
            },
            PluginKindName::Command => PluginKind::Command {
                command: self.command.clone().unwrap_or_default(),
            },
        };
        match &kind {
            PluginKind::Http { .. } if self.url.is_none() => problem(
                root.key("type"),
                "a plugin of type http needs `url:`, where hearth posts each call".to_owned(),
            ),
            PluginKind::Http { url } => {
                if let Some(message) = url_problem(url) {
                    problem(root.key("url"), message);
                }
            }
            PluginKind::Command { .. } if self.command.is_none() => problem(
                root.key("type"),
                "a plugin of type command needs `command:`, the program and its arguments"
                    .to_owned(),
            ),
            PluginKind::Command { command } => {
                if command
                    .first()
                    .is_none_or(|program| program.trim().is_empty())
                {
                    problem(
                        root.key("command"),
                        "must start with the program to run, e.g. [\"./buy.sh\"]".to_owned(),
                    );
                }
            }
            PluginKind::Inline => {}
        }
        if self.url.is_some() && self.kind != PluginKindName::Http {
            problem(
                root.key("url"),
                "only a plugin of type http has a url; remove it or set `type: http`".to_owned(),
            );
        }
        if self.command.is_some() && self.kind != PluginKindName::Command {
            problem(
                root.key("command"),
                "only a plugin of type command has a command; remove it or set `type: command`"
                    .to_owned(),
            );
        }
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&self.timeout_seconds) {
            problem(
                root.key("timeout_seconds"),
                format!(
                    "must be between 1 and {MAX_TIMEOUT_SECONDS} seconds, found {}",
                    self.timeout_seconds
                ),
            );
        }
        if self.capabilities.is_empty() {
            problem(
                root.key("capabilities"),
                "a plugin needs at least one capability".to_owned(),
            );
        }
        let mut first_index_of_id = BTreeMap::new();
        for (index, capability) in self.capabilities.iter().enumerate() {
            if let Some(first) = first_index_of_id.insert(capability.id.as_str(), index) {
                problem(
                    root.key("capabilities").index(index).key("id"),
                    format!(
                        "capability id {:?} is already used by capabilities[{first}]; ids must be unique",
                        capability.id
                    ),
                );
                first_index_of_id.insert(capability.id.as_str(), first);
            }
        }
        let capabilities: Vec<Capability> = self
            .capabilities
            .into_iter()
            .enumerate()
            .map(|(index, capability)| {
                capability.into_capability(&root.key("capabilities").index(index), &mut problems)
            })
            .collect();

        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(PluginManifest {
            name: if self.name.trim().is_empty() {
                self.id.clone()
            } else {
                self.name
            },
            id: self.id,
            description: self.description,
            kind,
            timeout_seconds: self.timeout_seconds,
            capabilities,
        })
    }
}

fn url_problem(url: &str) -> Option<String> {
    match reqwest::Url::parse(url) {
        Err(error) => Some(format!("url {url:?} is not a valid url: {error}")),
        Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
            Some(format!("url {url:?} must start with http:// or https://"))
        }
        Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => {
            Some(format!("url {url:?} has no host"))
        }
        Ok(_) => None,
    }
}

impl CapabilityDocument {
    fn into_capability(self, path: &KeyPath, problems: &mut Vec<PluginFileProblem>) -> Capability {
        let mut problem = |path: KeyPath, message: String| {
            problems.push(PluginFileProblem::new(path, message));
        };
        if !is_valid_id(&self.id) {
            problem(
                path.key("id"),
                format!(
                    "capability id {:?} must be lowercase letters, digits and underscores",
                    self.id
                ),
            );
        }
        if self.description.trim().is_empty() {
            problem(
                path.key("description"),
                format!(
                    "capability {:?} must say what it does: the model chooses capabilities by it",
                    self.id
                ),
            );
        }
        let prompt = self
            .post_process_prompt
            .filter(|prompt| !prompt.trim().is_empty());
        if self.post_process && prompt.is_none() {
            problem(
                path.key("post_process"),
                format!(
                    "capability {:?} has `post_process: true` but no `post_process_prompt`; add the instructions for the model or set it to false",
                    self.id
                ),
            );
        }
        let mut first_index_of_name = BTreeMap::new();
        for (index, parameter) in self.parameters.iter().enumerate() {
            if let Some(first) = first_index_of_name.insert(parameter.name.as_str(), index) {
                problem(
                    path.key("parameters").index(index).key("name"),
                    format!(
                        "parameter name {:?} is already used by parameters[{first}]; names must be unique",
                        parameter.name
                    ),
                );
                first_index_of_name.insert(parameter.name.as_str(), first);
            }
        }
        let parameters = self
            .parameters
            .into_iter()
            .enumerate()
            .map(|(index, parameter)| {
                parameter.into_parameter(&path.key("parameters").index(index), problems)
            })
            .collect();
        Capability {
            name: if self.name.trim().is_empty() {
                self.id.clone()
            } else {
                self.name
            },
            id: self.id,
            description: self.description,
            post_process: self.post_process,
            post_process_prompt: prompt,
            parameters,
        }
    }
}

impl ParameterDocument {
    fn into_parameter(
        self,
        path: &KeyPath,
        problems: &mut Vec<PluginFileProblem>,
    ) -> ParameterSpec {
        let mut problem = |path: KeyPath, message: String| {
            problems.push(PluginFileProblem::new(path, message));
        };
        if !is_valid_parameter_name(&self.name) {
            problem(
                path.key("name"),
                format!(
                    "parameter name {:?} must be letters, digits and underscores",
                    self.name
                ),
            );
        }
        let kind = match self.kind {
            ParameterTypeName::String => ParameterType::String,
            ParameterTypeName::Number => ParameterType::Number,
            ParameterTypeName::Integer => ParameterType::Integer,
            ParameterTypeName::Boolean => ParameterType::Boolean,
            ParameterTypeName::Enum => ParameterType::Enum(self.values.clone().unwrap_or_default()),
        };
        match (&kind, &self.values) {
            (ParameterType::Enum(values), _) if values.is_empty() => problem(
                path.key("type"),
                format!(
                    "parameter {:?} is an enum: list its choices in `values: [...]`",
                    self.name
                ),
            ),
            (ParameterType::Enum(values), _) => {
                let mut seen = Vec::new();
                for (index, value) in values.iter().enumerate() {
                    let folded = value.trim().to_lowercase();
                    if folded.is_empty() {
                        problem(
                            path.key("values").index(index),
                            "an enum value must not be empty".to_owned(),
                        );
                    } else if seen.contains(&folded) {
                        problem(
                            path.key("values").index(index),
                            format!(
                                "enum value {value:?} is listed twice (values match ignoring case)"
                            ),
                        );
                    }
                    seen.push(folded);
                }
            }
            (_, Some(_)) => problem(
                path.key("values"),
                format!(
                    "only an enum has `values`; parameter {:?} is of type {}",
                    self.name,
                    kind.type_name()
                ),
            ),
            (_, None) => {}
        }
        for (key, value) in [
            ("profile_key", &self.profile_key),
            ("config_key", &self.config_key),
        ] {
            if value.as_deref().is_some_and(|text| text.trim().is_empty()) {
                problem(
                    path.key(key),
                    format!("{key} must name a key; remove it if there is none"),
                );
            }
        }
        ParameterSpec {
            name: self.name,
            kind,
            required: self.required,
            description: self.description,
            profile_key: self.profile_key,
            config_key: self.config_key,
            confirm_if_uncertain: self.confirm_if_uncertain,
            sensitive: self.sensitive,
        }
    }
}

impl From<PluginManifest> for ManifestDocument {
    fn from(manifest: PluginManifest) -> Self {
        let (kind, url, command) = match manifest.kind {
            PluginKind::Inline => (PluginKindName::Inline, None, None),
            PluginKind::Http { url } => (PluginKindName::Http, Some(url), None),
            PluginKind::Command { command } => (PluginKindName::Command, None, Some(command)),
        };
        Self {
            id: manifest.id,
            name: manifest.name,
            description: manifest.description,
            kind,
            url,
            command,
            timeout_seconds: manifest.timeout_seconds,
            capabilities: manifest
                .capabilities
                .into_iter()
                .map(CapabilityDocument::from)
                .collect(),
        }
    }
}

impl From<Capability> for CapabilityDocument {
    fn from(capability: Capability) -> Self {
        Self {
            id: capability.id,
            name: capability.name,
            description: capability.description,
            post_process: capability.post_process,
            post_process_prompt: capability.post_process_prompt,
            parameters: capability
                .parameters
                .into_iter()
                .map(ParameterDocument::from)
                .collect(),
        }
    }
}

impl From<ParameterSpec> for ParameterDocument {
    fn from(parameter: ParameterSpec) -> Self {
        let (kind, values) = match parameter.kind {
            ParameterType::String => (ParameterTypeName::String, None),
            ParameterType::Number => (ParameterTypeName::Number, None),
            ParameterType::Integer => (ParameterTypeName::Integer, None),
            ParameterType::Boolean => (ParameterTypeName::Boolean, None),
            ParameterType::Enum(values) => (ParameterTypeName::Enum, Some(values)),
        };
        Self {
            name: parameter.name,
            kind,
            values,
            required: parameter.required,
            description: parameter.description,
            profile_key: parameter.profile_key,
            config_key: parameter.config_key,
            confirm_if_uncertain: parameter.confirm_if_uncertain,
            sensitive: parameter.sensitive,
        }
    }
}

/// For `#[serde(try_from)]`: a manifest deserialised directly (e.g. an actix `Json` body)
/// passes the same rules as one loaded from a file.
impl TryFrom<ManifestDocument> for PluginManifest {
    type Error = ProblemList;

    fn try_from(document: ManifestDocument) -> Result<Self, ProblemList> {
        document.into_manifest().map_err(ProblemList)
    }
}

/// Problems on one line, separated by semicolons: for messages that are not a file report.
#[derive(Debug)]
pub(crate) struct ProblemList<P = Vec<PluginFileProblem>>(pub(crate) P);

impl<P: AsRef<[PluginFileProblem]>> fmt::Display for ProblemList<P> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, problem) in self.0.as_ref().iter().enumerate() {
            if position > 0 {
                formatter.write_str("; ")?;
            }
            write!(formatter, "{problem}")?;
        }
        Ok(())
    }
}
