//! Where a member's family-script workflow stands (seed 002's `AgentState`): the task,
//! the scripts offered, the one selected, its parameter definitions once shown, the
//! member's changes, the final values, the last run and the next step. Stored after every
//! step (`ports::ScriptWorkflows`) and summed up for the model at the start of each turn.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::manifest::ScriptParameter;
use super::parameters::plain;
use super::runner::ExecutionResult;

/// What the model should do next in the conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextAction {
    /// Nothing is under way.
    #[default]
    None,
    /// Scripts were offered: the member picks one (then `select_script`).
    AskForScriptChoice,
    /// A script is selected: `get_script_parameters`, and show them.
    PresentParameters,
    /// Parameters were shown: the member's changes (`set_script_parameters`, `{}` for none).
    AskForParamModifications,
    /// Final values are set and shown: `run_script` asks the member's approval.
    ConfirmExecution,
    /// The script ran: tell the member how it went.
    SummarizeResult,
    /// Something went wrong: explain and ask how to go on.
    HandleError,
}

impl NextAction {
    fn advice(self) -> &'static str {
        match self {
            NextAction::None => "nothing; a new request starts with list_available_scripts",
            NextAction::AskForScriptChoice => {
                "ask the member which offered script they mean, then call select_script"
            }
            NextAction::PresentParameters => {
                "call get_script_parameters and show the parameters to the member"
            }
            NextAction::AskForParamModifications => {
                "ask what they want to change, then call set_script_parameters with their \
                 changes ({} to keep the shown values)"
            }
            NextAction::ConfirmExecution => {
                "call run_script; it asks the member to approve these exact values"
            }
            NextAction::SummarizeResult => "tell the member how the last run went",
            NextAction::HandleError => "explain the problem and ask the member how to go on",
        }
    }
}

/// One member's workflow in one conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Names of the scripts last offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offered: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<String>,
    /// The selected script's parameters, once shown (`get_script_parameters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_definitions: Option<Vec<ScriptParameter>>,
    /// The member's changes to the defaults, checked.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub modifications: Map<String, Value>,
    /// The values a run uses, set by `set_script_parameters`; dropped by any later change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_parameters: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<ExecutionResult>,
    #[serde(default)]
    pub next_action: NextAction,
}

impl WorkflowState {
    /// What the model reads at the start of a turn.
    pub fn summary(&self) -> String {
        let mut lines = vec!["Family script workflow with this member (saved state):".to_string()];
        if let Some(task) = &self.task {
            lines.push(format!("- task: {task}"));
        }
        if !self.offered.is_empty() {
            lines.push(format!("- scripts offered: {}", self.offered.join(", ")));
        }
        lines.push(format!(
            "- selected script: {}",
            self.selected.as_deref().unwrap_or("none yet")
        ));
        if self.selected.is_some() {
            lines.push(format!(
                "- parameters shown: {}",
                if self.parameter_definitions.is_some() {
                    "yes"
                } else {
                    "not yet"
                }
            ));
        }
        if !self.modifications.is_empty() {
            lines.push(format!(
                "- member's changes: {}",
                values_line(&self.modifications)
            ));
        }
        match &self.final_parameters {
            Some(values) => lines.push(format!(
                "- final parameters (not run yet unless a result follows): {}",
                if values.is_empty() {
                    "none".to_string()
                } else {
                    values_line(values)
                }
            )),
            None if self.selected.is_some() => {
                lines.push("- final parameters: not set".to_string())
            }
            None => {}
        }
        if let Some(result) = &self.last_result {
            let outcome = if result.timed_out {
                "timed out".to_string()
            } else {
                match result.exit_code {
                    Some(code) => format!("exit code {code}"),
                    None => "ended by a signal".to_string(),
                }
            };
            lines.push(format!("- last run: {} ({outcome})", result.script));
        }
        lines.push(format!(
            "- next step: {} ({})",
            serde_json::to_value(self.next_action)
                .ok()
                .and_then(|value| value.as_str().map(str::to_string))
                .unwrap_or_default(),
            self.next_action.advice()
        ));
        lines.join("\n")
    }
}

/// `name = value, ...`, by name.
pub fn values_line(values: &Map<String, Value>) -> String {
    values
        .iter()
        .map(|(name, value)| format!("{name} = {}", plain(value)))
        .collect::<Vec<_>>()
        .join(", ")
}
