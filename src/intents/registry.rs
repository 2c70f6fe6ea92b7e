//! The intents registry of an `intents` profile: `intents.yaml` typed, checked (every problem
//! with file, line and key path, through the plugins' YAML machinery) and asked which intents
//! a member may use on a channel. Its checks include each parameter's declaration
//! (`params.rs`) and that a policy bound names a parameter of the kind it compares: a number
//! bound needs a parameter read as a number, so a rule never compares text it would have to
//! read again.
//!
//! An intent is eligible when the channel is in its `constraints.channels` (all channels when
//! empty), the member falls inside its `rollout` percent (a stable hash of intent and member,
//! so a member is in or out for good until the percent changes) and the member's role is at
//! least `min_role`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Deserialize;

use super::params::{ParamSpec, ParamType};
use super::policy::{BoundValue, PolicyRule};
use crate::config::yaml_file::{ProblemLines, parse_yaml_document};
use crate::config::{FamilyRole, KeyPath, PluginFileProblem};

/// Below this confidence the classifier's answer counts as no intent (seed 003).
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.5;

/// Where `check_order_status` reads orders when the intents file sets no `data_source`
/// (relative to the working directory): the example orders shipped with hearth.
pub const DEFAULT_ORDERS_FILE: &str = "data/orders.json";

/// `intents.yaml` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentsDocument {
    pub intents: Vec<Intent>,
    #[serde(default)]
    pub min_confidence: Option<f64>,
    #[serde(default)]
    pub redaction: Redaction,
    #[serde(default)]
    pub data_source: Option<DataSourceConfig>,
    #[serde(default)]
    pub policy: PolicyConfig,
}

/// One request the engine knows how to carry out.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    pub id: String,
    pub description: String,
    /// Each a name (text), or a mapping with its `type`, `pattern`, `min`, `max`, `example`.
    #[serde(default)]
    pub required_params: Vec<ParamSpec>,
    /// Any tool of the profile's stack; it is called with the parameters as its arguments.
    pub tool: String,
    #[serde(default)]
    pub constraints: Constraints,
    #[serde(default)]
    pub respond: Respond,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Channel names (`http`, `telegram`, `matrix`, `console`); empty: every channel.
    #[serde(default)]
    pub channels: Vec<String>,
    /// Percent of members (0 to 100) the intent is offered to.
    #[serde(default = "full_rollout")]
    pub rollout: u8,
    /// The least role that may use it; `null` or absent: everyone.
    #[serde(default)]
    pub min_role: Option<FamilyRole>,
}

fn full_rollout() -> u8 {
    100
}

impl Default for Constraints {
    fn default() -> Self {
        Constraints {
            channels: Vec::new(),
            rollout: full_rollout(),
            min_role: None,
        }
    }
}

/// Templates of the answer: `{param}` is a parameter, `{result.field}` a field of the tool's
/// JSON result, `{error}` the tool's error. Without `post` the model words the result.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Respond {
    #[serde(default)]
    pub pre: Option<String>,
    #[serde(default)]
    pub post: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// Parameters whose values telemetry masks.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redaction {
    #[serde(default)]
    pub params: Vec<String>,
}

/// Where `check_order_status` reads orders: a JSON file, or the `intent_records` table of
/// hearth's database.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSourceConfig {
    pub kind: DataSourceKind,
    /// The JSON file (`kind: json`), relative to the working directory.
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataSourceKind {
    Json,
    Sql,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
}

/// Who asks, and where: what eligibility depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentContext<'a> {
    pub channel: &'a str,
    pub member_id: &'a crate::ids::MemberId,
    pub role: FamilyRole,
}

/// A checked `intents.yaml`.
#[derive(Debug, Clone)]
pub struct IntentsRegistry {
    pub file: PathBuf,
    pub intents: Vec<Intent>,
    pub min_confidence: f64,
    pub redacted_params: BTreeSet<String>,
    pub data_source: Option<DataSourceConfig>,
    pub policy: Vec<PolicyRule>,
    /// The file's text, to find the line of a problem found later (a tool the profile lacks).
    text: String,
}

/// Why an intents file cannot be used: every problem, one per line as `file:line: key: what`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", ProblemLines { file, problems })]
pub struct IntentsFileError {
    pub file: PathBuf,
    pub problems: Vec<PluginFileProblem>,
}

impl IntentsFileError {
    fn one(file: &Path, problem: PluginFileProblem) -> Self {
        IntentsFileError {
            file: file.to_path_buf(),
            problems: vec![problem],
        }
    }
}

impl IntentsRegistry {
    /// Read and check `file` (off the runtime's thread: `tokio::fs`).
    pub async fn load(file: &Path) -> Result<Self, IntentsFileError> {
        let text = tokio::fs::read_to_string(file).await.map_err(|error| {
            IntentsFileError::one(
                file,
                PluginFileProblem::new(
                    KeyPath::root(),
                    format!(
                        "cannot read the intents file: {error} (set processing_config.intents_file \
                         or create it from config/intents.example.yaml)"
                    ),
                ),
            )
        })?;
        Self::from_text(file, &text)
    }

    /// Type and check the text of `file`.
    pub fn from_text(file: &Path, text: &str) -> Result<Self, IntentsFileError> {
        let document: IntentsDocument =
            parse_yaml_document(text).map_err(|problem| IntentsFileError::one(file, problem))?;
        let problems: Vec<PluginFileProblem> = check(&document)
            .into_iter()
            .map(|problem| problem.located_in(text))
            .collect();
        if !problems.is_empty() {
            return Err(IntentsFileError {
                file: file.to_path_buf(),
                problems,
            });
        }
        Ok(IntentsRegistry {
            file: file.to_path_buf(),
            intents: document.intents,
            min_confidence: document.min_confidence.unwrap_or(DEFAULT_MIN_CONFIDENCE),
            redacted_params: document.redaction.params.into_iter().collect(),
            data_source: document.data_source,
            policy: document.policy.rules,
            text: text.to_string(),
        })
    }

    /// Refuses intents whose `tool` is not among `known` (the profile's tools). An MCP tool
    /// (`server__tool`) passes while its server's list may not be known yet.
    pub fn check_tools(&self, known: &[String], profile_id: &str) -> Result<(), IntentsFileError> {
        let problems: Vec<PluginFileProblem> = self
            .intents
            .iter()
            .enumerate()
            .filter(|(_, intent)| !intent.tool.contains("__") && !known.contains(&intent.tool))
            .map(|(index, intent)| {
                PluginFileProblem::new(
                    KeyPath::root().key("intents").index(index).key("tool"),
                    format!(
                        "{:?} is not a tool of profile {profile_id:?} (its tools: {}); enable it in \
                         the profile's tools_config",
                        intent.tool,
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
                .located_in(&self.text)
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        Err(IntentsFileError {
            file: self.file.clone(),
            problems,
        })
    }

    /// Where `check_order_status` reads orders: the file's `data_source`, or, when it sets
    /// none and `offered` (the profile enables the tool, or an intent names it), the JSON file
    /// `DEFAULT_ORDERS_FILE`. `None`: the profile has no use for it.
    pub fn order_source(&self, offered: bool) -> Option<DataSourceConfig> {
        let offered = offered
            || self
                .intents
                .iter()
                .any(|intent| intent.tool == super::CHECK_ORDER_STATUS);
        match &self.data_source {
            Some(source) => Some(source.clone()),
            None if offered => Some(DataSourceConfig {
                kind: DataSourceKind::Json,
                path: Some(DEFAULT_ORDERS_FILE.to_string()),
            }),
            None => None,
        }
    }

    /// The data source this file names (or leaves to the default) cannot be opened: the
    /// problem at its `data_source` key, saying which file was read and what to set.
    pub fn data_source_problem(&self, error: &super::DataSourceError) -> IntentsFileError {
        let message = match &self.data_source {
            Some(_) => format!("{error}; fix the path, or use kind sql"),
            None => format!(
                "not set, so check_order_status reads {DEFAULT_ORDERS_FILE} (relative to the \
                 working directory), and {error}; set data_source in this file, e.g. \
                 {{ kind: json, path: /path/to/orders.json }} or {{ kind: sql }}"
            ),
        };
        let mut problem = PluginFileProblem::new(KeyPath::root().key("data_source"), message);
        // A key left out has no line of its own.
        if self.data_source.is_some() {
            problem = problem.located_in(&self.text);
        }
        IntentsFileError::one(&self.file, problem)
    }

    pub fn intent(&self, id: &str) -> Option<&Intent> {
        self.intents.iter().find(|intent| intent.id == id)
    }

    /// The intents this member may use on this channel, in file order.
    pub fn eligible(&self, context: &IntentContext<'_>) -> Vec<&Intent> {
        self.intents
            .iter()
            .filter(|intent| intent.is_eligible(context))
            .collect()
    }
}

impl Intent {
    /// The declaration of parameter `name`, if the intent has one.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.required_params.iter().find(|param| param.name == name)
    }

    pub fn param_names(&self) -> impl Iterator<Item = &str> {
        self.required_params.iter().map(|param| param.name.as_str())
    }

    pub fn is_eligible(&self, context: &IntentContext<'_>) -> bool {
        let constraints = &self.constraints;
        let channel_ok = constraints.channels.is_empty()
            || constraints
                .channels
                .iter()
                .any(|channel| channel == context.channel);
        let role_ok = constraints
            .min_role
            .is_none_or(|least| context.role >= least);
        channel_ok
            && role_ok
            && in_rollout(&self.id, context.member_id.as_str(), constraints.rollout)
    }
}

/// Whether `member_id` is among the `percent` of members offered `intent_id`: FNV-1a of
/// both, the same on every run and every machine.
pub fn in_rollout(intent_id: &str, member_id: &str, percent: u8) -> bool {
    if percent >= 100 {
        return true;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in intent_id
        .bytes()
        .chain(std::iter::once(0))
        .chain(member_id.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash % 100 < u64::from(percent)
}

/// The checks the shape cannot make, each at its key path.
fn check(document: &IntentsDocument) -> Vec<PluginFileProblem> {
    let mut problems = Vec::new();
    let root = KeyPath::root();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, intent) in document.intents.iter().enumerate() {
        let path = root.key("intents").index(index);
        if intent.id.trim().is_empty() {
            problems.push(PluginFileProblem::new(
                path.key("id"),
                "an intent id must not be empty",
            ));
        } else if let Some(first) = seen.insert(&intent.id, index) {
            problems.push(PluginFileProblem::new(
                path.key("id"),
                format!(
                    "duplicate intent id {:?} (also intents[{first}])",
                    intent.id
                ),
            ));
        }
        if intent.tool.trim().is_empty() {
            problems.push(PluginFileProblem::new(
                path.key("tool"),
                "must name a tool of the profile, found an empty string",
            ));
        }
        if intent.constraints.rollout > 100 {
            problems.push(PluginFileProblem::new(
                path.key("constraints").key("rollout"),
                format!(
                    "a percent from 0 to 100, found {}",
                    intent.constraints.rollout
                ),
            ));
        }
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for (param_index, param) in intent.required_params.iter().enumerate() {
            let param_path = path.key("required_params").index(param_index);
            if !names.insert(&param.name) {
                problems.push(PluginFileProblem::new(
                    param_path.key("name"),
                    format!("duplicate parameter {:?}", param.name),
                ));
            }
            problems.extend(
                param
                    .problems()
                    .into_iter()
                    .map(|(key, message)| PluginFileProblem::new(param_path.then(key), message)),
            );
        }
        let templates = [
            ("pre", &intent.respond.pre),
            ("post", &intent.respond.post),
            ("error", &intent.respond.error),
        ];
        for (key, template) in templates {
            let Some(template) = template else { continue };
            for placeholder in super::planner::placeholders(template) {
                let known = intent.param(&placeholder).is_some()
                    || placeholder.starts_with("result.")
                    || (key == "error" && placeholder == "error");
                if !known {
                    problems.push(PluginFileProblem::new(
                        path.key("respond").key(key),
                        format!(
                            "{{{placeholder}}} is neither a required_params entry nor \
                             {{result.<field>}}{}",
                            if key == "error" { " nor {error}" } else { "" }
                        ),
                    ));
                }
            }
        }
    }
    if let Some(confidence) = document.min_confidence
        && !(0.0..=1.0).contains(&confidence)
    {
        problems.push(PluginFileProblem::new(
            root.key("min_confidence"),
            format!("a number from 0 to 1, found {confidence}"),
        ));
    }
    if let Some(source) = &document.data_source
        && source.kind == DataSourceKind::Json
        && source
            .path
            .as_deref()
            .is_none_or(|path| path.trim().is_empty())
    {
        problems.push(PluginFileProblem::new(
            root.key("data_source").key("path"),
            "kind json needs the path of the JSON file, e.g. data/orders.json",
        ));
    }
    for (index, rule) in document.policy.rules.iter().enumerate() {
        let path = root.key("policy").key("rules").index(index);
        if let Some(intent) = &rule.intent
            && !seen.contains_key(intent.as_str())
        {
            problems.push(PluginFileProblem::new(
                path.key("intent"),
                format!("{intent:?} names no intent of this file"),
            ));
        }
        problems.extend(
            rule.problems()
                .into_iter()
                .chain(bound_problems(rule, &document.intents))
                .map(|(key, message)| PluginFileProblem::new(path.then(&key), message)),
        );
    }
    problems
}

/// A rule's parameter bounds against the parameters of the intents it applies to: a bound
/// names a parameter they have, a number bounds a number, a text a text or a date.
fn bound_problems(rule: &PolicyRule, intents: &[Intent]) -> Vec<(String, String)> {
    let applies: Vec<&Intent> = intents
        .iter()
        .filter(|intent| rule.intent.as_ref().is_none_or(|id| *id == intent.id))
        .collect();
    let mut problems = Vec::new();
    for (index, bound) in rule.params.iter().enumerate() {
        let declared: Vec<(&Intent, &ParamSpec)> = applies
            .iter()
            .filter_map(|intent| Some((*intent, intent.param(&bound.name)?)))
            .collect();
        if declared.is_empty() && !applies.is_empty() {
            let names: Vec<&str> = applies
                .iter()
                .flat_map(|intent| intent.param_names())
                .collect();
            problems.push((
                format!("params[{index}].name"),
                format!(
                    "{:?} is not a parameter of {} (parameters: {})",
                    bound.name,
                    match &rule.intent {
                        Some(id) => format!("intent {id:?}"),
                        None => "any intent".to_string(),
                    },
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        }
        for (intent, param) in declared {
            let numeric_bound = matches!(bound.value, BoundValue::Number(_));
            if numeric_bound && !param.kind.is_numeric() {
                problems.push((
                    format!("params[{index}].value"),
                    format!(
                        "a number, but intent {:?} reads {:?} as {}; declare it in its \
                         required_params as {{ name: {}, type: number }}",
                        intent.id,
                        param.name,
                        param.kind.described(),
                        param.name
                    ),
                ));
            } else if !numeric_bound && param.kind.is_numeric() {
                problems.push((
                    format!("params[{index}].value"),
                    format!(
                        "a text, but intent {:?} reads {:?} as {}: compare it with a number",
                        intent.id,
                        param.name,
                        param.kind.described()
                    ),
                ));
            } else if let BoundValue::Text(text) = &bound.value
                && param.kind == ParamType::Date
                && NaiveDate::parse_from_str(text, "%Y-%m-%d").is_err()
            {
                problems.push((
                    format!("params[{index}].value"),
                    format!(
                        "{text:?} is not a date; intent {:?} reads {:?} as a date, compared \
                         as YYYY-MM-DD",
                        intent.id, param.name
                    ),
                ));
            }
        }
    }
    problems
}

impl fmt::Display for IntentContext<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} on {} ({})",
            self.member_id,
            self.channel,
            self.role.as_str()
        )
    }
}
