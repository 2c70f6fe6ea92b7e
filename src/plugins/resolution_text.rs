//! What a [`Resolution`] says to whom (seed 000 §3.5 steps 5 and 6, §3.6): the tool result
//! the model reads (what is missing and where we looked, what we have and from where, what to
//! ask), the short prompt of a confirmation button or reaction, the question for a pending
//! call, and the redacted view for telemetry and logs.
//!
//! Sensitive values appear in the texts for the model and the member — they need them to
//! confirm an order — and nowhere else: telemetry and logs take [`Resolution::redacted`].

use std::fmt::Write as _;

use serde_json::Value;

use super::parameter_value::display_value;
use super::resolver::{
    ArgumentProblem, MissingParameter, Resolution, ResolutionOutcome, ResolvedCall, ValueSource,
};

/// What a sensitive value becomes in the redacted view.
pub const REDACTED: &str = "[redacted]";

impl ValueSource {
    /// "from the member's profile": for the model, which speaks of the member in the third person.
    pub fn for_model(self) -> &'static str {
        match self {
            Self::Message => "from the user's message",
            Self::Profile => "from the member's profile",
            Self::Config => "from the plugin config",
        }
    }

    /// "from your profile": for the member.
    pub fn for_member(self) -> &'static str {
        match self {
            Self::Message => "you said",
            Self::Profile => "from your profile",
            Self::Config => "from the plugin settings",
        }
    }
}

impl Resolution {
    /// The tool result for the model: on anything but `Ready`, it says not to call the plugin
    /// yet and what to ask the user.
    pub fn model_text(&self) -> String {
        let heading = format!("Plugin \"{}\" ({})", self.plugin_id, self.capability_id);
        let mut text = String::new();
        match &self.outcome {
            ResolutionOutcome::Ready(call) => {
                let _ = writeln!(text, "{heading} has every parameter it needs:");
                self.write_values(&mut text, call, &[]);
            }
            ResolutionOutcome::Missing {
                missing,
                have,
                to_confirm,
            } => {
                let _ = writeln!(text, "{heading} requires parameters that are missing:");
                for parameter in missing {
                    let _ = writeln!(
                        text,
                        "- {}{} (not in {})",
                        parameter.name,
                        description_suffix(&parameter.description, ": "),
                        where_looked(parameter)
                    );
                }
                if !have.values.is_empty() {
                    text.push_str("\nParameters we have:\n");
                    self.write_values(&mut text, have, to_confirm);
                }
                self.write_ignored(&mut text);
                let asks: Vec<String> = missing.iter().map(ask_for).collect();
                let _ = write!(
                    text,
                    "\nDo not call the plugin yet. Please ask the user for: {}.",
                    asks.join(", ")
                );
                if !to_confirm.is_empty() {
                    let _ = write!(
                        text,
                        " In the same message, ask them to confirm: {}.",
                        to_confirm.join(", ")
                    );
                }
            }
            ResolutionOutcome::Uncertain { uncertain, have } => {
                let _ = writeln!(
                    text,
                    "{heading} has parameters that need confirmation before use:"
                );
                for value in uncertain {
                    let _ = writeln!(
                        text,
                        "- {}: {} ({}) — please confirm with the user",
                        value.name,
                        Value::String(display_value(&value.value)),
                        value.source.for_model()
                    );
                }
                if !have.values.is_empty() {
                    text.push_str("\nParameters we have (no confirmation needed):\n");
                    self.write_values(&mut text, have, &[]);
                }
                self.write_ignored(&mut text);
                let statements: Vec<String> = uncertain
                    .iter()
                    .map(|value| {
                        format!(
                            "your {} as {}",
                            value.name.replace('_', " "),
                            display_value(&value.value)
                        )
                    })
                    .collect();
                let _ = write!(
                    text,
                    "\nDo not call the plugin yet. Please ask the user: \"I have {}. Is that correct for this request?\" \
                     When they confirm or correct them, call route_to_plugin again with those values in `parameters`.",
                    join_and(&statements)
                );
            }
            ResolutionOutcome::Invalid { problems } => {
                let _ = writeln!(
                    text,
                    "{heading} was not called because some arguments are wrong:"
                );
                for problem in problems {
                    match problem {
                        ArgumentProblem::UnknownParameter { name } => {
                            let _ = writeln!(
                                text,
                                "- {name}: {} has no such parameter; its parameters are: {}",
                                self.capability_id,
                                self.parameter_order.join(", ")
                            );
                        }
                        ArgumentProblem::WrongType {
                            parameter,
                            value,
                            expected,
                        } => {
                            let _ = writeln!(text, "- {parameter}: {value} is not {expected}");
                        }
                    }
                }
                text.push_str("Fix them and call route_to_plugin again.");
            }
        }
        text.trim_end().to_owned()
    }

    /// The message of a confirmation button or reaction for the uncertain values, e.g.
    /// "Use these for buy / place_order?\n• address: 123 Main St (from your profile)".
    /// `None` unless the outcome is `Uncertain`.
    pub fn confirmation_prompt(&self) -> Option<String> {
        let ResolutionOutcome::Uncertain { uncertain, .. } = &self.outcome else {
            return None;
        };
        let mut text = format!("Use these for {} / {}?", self.plugin_id, self.capability_id);
        for value in uncertain {
            let _ = write!(
                text,
                "\n• {}: {} ({})",
                value.name,
                display_value(&value.value),
                value.source.for_member()
            );
        }
        Some(text)
    }

    /// The question for the member when required values are missing (seed 000 §3.6: the
    /// pending plugin call asks it directly and retries with the answer). `None` unless the
    /// outcome is `Missing`.
    pub fn question_for_member(&self) -> Option<String> {
        let ResolutionOutcome::Missing { missing, .. } = &self.outcome else {
            return None;
        };
        let target = format!("{} / {}", self.plugin_id, self.capability_id);
        Some(match missing.as_slice() {
            [only] => format!(
                "For {target} I still need {}. What should I use?",
                ask_for(only)
            ),
            several => {
                let mut text = format!("For {target} I still need:");
                for parameter in several {
                    let _ = write!(text, "\n• {}", ask_for(parameter));
                }
                text.push_str("\nWhat should I use?");
                text
            }
        })
    }

    /// The same resolution with every value of a `sensitive` parameter replaced by
    /// [`REDACTED`]: what telemetry and logs may keep.
    pub fn redacted(&self) -> Resolution {
        let mut redacted = self.clone();
        let sensitive = &self.sensitive;
        let hide = |name: &str, value: &mut Value| {
            if sensitive.contains(name) {
                *value = Value::String(REDACTED.to_owned());
            }
        };
        let hide_call = |call: &mut ResolvedCall| {
            for (name, resolved) in &mut call.values {
                hide(name, &mut resolved.value);
            }
        };
        match &mut redacted.outcome {
            ResolutionOutcome::Ready(call) => hide_call(call),
            ResolutionOutcome::Missing { have, .. } => hide_call(have),
            ResolutionOutcome::Uncertain { uncertain, have } => {
                hide_call(have);
                for value in uncertain {
                    hide(&value.name, &mut value.value);
                }
            }
            ResolutionOutcome::Invalid { problems } => {
                for problem in problems {
                    if let ArgumentProblem::WrongType {
                        parameter, value, ..
                    } = problem
                    {
                        hide(parameter, value);
                    }
                }
            }
        }
        for ignored in &mut redacted.ignored {
            hide(&ignored.parameter, &mut ignored.value);
        }
        redacted
    }

    /// One line per value, in the manifest's order of parameters.
    fn write_values(&self, text: &mut String, call: &ResolvedCall, to_confirm: &[String]) {
        for name in &self.parameter_order {
            let Some(resolved) = call.values.get(name) else {
                continue;
            };
            let confirm_note = if to_confirm.contains(name) {
                "; confirm it with the user before use"
            } else {
                ""
            };
            let _ = writeln!(
                text,
                "- {name}: {} ({}{confirm_note})",
                display_value(&resolved.value),
                resolved.source.for_model()
            );
        }
    }

    fn write_ignored(&self, text: &mut String) {
        if self.ignored.is_empty() {
            return;
        }
        text.push_str("\nIgnored because of the wrong type (treated as missing):\n");
        for ignored in &self.ignored {
            let place = match ignored.source {
                ValueSource::Profile => format!("the member's profile key {:?}", ignored.key),
                ValueSource::Config | ValueSource::Message => {
                    format!("the plugin config key {:?}", ignored.key)
                }
            };
            let _ = writeln!(
                text,
                "- {}: {} in {place} is not {}",
                ignored.parameter, ignored.value, ignored.expected
            );
        }
    }
}

/// "phone (Contact phone number)", or just the name without a description.
fn ask_for(parameter: &MissingParameter) -> String {
    let description = parameter.description.trim().trim_end_matches('.');
    if description.is_empty() {
        parameter.name.clone()
    } else {
        format!("{} ({description})", parameter.name)
    }
}

fn description_suffix(description: &str, separator: &str) -> String {
    let description = description.trim().trim_end_matches('.');
    if description.is_empty() {
        String::new()
    } else {
        format!("{separator}{description}")
    }
}

/// "the user's message, the member's profile (key "phone") or the plugin config (key "phone")".
fn where_looked(parameter: &MissingParameter) -> String {
    let mut places = vec!["the user's message".to_owned()];
    if let Some(key) = &parameter.profile_key {
        places.push(format!("the member's profile (key {key:?})"));
    }
    let keys: Vec<String> = parameter
        .config_keys
        .iter()
        .map(|key| format!("{key:?}"))
        .collect();
    places.push(format!("the plugin config (key {})", keys.join(" or ")));
    join_or(&places)
}

fn join_or(items: &[String]) -> String {
    join_with(items, "or")
}

fn join_and(items: &[String]) -> String {
    join_with(items, "and")
}

fn join_with(items: &[String], conjunction: &str) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [rest @ .., last] => format!("{} {conjunction} {last}", rest.join(", ")),
    }
}
