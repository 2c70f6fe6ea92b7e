//! The scripts toolset: one tool per step of seed 002's graph, each reading and saving
//! the member's workflow, so the order is enforced here and not only by the prompt.
//!
//! `list_available_scripts` → `select_script` → `get_script_parameters` →
//! `set_script_parameters` → `run_script`. A step out of order is refused with a tool
//! result naming what is missing. `run_script` always asks the member first
//! (`ToolError::Suspended`, so the turn suspends durably like any confirmation), showing
//! the script and its exact final values; the approval runs those values, and only while
//! they are still the workflow's final values.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::manifest::{Script, ScriptCatalog};
use super::parameters::{check_changes, final_values, plain};
use super::runner::{ExecutionResult, RunLimits, run_script};
use super::workflow::{NextAction, WorkflowState, values_line};
use crate::config::ScriptsConfig;
use crate::llm::ToolSpec;
use crate::ports::{
    Decision, ScriptRun, ScriptRunOutcome, ScriptWorkflow, ScriptWorkflows, now_ms,
};
use crate::tools::{ToolContext, ToolError, ToolSuspension, ToolsProvider};

pub const LIST_SCRIPTS: &str = "list_available_scripts";
pub const SELECT_SCRIPT: &str = "select_script";
pub const GET_PARAMETERS: &str = "get_script_parameters";
pub const SET_PARAMETERS: &str = "set_script_parameters";
pub const RUN_SCRIPT: &str = "run_script";

/// The toolset's tool names, as `enable_local_tools` enables them.
pub const SCRIPT_TOOL_NAMES: &[&str] = &[
    LIST_SCRIPTS,
    SELECT_SCRIPT,
    GET_PARAMETERS,
    SET_PARAMETERS,
    RUN_SCRIPT,
];

/// What the model reads when the member declined a run, or did not answer in time.
pub const RUN_DECLINED: &str = "The family member declined running the script, so it did \
     not run. Ask whether they want to change something or stop.";
pub const RUN_EXPIRED: &str = "The family member did not approve running the script in \
     time, so it did not run. Ask them again if they still want it.";
pub const RUN_UNKNOWN: &str = "hearth stopped while running the approved script; whether it \
     completed is unknown. Tell the family member so they can check before running it again.";

/// A run waiting for the member's approval: exactly what they are shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct AwaitingRun {
    script: String,
    parameters: Map<String, Value>,
}

pub struct ScriptsToolset {
    catalog: Arc<ScriptCatalog>,
    workflows: Arc<dyn ScriptWorkflows>,
    settings: ScriptsConfig,
}

impl ScriptsToolset {
    pub fn new(
        catalog: Arc<ScriptCatalog>,
        workflows: Arc<dyn ScriptWorkflows>,
        settings: ScriptsConfig,
    ) -> Self {
        ScriptsToolset {
            catalog,
            workflows,
            settings,
        }
    }

    fn fresh_since_ms(&self) -> i64 {
        let ttl_ms = i64::try_from(self.settings.state_ttl_hours)
            .unwrap_or(i64::MAX / 3_600_000)
            .saturating_mul(3_600_000);
        now_ms().saturating_sub(ttl_ms)
    }

    async fn load(&self, tool: &str, context: &ToolContext) -> Result<WorkflowState, ToolError> {
        let stored = self
            .workflows
            .get(
                &context.conversation_key,
                &context.member_id,
                self.fresh_since_ms(),
            )
            .await
            .map_err(|error| ToolError::failed(tool, error))?;
        Ok(stored
            .and_then(|workflow| match serde_json::from_value(workflow.state) {
                Ok(state) => Some(state),
                Err(error) => {
                    tracing::warn!(%error, "unreadable script workflow dropped");
                    None
                }
            })
            .unwrap_or_default())
    }

    async fn save(
        &self,
        tool: &str,
        context: &ToolContext,
        state: &WorkflowState,
    ) -> Result<(), ToolError> {
        let state = serde_json::to_value(state).map_err(|error| ToolError::failed(tool, error))?;
        self.workflows
            .put(&ScriptWorkflow {
                conversation_key: context.conversation_key.clone(),
                member_id: context.member_id.clone(),
                state,
                updated_at_ms: now_ms(),
            })
            .await
            .map_err(|error| ToolError::failed(tool, error))
    }

    /// The selected script, or the tool result saying none is.
    fn selected<'a>(&'a self, state: &WorkflowState) -> Result<&'a Script, String> {
        let Some(name) = &state.selected else {
            return Err(
                "refused: no script is selected yet. Call list_available_scripts, let the \
                 member choose, then call select_script."
                    .into(),
            );
        };
        self.catalog.get(name).ok_or_else(|| {
            format!(
                "refused: the selected script {name:?} no longer exists; list the scripts again"
            )
        })
    }

    async fn list(&self, arguments: &Value, context: &ToolContext) -> Result<String, ToolError> {
        let query = arguments["query"].as_str().unwrap_or_default().trim();
        let task = arguments["task"]
            .as_str()
            .map(str::trim)
            .filter(|task| !task.is_empty())
            .unwrap_or(query);
        // Housekeeping of every member's forgotten workflows, now and then.
        if let Err(error) = self.workflows.expire_stale(self.fresh_since_ms()).await {
            tracing::warn!(%error, "stale script workflows not removed");
        }
        let mut found = self.catalog.search(query);
        let mut text = String::new();
        if found.is_empty() {
            text.push_str(&format!(
                "No script matches {query:?}. All the family's scripts:\n"
            ));
            found = self.catalog.scripts().iter().collect();
        }
        if found.is_empty() {
            return Ok("The family has no scripts.".into());
        }
        for script in &found {
            text.push_str(&format!("- {}: {}\n", script.name, script.description));
        }
        text.push_str("Ask the member which one they mean, then call select_script.");
        let state = WorkflowState {
            task: (!task.is_empty()).then(|| task.to_string()),
            offered: found.iter().map(|script| script.name.clone()).collect(),
            next_action: NextAction::AskForScriptChoice,
            ..WorkflowState::default()
        };
        self.save(LIST_SCRIPTS, context, &state).await?;
        Ok(text)
    }

    async fn select(&self, arguments: &Value, context: &ToolContext) -> Result<String, ToolError> {
        let name = arguments["name"].as_str().unwrap_or_default().trim();
        let Some(script) = self.catalog.get(name) else {
            return Ok(format!(
                "refused: there is no script {name:?}. Scripts: {}",
                self.catalog.names().join(", ")
            ));
        };
        let before = self.load(SELECT_SCRIPT, context).await?;
        // A new choice starts its parameters afresh; the task and offer stay.
        let state = WorkflowState {
            task: before.task,
            offered: before.offered,
            selected: Some(script.name.clone()),
            next_action: NextAction::PresentParameters,
            ..WorkflowState::default()
        };
        self.save(SELECT_SCRIPT, context, &state).await?;
        Ok(format!(
            "Selected {}: {}. Next call get_script_parameters and show the parameters to the \
             member.",
            script.name, script.description
        ))
    }

    async fn get_parameters(&self, context: &ToolContext) -> Result<String, ToolError> {
        let mut state = self.load(GET_PARAMETERS, context).await?;
        let script = match self.selected(&state) {
            Ok(script) => script,
            Err(refusal) => return Ok(refusal),
        };
        let mut text = format!("Parameters of {}:\n", script.name);
        if script.parameters.is_empty() {
            text.push_str("(none)\n");
        }
        for parameter in &script.parameters {
            let current = state
                .modifications
                .get(&parameter.name)
                .or(parameter.default.as_ref())
                .map(plain)
                .unwrap_or_else(|| "(no value)".into());
            let kind = serde_json::to_value(parameter.kind)
                .ok()
                .and_then(|kind| kind.as_str().map(str::to_string))
                .unwrap_or_default();
            let options = if parameter.options.is_empty() {
                String::new()
            } else {
                format!(" of {}", parameter.options.join(" | "))
            };
            text.push_str(&format!(
                "- {} ({kind}{options}{}): {current}{}\n",
                parameter.name,
                if parameter.required { ", required" } else { "" },
                if parameter.description.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", parameter.description)
                }
            ));
        }
        text.push_str(
            "Show these to the member and ask what to change; then call set_script_parameters \
             with their changes ({} to keep these values).",
        );
        state.parameter_definitions = Some(script.parameters.clone());
        if state.final_parameters.is_none() {
            state.next_action = NextAction::AskForParamModifications;
        }
        self.save(GET_PARAMETERS, context, &state).await?;
        Ok(text)
    }

    async fn set_parameters(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let mut state = self.load(SET_PARAMETERS, context).await?;
        let script = match self.selected(&state) {
            Ok(script) => script.clone(),
            Err(refusal) => return Ok(refusal),
        };
        if state.parameter_definitions.is_none() {
            return Ok(format!(
                "refused: the parameters of {} were not shown yet. Call get_script_parameters \
                 and show them to the member first.",
                script.name
            ));
        }
        let changes = match &arguments["changes"] {
            Value::Object(changes) => changes.clone(),
            Value::Null => Map::new(),
            other => {
                return Ok(format!(
                    "refused: changes must be an object of parameter name to value, found {other}"
                ));
            }
        };
        // Any change, good or bad, makes the values shown before stale.
        let had_final = state.final_parameters.take().is_some();
        let checked = match check_changes(&script, &changes) {
            Ok(checked) => checked,
            Err(problems) => {
                state.next_action = NextAction::HandleError;
                self.save(SET_PARAMETERS, context, &state).await?;
                return Ok(format!(
                    "refused, nothing changed{}:\n- {}\nTell the member and ask for valid values.",
                    if had_final {
                        " (the final parameters shown before no longer hold)"
                    } else {
                        ""
                    },
                    problems.join("\n- ")
                ));
            }
        };
        state.modifications.extend(checked);
        let text = match final_values(&script, &state.modifications) {
            Ok(values) => {
                let text = format!(
                    "Final parameters of {}: {}. Show them to the member; run_script asks their \
                     approval of exactly these values.",
                    script.name,
                    if values.is_empty() {
                        "none".to_string()
                    } else {
                        values_line(&values)
                    }
                );
                state.final_parameters = Some(values);
                state.next_action = NextAction::ConfirmExecution;
                text
            }
            Err(missing) => {
                state.next_action = NextAction::AskForParamModifications;
                format!(
                    "Saved. Still missing required parameters: {}. Ask the member for them.",
                    missing.join(", ")
                )
            }
        };
        self.save(SET_PARAMETERS, context, &state).await?;
        Ok(text)
    }

    async fn run(&self, context: &ToolContext) -> Result<String, ToolError> {
        let state = self.load(RUN_SCRIPT, context).await?;
        let script = match self.selected(&state) {
            Ok(script) => script,
            Err(refusal) => return Ok(refusal),
        };
        let Some(values) = state.final_parameters.clone() else {
            let step = if state.parameter_definitions.is_none() {
                "call get_script_parameters, show them to the member, then \
                 set_script_parameters"
            } else {
                "call set_script_parameters with the member's changes ({} for none)"
            };
            return Ok(format!(
                "refused: the final parameters of {} are not set; {step}.",
                script.name
            ));
        };
        let mut prompt = format!(
            "Run the family script {}?\n{}",
            script.name, script.description
        );
        for (name, value) in &values {
            prompt.push_str(&format!("\n• {name}: {}", plain(value)));
        }
        let awaiting = AwaitingRun {
            script: script.name.clone(),
            parameters: values.clone(),
        };
        let timeout_ms =
            i64::try_from(context.question_timeout.as_millis()).unwrap_or(i64::MAX / 2);
        Err(ToolError::Suspended(Box::new(ToolSuspension {
            prompt,
            action: RUN_SCRIPT.to_string(),
            arguments: json!({"script": script.name, "parameters": values}),
            state: serde_json::to_value(&awaiting)
                .map_err(|error| ToolError::failed(RUN_SCRIPT, error))?,
            expires_at_ms: now_ms().saturating_add(timeout_ms),
        })))
    }

    async fn resume_run(
        &self,
        work: &Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let awaiting: AwaitingRun = serde_json::from_value(work.clone())
            .map_err(|_| ToolError::NotResumable(RUN_SCRIPT.into()))?;
        let mut state = self.load(RUN_SCRIPT, context).await?;
        let ended = match decision {
            Some(Decision::Approved) => None,
            Some(Decision::Denied) => Some((ScriptRunOutcome::Declined, RUN_DECLINED)),
            Some(Decision::Expired) => Some((ScriptRunOutcome::Expired, RUN_EXPIRED)),
            None => Some((ScriptRunOutcome::Unknown, RUN_UNKNOWN)),
        };
        if let Some((outcome, text)) = ended {
            self.record_run(context, &awaiting, outcome, None).await;
            return Ok(text.into());
        }
        // Approved: but only the values that are still the workflow's final ones.
        if state.selected.as_deref() != Some(awaiting.script.as_str())
            || state.final_parameters.as_ref() != Some(&awaiting.parameters)
        {
            return Ok(format!(
                "not run: the script or its parameters changed after the member was asked to \
                 approve {}; show the final parameters again and call run_script.",
                awaiting.script
            ));
        }
        let Some(script) = self.catalog.get(&awaiting.script) else {
            return Ok(format!(
                "not run: the script {} no longer exists",
                awaiting.script
            ));
        };
        let limits = RunLimits {
            timeout: Duration::from_secs(
                script
                    .timeout_seconds
                    .unwrap_or(self.settings.default_timeout_seconds),
            ),
            max_output_bytes: self.settings.max_output_bytes,
        };
        let result = run_script(
            self.catalog.folder(),
            script,
            &awaiting.parameters,
            limits,
            context.idempotency_key.as_deref(),
        )
        .await;
        let (outcome, error) = match &result {
            Ok(result) if result.succeeded() => (ScriptRunOutcome::Done, None),
            Ok(result) => (ScriptRunOutcome::Failed, Some(failure(result))),
            Err(error) => (ScriptRunOutcome::Failed, Some(error.to_string())),
        };
        self.record_run(context, &awaiting, outcome, error).await;
        let text = match result {
            Ok(result) => {
                let text = result.describe();
                state.next_action = if result.succeeded() {
                    NextAction::SummarizeResult
                } else {
                    NextAction::HandleError
                };
                state.last_result = Some(result);
                text
            }
            Err(error) => {
                state.next_action = NextAction::HandleError;
                format!("error: {error}")
            }
        };
        self.save(RUN_SCRIPT, context, &state).await?;
        Ok(text)
    }
}

/// What a failed run's error says on the family page: how it ended and the end of its error
/// output, at most `FAILURE_CHARS`.
fn failure(result: &ExecutionResult) -> String {
    let ended = if result.timed_out {
        format!("stopped at its timeout after {} ms", result.duration_ms)
    } else {
        match result.exit_code {
            Some(code) => format!("exit code {code}"),
            None => "ended by a signal".to_string(),
        }
    };
    let errors = result.errors.trim();
    if errors.is_empty() {
        return ended;
    }
    let skip = errors.chars().count().saturating_sub(FAILURE_CHARS);
    format!("{ended}: {}", errors.chars().skip(skip).collect::<String>())
}

const FAILURE_CHARS: usize = 500;

impl ScriptsToolset {
    /// Keep a run that ended, once per its tool call; a run is never failed for it.
    async fn record_run(
        &self,
        context: &ToolContext,
        awaiting: &AwaitingRun,
        outcome: ScriptRunOutcome,
        error: Option<String>,
    ) {
        let at_ms = now_ms();
        let run = ScriptRun {
            run_key: context.idempotency_key.clone().unwrap_or_else(|| {
                format!("{}/{}/{at_ms}", context.conversation_key, context.member_id)
            }),
            conversation_key: context.conversation_key.clone(),
            member_id: context.member_id.clone(),
            script: awaiting.script.clone(),
            values: Value::Object(awaiting.parameters.clone()),
            outcome,
            error,
            at_ms,
        };
        if let Err(error) = self.workflows.record_run(&run).await {
            tracing::warn!(%error, script = %run.script, "script run not recorded");
        }
    }
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

#[async_trait]
impl ToolsProvider for ScriptsToolset {
    async fn tools(&self) -> Vec<ToolSpec> {
        let none = json!({"type": "object", "properties": {}});
        vec![
            spec(
                LIST_SCRIPTS,
                "Find the family's household scripts (backups, waking a computer, printing, \
                 the garden...) by words of their name or description. Step 1 of running a \
                 script: offer what it finds to the member.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "words to search for; empty lists every script"},
                    "task": {"type": "string", "description": "what the member wants done, in their words"}
                }}),
            ),
            spec(
                SELECT_SCRIPT,
                "Step 2: select the script the member chose.",
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "the script's name"}
                }, "required": ["name"]}),
            ),
            spec(
                GET_PARAMETERS,
                "Step 3: the selected script's parameters with their current values; show \
                 them to the member.",
                none.clone(),
            ),
            spec(
                SET_PARAMETERS,
                "Step 4: apply the member's changes to the parameters (checked against their \
                 types) and fix the final values; {} keeps the shown values.",
                json!({"type": "object", "properties": {
                    "changes": {"type": "object", "description": "parameter name to new value"}
                }}),
            ),
            spec(
                RUN_SCRIPT,
                "Step 5: run the selected script with its final parameters; the member is \
                 asked to approve first.",
                none,
            ),
        ]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        match name {
            LIST_SCRIPTS => self.list(arguments, context).await,
            SELECT_SCRIPT => self.select(arguments, context).await,
            GET_PARAMETERS => self.get_parameters(context).await,
            SET_PARAMETERS => self.set_parameters(arguments, context).await,
            RUN_SCRIPT => self.run(context).await,
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn resume(
        &self,
        name: &str,
        state: &Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        if name != RUN_SCRIPT {
            return Err(ToolError::NotResumable(name.to_string()));
        }
        self.resume_run(state, decision, context).await
    }

    async fn turn_note(&self, context: &ToolContext) -> Option<String> {
        let state = self.load(LIST_SCRIPTS, context).await.ok()?;
        (state != WorkflowState::default()).then(|| state.summary())
    }
}
