//! The plugin manifest, `plugins/<id>/plugin.yaml` (seed 000 §3.2, DESIGN.md "Plugins"): what a
//! plugin is called, how hearth reaches it, and each capability's parameters with where their
//! values may come from. Owns the typed model and loading it from a file or from the JSON of
//! the registration API; the written form and its checks live in `manifest_document`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest_document::{ManifestDocument, ProblemList};
use crate::config::yaml_file::{
    KeyPath, PluginFileProblem, ProblemLines, parse_json_document, parse_yaml_document,
};

/// The file name of a manifest inside its plugin's folder.
pub const MANIFEST_FILE_NAME: &str = "plugin.yaml";

/// How long a call may take when the manifest does not say.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 20;

/// A plugin: checked on the way in (ids, urls, enum values, ...), so holding one means it is
/// usable. Serialises to the same schema it is written in (`type: http`, `url: ...`), which is
/// also what the registration API receives as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ManifestDocument", into = "ManifestDocument")]
pub struct PluginManifest {
    /// `[a-z0-9_]+`, the name of the plugin's folder.
    pub id: String,
    pub name: String,
    /// What the plugin is for; the model routes on it.
    pub description: String,
    pub kind: PluginKind,
    pub timeout_seconds: u64,
    pub capabilities: Vec<Capability>,
}

/// How hearth reaches a plugin; written `type: inline | http | command`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginKind {
    /// Built into hearth.
    Inline,
    /// hearth POSTs the call as JSON to `url`.
    Http { url: String },
    /// hearth runs `command` (program and arguments) with the call as JSON on stdin.
    Command { command: Vec<String> },
}

/// One thing a plugin can do.
#[derive(Debug, Clone, PartialEq)]
pub struct Capability {
    /// `[a-z0-9_]+`, unique in its plugin.
    pub id: String,
    pub name: String,
    pub description: String,
    /// Whether the plugin's answer goes through the LLM again before the member sees it.
    pub post_process: bool,
    /// The instructions for that pass; present whenever `post_process` is true.
    pub post_process_prompt: Option<String>,
    pub parameters: Vec<ParameterSpec>,
}

/// One parameter of a capability and where its value may come from when the model does not
/// pass it (seed 000 §3.1).
#[derive(Debug, Clone, PartialEq)]
pub struct ParameterSpec {
    /// `[A-Za-z0-9_]+`, unique in its capability.
    pub name: String,
    pub kind: ParameterType,
    /// The plugin cannot run without a value.
    pub required: bool,
    pub description: String,
    /// The member's profile fact that can fill it (`address`, `phone`, ...).
    pub profile_key: Option<String>,
    /// The key of `default_parameters` in `config.yml` that can fill it, looked up before the
    /// parameter's own name.
    pub config_key: Option<String>,
    /// A value from the profile or config must be confirmed by the member before use.
    pub confirm_if_uncertain: bool,
    /// The value is shown to the member and the model, never to telemetry or logs.
    pub sensitive: bool,
}

/// The type of a parameter; written `type: string | number | integer | boolean | enum`, an
/// enum with `values: [...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParameterType {
    String,
    Number,
    Integer,
    Boolean,
    /// One of these values, matched case-insensitively and passed in the spelling written here.
    Enum(Vec<String>),
}

impl ParameterType {
    /// The word used in the manifest and in JSON schemas.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Enum(_) => "enum",
        }
    }
}

impl PluginManifest {
    pub fn capability(&self, capability_id: &str) -> Option<&Capability> {
        self.capabilities
            .iter()
            .find(|capability| capability.id == capability_id)
    }

    /// Reads a manifest sent as JSON (the registration API), with every problem at its key
    /// path.
    pub fn from_json_value(value: serde_json::Value) -> Result<Self, ManifestError> {
        let invalid = |problems| ManifestError::InvalidRegistration { problems };
        let document: ManifestDocument =
            parse_json_document(value).map_err(|problem| invalid(vec![problem]))?;
        document.into_manifest().map_err(invalid)
    }

    /// The manifest as the JSON of the registration API.
    pub fn to_json_value(&self) -> serde_json::Value {
        serde_json::to_value(ManifestDocument::from(self.clone()))
            .expect("a manifest document has string keys and no floats, so it is valid json")
    }

    /// Checks again what loading checks, for a manifest built in code rather than read.
    pub fn check(&self) -> Result<(), Vec<PluginFileProblem>> {
        ManifestDocument::from(self.clone())
            .into_manifest()
            .map(|_| ())
    }
}

impl Capability {
    pub fn parameter(&self, name: &str) -> Option<&ParameterSpec> {
        self.parameters
            .iter()
            .find(|parameter| parameter.name == name)
    }
}

/// Why a manifest cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{}: cannot read the plugin manifest: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Not YAML, not the manifest's shape, or breaking one of its rules; one problem per line
    /// as `file:line: key.path: what is wrong`.
    #[error("{}", ProblemLines { file, problems })]
    Invalid {
        file: PathBuf,
        problems: Vec<PluginFileProblem>,
    },

    /// A manifest sent to the registration API that cannot be used.
    #[error("the plugin manifest is invalid: {}", ProblemList(problems))]
    InvalidRegistration { problems: Vec<PluginFileProblem> },
}

impl ManifestError {
    pub fn problems(&self) -> &[PluginFileProblem] {
        match self {
            Self::Read { .. } => &[],
            Self::Invalid { problems, .. } | Self::InvalidRegistration { problems } => problems,
        }
    }
}

/// Loads `plugins/<id>/plugin.yaml`; the manifest's id must be the folder's name, so that a
/// plugin is found where its id says.
pub fn load_manifest_file(file: &Path) -> Result<PluginManifest, ManifestError> {
    let text = std::fs::read_to_string(file).map_err(|source| ManifestError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    let folder_name = file
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned());
    parse_manifest_yaml(&text, file, folder_name.as_deref())
}

/// Reads a manifest from its YAML `text`; `file` names it in problems. With `expected_id`,
/// the manifest's id must be that.
pub fn parse_manifest_yaml(
    text: &str,
    file: &Path,
    expected_id: Option<&str>,
) -> Result<PluginManifest, ManifestError> {
    let invalid = |problems| ManifestError::Invalid {
        file: file.to_path_buf(),
        problems,
    };
    let document: ManifestDocument =
        parse_yaml_document(text).map_err(|problem| invalid(vec![problem]))?;
    let mut problems = Vec::new();
    if let Some(expected_id) = expected_id
        && document.id != expected_id
    {
        problems.push(PluginFileProblem::new(
            KeyPath::root().key("id"),
            format!(
                "id {:?} is not the name of the plugin's folder {expected_id:?}; rename one so they match",
                document.id
            ),
        ));
    }
    match document.into_manifest() {
        Ok(manifest) if problems.is_empty() => Ok(manifest),
        Ok(_) => Err(invalid(located(problems, text))),
        Err(more) => {
            problems.extend(more);
            Err(invalid(located(problems, text)))
        }
    }
}

fn located(problems: Vec<PluginFileProblem>, text: &str) -> Vec<PluginFileProblem> {
    problems
        .into_iter()
        .map(|problem| problem.located_in(text))
        .collect()
}
