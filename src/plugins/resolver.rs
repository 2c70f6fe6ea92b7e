//! The parameter resolver of seed 000 §3.1, §3.5 and §6.2: before a plugin is called, each
//! parameter of the capability gets its value from (1) this turn's arguments, (2) the member's
//! profile by `profile_key`, (3) the plugin config by `config_key`, then by the parameter's
//! name — remembering where every value came from. The outcome says whether the call can run,
//! what is missing, what the member must confirm first, or what the model got wrong.
//!
//! Pure: the caller reads the profile and the config (see `read_plugin_config`) and passes
//! them in. The texts for the model and the member are in `resolution_text`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::manifest::{Capability, ParameterSpec, PluginManifest};
use super::parameter_value::{Fitted, fit_to_type};
use super::plugin_config::{CapabilityDefaults, PluginConfig};
use crate::ports::ProfileFacts;

/// Where a parameter's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueSource {
    /// The model passed it from the current user message: certain.
    Message,
    /// The member's profile: may be out of date.
    Profile,
    /// The plugin's `config.yml`: a static preset, may be stale.
    Config,
}

/// A parameter's value, fitted to its type, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedValue {
    pub value: Value,
    pub source: ValueSource,
}

/// Parameter values by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResolvedCall {
    pub values: BTreeMap<String, ResolvedValue>,
}

impl ResolvedCall {
    /// The `parameters` object of a plugin call.
    pub fn parameters(&self) -> Map<String, Value> {
        self.values
            .iter()
            .map(|(name, resolved)| (name.clone(), resolved.value.clone()))
            .collect()
    }
}

/// A required parameter that no source could fill, and where it was looked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingParameter {
    pub name: String,
    pub description: String,
    /// The profile key that was read, if the parameter has one.
    pub profile_key: Option<String>,
    /// The `default_parameters` keys that were read, in order.
    pub config_keys: Vec<String>,
}

/// A value from the profile or config that the member must confirm before it is used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UncertainValue {
    pub name: String,
    pub value: Value,
    pub source: ValueSource,
}

/// Something wrong with the model's arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum ArgumentProblem {
    /// An argument the capability does not take (often a misspelt parameter name).
    UnknownParameter { name: String },
    /// A value that does not fit the parameter's type.
    WrongType {
        parameter: String,
        value: Value,
        expected: String,
    },
}

/// A profile fact or config preset that does not fit the parameter's type: treated as
/// missing, and mentioned so that someone can fix the profile or the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IgnoredValue {
    pub parameter: String,
    pub source: ValueSource,
    /// The profile key or `default_parameters` key the value was under.
    pub key: String,
    pub value: Value,
    pub expected: String,
}

/// What to do about a plugin call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ResolutionOutcome {
    /// Every required parameter has a certain value: call the plugin.
    Ready(ResolvedCall),
    /// Required parameters have no value: ask the member for them first (this wins over
    /// confirmation, so the member is asked one thing at a time). `have` is everything found;
    /// `to_confirm` names those of its values that will need confirming.
    Missing {
        missing: Vec<MissingParameter>,
        have: ResolvedCall,
        to_confirm: Vec<String>,
    },
    /// Everything is there, but these values came from the profile or config of a parameter
    /// marked `confirm_if_uncertain`: the member confirms them first. `have` holds the values
    /// that need no confirmation.
    Uncertain {
        uncertain: Vec<UncertainValue>,
        have: ResolvedCall,
    },
    /// The model's arguments are wrong; it must call again.
    Invalid { problems: Vec<ArgumentProblem> },
}

/// The resolver's answer for one call of one capability.
///
/// Its `Debug` shows the [`Resolution::redacted`] view, so a resolution written to a log
/// never carries a sensitive value.
#[derive(Clone, PartialEq, Serialize)]
pub struct Resolution {
    pub plugin_id: String,
    pub capability_id: String,
    pub outcome: ResolutionOutcome,
    pub ignored: Vec<IgnoredValue>,
    /// The capability's parameter names in manifest order, for readable renderings.
    #[serde(skip)]
    pub(crate) parameter_order: Vec<String>,
    /// Names of the `sensitive` parameters.
    #[serde(skip)]
    pub(crate) sensitive: BTreeSet<String>,
}

impl std::fmt::Debug for Resolution {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = self.redacted();
        formatter
            .debug_struct("Resolution")
            .field("plugin_id", &redacted.plugin_id)
            .field("capability_id", &redacted.capability_id)
            .field("outcome", &redacted.outcome)
            .field("ignored", &redacted.ignored)
            .finish()
    }
}

impl Resolution {
    /// The call to make once the member has approved the uncertain values (a confirmation
    /// button or reaction): the certain values and the confirmed ones. `None` unless the
    /// outcome is [`ResolutionOutcome::Uncertain`].
    pub fn call_if_confirmed(&self) -> Option<ResolvedCall> {
        let ResolutionOutcome::Uncertain { uncertain, have } = &self.outcome else {
            return None;
        };
        let mut call = have.clone();
        for value in uncertain {
            call.values.insert(
                value.name.clone(),
                ResolvedValue {
                    value: value.value.clone(),
                    source: value.source,
                },
            );
        }
        Some(call)
    }

    pub fn is_sensitive(&self, parameter: &str) -> bool {
        self.sensitive.contains(parameter)
    }
}

/// Resolves every parameter of `capability` for one call (seed 000 §3.5 steps 1–3).
///
/// `arguments` are what the model passed; `profile` the asking member's facts; `config` the
/// plugin's `config.yml` as read for this call.
pub fn resolve_parameters(
    manifest: &PluginManifest,
    capability: &Capability,
    arguments: &Map<String, Value>,
    profile: &ProfileFacts,
    config: &PluginConfig,
) -> Resolution {
    let defaults = config.for_capability(&capability.id);
    let mut problems: Vec<ArgumentProblem> = arguments
        .keys()
        .filter(|name| capability.parameter(name).is_none())
        .map(|name| ArgumentProblem::UnknownParameter { name: name.clone() })
        .collect();
    let mut found = ResolvedCall::default();
    let mut needs_confirmation = Vec::new();
    let mut missing = Vec::new();
    let mut ignored = Vec::new();

    for parameter in &capability.parameters {
        match resolve_one(parameter, arguments, profile, &defaults, &mut ignored) {
            OneParameter::Found(resolved) => {
                if needs_confirming(parameter, resolved.source, &defaults) {
                    needs_confirmation.push(parameter.name.clone());
                }
                found.values.insert(parameter.name.clone(), resolved);
            }
            OneParameter::Invalid(problem) => problems.push(problem),
            OneParameter::NotFound if parameter.required => missing.push(MissingParameter {
                name: parameter.name.clone(),
                description: parameter.description.clone(),
                profile_key: parameter.profile_key.clone(),
                config_keys: CapabilityDefaults::keys_for(parameter)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            }),
            OneParameter::NotFound => {}
        }
    }

    let outcome = if !problems.is_empty() {
        ResolutionOutcome::Invalid { problems }
    } else if !missing.is_empty() {
        ResolutionOutcome::Missing {
            missing,
            have: found,
            to_confirm: needs_confirmation,
        }
    } else if !needs_confirmation.is_empty() {
        let mut have = found;
        let uncertain = needs_confirmation
            .into_iter()
            .filter_map(|name| {
                have.values.remove(&name).map(|resolved| UncertainValue {
                    name,
                    value: resolved.value,
                    source: resolved.source,
                })
            })
            .collect();
        ResolutionOutcome::Uncertain { uncertain, have }
    } else {
        ResolutionOutcome::Ready(found)
    };

    Resolution {
        plugin_id: manifest.id.clone(),
        capability_id: capability.id.clone(),
        outcome,
        ignored,
        parameter_order: capability
            .parameters
            .iter()
            .map(|parameter| parameter.name.clone())
            .collect(),
        sensitive: capability
            .parameters
            .iter()
            .filter(|parameter| parameter.sensitive)
            .map(|parameter| parameter.name.clone())
            .collect(),
    }
}

enum OneParameter {
    Found(ResolvedValue),
    Invalid(ArgumentProblem),
    NotFound,
}

/// One parameter through the three sources, first fit wins. A wrong type from the model is
/// its mistake to fix; from the profile or config it is stale data, so the next source is
/// tried and the value noted in `ignored`.
fn resolve_one(
    parameter: &ParameterSpec,
    arguments: &Map<String, Value>,
    profile: &ProfileFacts,
    defaults: &CapabilityDefaults,
    ignored: &mut Vec<IgnoredValue>,
) -> OneParameter {
    if let Some(argument) = arguments.get(&parameter.name) {
        match fit_to_type(&parameter.kind, argument) {
            Fitted::Value(value) => {
                return OneParameter::Found(ResolvedValue {
                    value,
                    source: ValueSource::Message,
                });
            }
            Fitted::WrongType { expected } => {
                return OneParameter::Invalid(ArgumentProblem::WrongType {
                    parameter: parameter.name.clone(),
                    value: argument.clone(),
                    expected,
                });
            }
            // An empty or null argument is the model saying "I don't know": look further.
            Fitted::Absent => {}
        }
    }

    let profile_fact = parameter.profile_key.as_ref().and_then(|key| {
        profile
            .get(key)
            .map(|fact| (key, Value::String(fact.clone())))
    });
    let config_presets = defaults
        .values_for(parameter)
        .into_iter()
        .map(|preset| (preset.key, preset.value.clone()));
    let candidates = profile_fact
        .into_iter()
        .map(|(key, value)| (ValueSource::Profile, key.as_str(), value))
        .chain(config_presets.map(|(key, value)| (ValueSource::Config, key, value)));

    for (source, key, value) in candidates {
        match fit_to_type(&parameter.kind, &value) {
            Fitted::Value(fitted) => {
                return OneParameter::Found(ResolvedValue {
                    value: fitted,
                    source,
                });
            }
            Fitted::WrongType { expected } => ignored.push(IgnoredValue {
                parameter: parameter.name.clone(),
                source,
                key: key.to_owned(),
                value,
                expected,
            }),
            Fitted::Absent => {}
        }
    }
    OneParameter::NotFound
}

/// Seed 000 §3.5 step 3: a value the member did not give this turn is uncertain when the
/// parameter asks for confirmation — unless it came from the config and the config says to
/// use its values directly. That trust is the config's own; it never covers profile values.
fn needs_confirming(
    parameter: &ParameterSpec,
    source: ValueSource,
    defaults: &CapabilityDefaults,
) -> bool {
    match source {
        ValueSource::Message => false,
        ValueSource::Profile => parameter.confirm_if_uncertain,
        ValueSource::Config => {
            parameter.confirm_if_uncertain && !defaults.is_used_directly(&parameter.name)
        }
    }
}
