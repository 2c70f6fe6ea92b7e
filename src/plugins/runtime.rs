//! `PluginRuntime`: running a plugin call from start to end (seed 000 §3.5–3.6, seed 001).
//!
//! Resolve the parameters; if something is missing, remember the call for the member's
//! next message (`PendingPluginCalls`) and tell the model what to ask; if a value is
//! uncertain, stop the turn for the member's confirmation (the same buttons and reactions
//! as any tool's) and, once approved, call with exactly those values; otherwise call the
//! plugin, post-process its answer when the capability says so (then it goes straight to
//! the member), and record every call, resolved values redacted, as telemetry.
//!
//! The fast path of §3.6: when the member's next message answers the single missing
//! value, `answer_pending` completes the call without asking the model anything.

use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::catalog::PluginCatalog;
use super::invoke::{PluginAnswer, PluginCallError, PluginCallRequest, PluginInvoker, PluginUser};
use super::manifest::{Capability, PluginManifest};
use super::parameter_value::{Fitted, fit_to_type};
use super::resolver::{Resolution, ResolutionOutcome, ValueSource, resolve_parameters};
use crate::family::Family;
use crate::llm::{CallOrigin, ChatMessage, ChatRequest, GenerateChat};
use crate::ports::{
    Decision, PendingPluginCall, PendingPluginCalls, TelemetryEvent, TelemetrySink, UserProfiles,
    now_ms,
};
use crate::tools::{ToolContext, ToolError, ToolSuspension};

pub const ROUTE_TO_PLUGIN: &str = "route_to_plugin";

/// A pending call longer than this is forgotten: the member has moved on.
const PENDING_FOR: Duration = Duration::from_secs(30 * 60);
/// A reply longer than this is a sentence, not the value a question asked for.
const MAX_ANSWER_CHARS: usize = 200;

pub struct PluginRuntime {
    pub catalog: PluginCatalog,
    pub invoker: PluginInvoker,
    pub profiles: Arc<dyn UserProfiles>,
    pub pending: Arc<dyn PendingPluginCalls>,
    pub family: Arc<Family>,
    pub broker: Recipient<GenerateChat>,
    pub telemetry: Arc<dyn TelemetrySink>,
}

/// A pending plugin call the member's message completes (`pending_completion`).
pub struct PendingCompletion {
    manifest: Arc<PluginManifest>,
    capability: Capability,
    parameters: Map<String, Value>,
}

impl PendingCompletion {
    /// The call as `route_to_plugin` arguments, for the profile's confirmation rules.
    pub fn as_route_arguments(&self) -> Value {
        json!({
            "plugin_id": self.manifest.id,
            "capability_id": self.capability.id,
            "parameters": self.parameters,
        })
    }
}

/// What a tool call suspended on uncertain values needs to go on.
#[derive(Debug, Serialize, Deserialize)]
struct AwaitingConfirmation {
    plugin_id: String,
    capability_id: String,
    parameters: Map<String, Value>,
}

fn tool_error(message: String) -> ToolError {
    ToolError::InvalidArguments {
        tool: ROUTE_TO_PLUGIN.into(),
        message,
    }
}

impl PluginRuntime {
    fn plugin(
        &self,
        plugin_id: &str,
        capability_id: Option<&str>,
    ) -> Result<(Arc<PluginManifest>, Capability), ToolError> {
        let manifest = self.catalog.manifest(plugin_id).ok_or_else(|| {
            tool_error(format!(
                "there is no plugin {plugin_id:?}; plugins: {}",
                self.catalog.plugin_ids().join(", ")
            ))
        })?;
        let capability = match capability_id {
            Some(id) => manifest.capability(id).cloned(),
            None if manifest.capabilities.len() == 1 => manifest.capabilities.first().cloned(),
            None => None,
        }
        .ok_or_else(|| {
            let ids: Vec<&str> = manifest
                .capabilities
                .iter()
                .map(|c| c.id.as_str())
                .collect();
            tool_error(format!(
                "plugin {plugin_id:?} has no capability {:?}; its capabilities: {}",
                capability_id.unwrap_or(""),
                ids.join(", ")
            ))
        })?;
        Ok((manifest, capability))
    }

    async fn resolve(
        &self,
        manifest: &PluginManifest,
        capability: &Capability,
        arguments: &Map<String, Value>,
        context: &ToolContext,
    ) -> Result<Resolution, ToolError> {
        // Read again at every call: an edit of config.yml applies without a restart.
        let config = self
            .catalog
            .read_config(&manifest.id)
            .await
            .map_err(|error| ToolError::Failed {
                tool: ROUTE_TO_PLUGIN.into(),
                message: error.to_string(),
            })?;
        let profile = self
            .profiles
            .get(&context.member_id)
            .await
            .map_err(|error| ToolError::Failed {
                tool: ROUTE_TO_PLUGIN.into(),
                message: error.to_string(),
            })?;
        let resolution = resolve_parameters(manifest, capability, arguments, &profile, &config);
        self.record(context, "plugin_resolution", json!(resolution.redacted()));
        Ok(resolution)
    }

    /// The `route_to_plugin` tool: resolve, then call, ask, or stop for confirmation.
    pub async fn route(
        &self,
        plugin_id: &str,
        capability_id: Option<&str>,
        arguments: &Map<String, Value>,
        context: &ToolContext,
        llm_name: &str,
    ) -> Result<String, ToolError> {
        let (manifest, capability) = self.plugin(plugin_id, capability_id)?;
        let resolution = self
            .resolve(&manifest, &capability, arguments, context)
            .await?;
        match &resolution.outcome {
            ResolutionOutcome::Ready(call) => {
                self.call(&manifest, &capability, call.parameters(), context, llm_name)
                    .await
            }
            ResolutionOutcome::Invalid { .. } => Err(tool_error(resolution.model_text())),
            ResolutionOutcome::Missing { have, missing, .. } => {
                let missing: Vec<String> = missing.iter().map(|m| m.name.clone()).collect();
                let question = resolution.question_for_member().unwrap_or_default();
                // Only values the member gave count as given: profile and config values
                // are looked up, and confirmed, again.
                let given = have
                    .values
                    .iter()
                    .filter(|(_, value)| value.source == ValueSource::Message)
                    .map(|(name, value)| (name.clone(), value.value.clone()))
                    .collect();
                self.remember(&manifest, &capability, given, missing, question, context)
                    .await;
                Ok(resolution.model_text())
            }
            ResolutionOutcome::Uncertain { .. } => {
                let call = resolution.call_if_confirmed().unwrap_or_default();
                let prompt = resolution.confirmation_prompt().unwrap_or_default();
                let waiting = AwaitingConfirmation {
                    plugin_id: manifest.id.clone(),
                    capability_id: capability.id.clone(),
                    parameters: call.parameters(),
                };
                // The asking profile's `confirmation_timeout_seconds`, like any confirmation.
                let timeout_ms =
                    i64::try_from(context.question_timeout.as_millis()).unwrap_or(i64::MAX / 2);
                Err(ToolError::Suspended(Box::new(ToolSuspension {
                    prompt,
                    action: format!("{}.{}", manifest.id, capability.id),
                    arguments: Value::Object(call.parameters()),
                    state: serde_json::to_value(&waiting).unwrap_or_default(),
                    expires_at_ms: now_ms().saturating_add(timeout_ms),
                })))
            }
        }
    }

    /// The member answered the confirmation of uncertain values.
    pub async fn resume(
        &self,
        state: &Value,
        decision: Option<Decision>,
        context: &ToolContext,
        llm_name: &str,
    ) -> Result<String, ToolError> {
        let waiting: AwaitingConfirmation = serde_json::from_value(state.clone())
            .map_err(|_| ToolError::NotResumable(ROUTE_TO_PLUGIN.into()))?;
        self.record(
            context,
            "plugin_confirmation",
            json!({"plugin": waiting.plugin_id, "capability": waiting.capability_id,
                   "decision": decision.map(Decision::as_str)}),
        );
        match decision {
            Some(Decision::Approved) => {
                let (manifest, capability) =
                    self.plugin(&waiting.plugin_id, Some(&waiting.capability_id))?;
                // Exactly the values the member saw and approved.
                self.call(
                    &manifest,
                    &capability,
                    waiting.parameters,
                    context,
                    llm_name,
                )
                .await
            }
            Some(Decision::Denied) => Ok(format!(
                "The family member did not confirm the values for {} / {}, so it was not \
                 called. Ask them for the right values.",
                waiting.plugin_id, waiting.capability_id
            )),
            Some(Decision::Expired) => Ok(format!(
                "The family member did not confirm the values for {} / {} in time, so it was \
                 not called.",
                waiting.plugin_id, waiting.capability_id
            )),
            None => Ok(format!(
                "hearth stopped while calling {} / {} with approved values; whether it \
                 completed is unknown. Tell the family member so they can check.",
                waiting.plugin_id, waiting.capability_id
            )),
        }
    }

    /// Keep the call, with the values taken as given, for the member's next message.
    async fn remember(
        &self,
        manifest: &PluginManifest,
        capability: &Capability,
        parameters: Map<String, Value>,
        missing: Vec<String>,
        question: String,
        context: &ToolContext,
    ) {
        let now = now_ms();
        let call = PendingPluginCall {
            conversation_key: context.conversation_key.clone(),
            member_id: context.member_id.clone(),
            plugin_id: manifest.id.clone(),
            capability_id: capability.id.clone(),
            parameters,
            missing,
            question,
            created_at_ms: now,
            expires_at_ms: now.saturating_add(PENDING_FOR.as_millis() as i64),
        };
        if let Err(error) = self.pending.put(&call).await {
            tracing::warn!(%error, "pending plugin call not stored");
        }
    }

    /// §3.6's fast path, first half: when the member's message is a valid value for the
    /// one parameter a pending call of theirs lacks (of that parameter's type: a number, yes
    /// or no, one of an enum's values, or text that is not a command), the complete call it
    /// makes. `None` when there is no such call or the message is not such a value: it is
    /// then an ordinary turn and the pending call stays.
    pub async fn pending_completion(
        &self,
        context: &ToolContext,
        text: &str,
    ) -> Option<PendingCompletion> {
        let answer = text.trim();
        if answer.is_empty()
            || answer.starts_with('/')
            || answer.starts_with('!')
            || answer.ends_with('?')
            || answer.contains('\n')
            || answer.chars().count() > MAX_ANSWER_CHARS
        {
            return None;
        }
        let pending = self
            .pending
            .peek(&context.conversation_key, &context.member_id, now_ms())
            .await
            .ok()??;
        let [missing] = pending.missing.as_slice() else {
            return None;
        };
        let (manifest, capability) = self
            .plugin(&pending.plugin_id, Some(&pending.capability_id))
            .ok()?;
        // The value must be one of the parameter's type on its own: no other source may
        // stand in for a reply that is not one.
        let parameter = capability
            .parameters
            .iter()
            .find(|parameter| parameter.name == *missing)?;
        let Fitted::Value(value) = fit_to_type(&parameter.kind, &Value::String(answer.into()))
        else {
            return None;
        };
        let mut arguments = pending.parameters.clone();
        arguments.insert(missing.clone(), value);
        let resolution = self
            .resolve(&manifest, &capability, &arguments, context)
            .await
            .ok()?;
        // Anything but a complete, certain call goes the usual way, through the model.
        let ResolutionOutcome::Ready(call) = resolution.outcome else {
            return None;
        };
        Some(PendingCompletion {
            manifest,
            capability,
            parameters: call.parameters(),
        })
    }

    /// §3.6's fast path, second half: take the member's pending call, once (a second
    /// message cannot run it again); `false` when it was taken meanwhile.
    pub async fn take_pending(&self, context: &ToolContext) -> bool {
        matches!(
            self.pending
                .take_valid(&context.conversation_key, &context.member_id, now_ms())
                .await,
            Ok(Some(_))
        )
    }

    /// §3.6's fast path, last: call the plugin with the completed values; the answer for
    /// the member.
    pub async fn run_completion(
        &self,
        completion: PendingCompletion,
        context: &ToolContext,
        llm_name: &str,
    ) -> String {
        let PendingCompletion {
            manifest,
            capability,
            parameters,
        } = completion;
        tracing::info!(plugin = %manifest.id, capability = %capability.id, "pending plugin call completed by the member's answer");
        match self
            .call(&manifest, &capability, parameters, context, llm_name)
            .await
        {
            Ok(text) => text,
            Err(ToolError::ReplyDirectly(text)) => text,
            Err(error) => format!("Sorry, I couldn't complete that: {error}"),
        }
    }

    /// Call the plugin with resolved `parameters`.
    async fn call(
        &self,
        manifest: &PluginManifest,
        capability: &Capability,
        parameters: Map<String, Value>,
        context: &ToolContext,
        llm_name: &str,
    ) -> Result<String, ToolError> {
        let request = PluginCallRequest {
            plugin_id: manifest.id.clone(),
            capability_id: capability.id.clone(),
            parameters,
            user: PluginUser {
                id: context.member_id.clone(),
                name: self.family.display_name(&context.member_id),
            },
            conversation_id: context.conversation_key.clone(),
            idempotency_key: context.idempotency_key.clone(),
        };
        let started = std::time::Instant::now();
        let answer = self.invoker.invoke(manifest, &request).await;
        let outcome = match &answer {
            Ok(PluginAnswer::Text(_)) => "ok".to_string(),
            Ok(PluginAnswer::AskUser { .. }) => "ask_user".to_string(),
            Err(error) => error.to_string(),
        };
        self.record(
            context,
            "plugin_call",
            json!({"plugin": manifest.id, "capability": capability.id, "outcome": outcome,
                   "latency_ms": started.elapsed().as_millis() as u64}),
        );
        match answer {
            Ok(PluginAnswer::Text(text)) if capability.post_process => {
                let prompt = capability.post_process_prompt.clone().unwrap_or_default();
                let refined = self.post_process(&prompt, &text, context, llm_name).await;
                // Written for the member: it goes to them as it is.
                Err(ToolError::ReplyDirectly(refined))
            }
            Ok(PluginAnswer::Text(text)) => Ok(text),
            Ok(PluginAnswer::AskUser { missing, text }) => {
                // The plugin was called with these, so each was given or confirmed.
                self.remember(
                    manifest,
                    capability,
                    request.parameters.clone(),
                    missing.clone(),
                    text.clone(),
                    context,
                )
                .await;
                Ok(format!(
                    "The {} plugin needs more before it can act: {}. Its question: {text} \
                     Ask the family member, then call it again with their answer.",
                    manifest.id,
                    missing.join(", ")
                ))
            }
            // The member hears what went wrong, whatever the model would make of it.
            Err(error) => Err(ToolError::ReplyDirectly(failure_reply(&error))),
        }
    }

    /// One LLM call: the capability's prompt as system, the plugin's output as user.
    async fn post_process(
        &self,
        prompt: &str,
        output: &str,
        context: &ToolContext,
        llm_name: &str,
    ) -> String {
        let request = ChatRequest {
            messages: vec![ChatMessage::system(prompt), ChatMessage::user(output)],
            ..ChatRequest::default()
        };
        let generated = self
            .broker
            .send(GenerateChat {
                llm_name: llm_name.to_string(),
                fallback_llm_name: None,
                request,
                origin: CallOrigin {
                    profile_id: Some(context.profile_id.clone()),
                    conversation_key: Some(context.conversation_key.clone()),
                    member_id: Some(context.member_id.clone()),
                },
                listener: None,
            })
            .await;
        match generated {
            Ok(Ok(response)) if !response.content.trim().is_empty() => response.content,
            other => {
                // The plugin's own words are better than nothing.
                tracing::warn!(outcome = ?other.map(|r| r.map(|_| ())), "post-processing failed; the plugin's output goes as it is");
                output.to_string()
            }
        }
    }

    fn record(&self, context: &ToolContext, stage: &str, payload: Value) {
        self.telemetry.record(TelemetryEvent::Stage {
            at_ms: now_ms(),
            conversation_key: context.conversation_key.clone(),
            stage: stage.to_string(),
            payload,
        });
    }
}

/// What the member is told when a plugin call fails.
fn failure_reply(error: &PluginCallError) -> String {
    match error {
        PluginCallError::Timeout { .. } => format!(
            "Sorry, I couldn't complete that: {error}. It may have acted anyway, so please \
             check before asking again."
        ),
        _ => format!("Sorry, I couldn't complete that: {error}."),
    }
}
