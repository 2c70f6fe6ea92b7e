//! The ToolExecutor: runs a plan from its current step. `Respond(pre)` is told as its tool
//! call starts (a message of its own on Telegram and Matrix, said once), `ToolCall`
//! passes the policy and then runs through the profile's tools stack (so `confirm_tools`
//! asks the member first, and the call is made at most once: it is marked `in_progress` with
//! its idempotency key before it starts, and a plan found in that state after a stop is told
//! as of unknown outcome, never run again; a call still `blocked` never started, so an
//! approval of it runs it however often the turn is tried, and without its answer it is
//! asked anew), `Respond(post)` words the result, and `AskUser`
//! stops the plan in `waiting_user`. What has effects is stored before it is shown or done
//! (a call's start and end, a question, a suspension); the plan ends stored with its answer,
//! so a retry of its message after a stop says that answer again.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::engine::{IntentsEngine, Interaction};
use super::planner::{POST, PRE, Planner, render};
use super::policy::{PolicyDecision, PolicyRequest};
use crate::config::FamilyRole;
use crate::ids::MemberId;
use crate::ports::{
    AskedApproval, Decision, PendingConfirmation, PlanExecution, PlanStep, StepStatus,
    canceled_plan, now_ms,
};
use crate::tools::{ToolContext, ToolError, render_call_for_people};
use crate::turn::{
    SLASH_COMMAND_DECLINED, SLASH_COMMAND_EXPIRED, TellMember, Told, TurnError, TurnOutcome,
    TurnResult,
};

/// What the member hears when a call was running as hearth stopped.
pub const INTERRUPTED_REPLY: &str = "I stopped while doing that, so I don't know whether it \
     went through. Please check before asking again.";
/// What a child hears when a parent declined their request.
pub const PARENT_DECLINED_REPLY: &str = "A parent declined that request, so nothing was done.";
/// What a child hears when no parent answered in time.
pub const PARENT_EXPIRED_REPLY: &str =
    "No parent answered in time, so nothing was done. You can ask again later.";
/// The error template when an intent has none.
const DEFAULT_ERROR: &str = "Sorry, that didn't work: {error}";

/// How the plan's tool call went.
enum CallOutcome {
    Done(String),
    Failed(String),
}

impl IntentsEngine {
    /// Run `plan` from its current step until it ends, asks the member, or waits for a
    /// confirmation. `approval` answers a confirmation of the current tool call.
    pub(super) async fn drive(
        &self,
        turn: &Interaction<'_>,
        mut plan: PlanExecution,
        mut approval: Option<Option<Decision>>,
    ) -> Result<TurnOutcome, TurnError> {
        // Ended before hearth stopped, the answer not yet stored with its message: said
        // again, nothing run or asked again.
        if let Some(answer) = plan.answer.clone() {
            turn.rec.skipped("policy_check", "the plan had ended");
            turn.rec.skipped("tool_execute", "the plan had ended");
            return Ok(self.answered(turn, answer, false));
        }
        // What the answer says before the outcome (a `pre` not told on its own).
        let mut said: Vec<String> = Vec::new();
        let mut policy_recorded = false;
        let mut call_recorded = false;
        while plan.current_index < plan.steps.len() {
            let index = plan.current_index;
            let now = now_ms();
            let execution = plan.steps[index].clone();
            match (&execution.step, execution.status) {
                (_, StepStatus::Completed | StepStatus::Failed | StepStatus::Canceled) => {}
                (PlanStep::AskUser { prompt, .. }, _) => {
                    let step = &mut plan.steps[index];
                    step.status = StepStatus::WaitingUser;
                    step.started_at_ms.get_or_insert(now);
                    plan.updated_at_ms = now;
                    plan.waiting_until_ms = Some(self.profile.processing.answer_deadline_ms(now));
                    self.deps.plans.save_plan(&mut plan).await?;
                    if !policy_recorded {
                        turn.rec
                            .skipped("policy_check", "asking the member for a parameter");
                    }
                    turn.rec
                        .skipped("tool_execute", "asking the member for a parameter");
                    said.push(prompt.clone());
                    return Ok(self.answered(turn, said.join("\n\n"), true));
                }
                (PlanStep::Respond { when, message }, _) => {
                    // A `pre` before a tool call is told as the call starts
                    // (`tell_before_call`): never when policy or a person stops the call.
                    let before_call = when == PRE
                        && matches!(
                            plan.steps.get(index + 1).map(|next| &next.step),
                            Some(PlanStep::ToolCall { .. })
                        );
                    let text = if when == PRE {
                        message.clone()
                    } else {
                        self.word_outcome(turn, &plan).await
                    };
                    if !before_call && !text.trim().is_empty() {
                        said.push(text.clone());
                    }
                    let step = &mut plan.steps[index];
                    step.status = StepStatus::Completed;
                    step.ended_at_ms = Some(now);
                    if when == POST {
                        step.step = PlanStep::Respond {
                            when: when.clone(),
                            message: text,
                        };
                    }
                }
                (PlanStep::ToolCall { tool_name, params }, status) => {
                    let arguments = json!(params);
                    let decision = approval.take();
                    match (status, decision) {
                        (StepStatus::InProgress, _) => {
                            tracing::warn!(plan = %plan.plan_id, "a tool call was running when hearth stopped; not run again");
                            turn.rec.record(
                                "tool_execute",
                                super::telemetry::Level::Warn,
                                json!({"tool_name": tool_name, "success": null, "error": "interrupted"}),
                            );
                            return self
                                .stop_plan(
                                    turn,
                                    plan,
                                    index,
                                    "interrupted",
                                    INTERRUPTED_REPLY,
                                    said,
                                )
                                .await;
                        }
                        (StepStatus::Blocked, Some(Some(Decision::Approved))) => {}
                        (
                            StepStatus::Blocked,
                            Some(Some(refused @ (Decision::Denied | Decision::Expired))),
                        ) => {
                            let escalated = execution.escalation.is_some();
                            let (error, reply) = match (refused, escalated) {
                                (Decision::Expired, true) => ("expired", PARENT_EXPIRED_REPLY),
                                (Decision::Expired, false) => ("expired", SLASH_COMMAND_EXPIRED),
                                (_, true) => ("declined", PARENT_DECLINED_REPLY),
                                (_, false) => ("declined", SLASH_COMMAND_DECLINED),
                            };
                            turn.rec.skipped("tool_execute", error);
                            return self.stop_plan(turn, plan, index, error, reply, said).await;
                        }
                        // A `blocked` call never started (it is `in_progress` before it
                        // does), so nothing about it is in doubt; without its answer it is
                        // asked anew. `(Blocked, None)`: the message is tried again, so its
                        // confirmation was never stored (a stored one suspends the message,
                        // and only its answer resumes it): nobody saw it.
                        // `(Blocked, Some(None))`: it was answered, and hearth stopped after
                        // the turn took the answer and before the call started, so the
                        // answer is not known any more.
                        _ => {
                            let request = PolicyRequest {
                                intent_id: &plan.intent_id,
                                role: turn.role,
                                params,
                                local_time: crate::clock::now()
                                    .with_timezone(&self.profile.processing.timezone)
                                    .time(),
                            };
                            let decision = self.policy.validate(&request);
                            policy_recorded = true;
                            let (allowed, violations) = match &decision {
                                PolicyDecision::Allow => (true, Vec::new()),
                                PolicyDecision::Deny { message }
                                | PolicyDecision::Escalate { message } => {
                                    (false, vec![message.clone()])
                                }
                            };
                            turn.rec.info(
                                "policy_check",
                                json!({"allowed": allowed, "decision": decision.label(),
                                       "violations": violations, "requires_escalation":
                                       matches!(decision, PolicyDecision::Escalate { .. })}),
                            );
                            match decision {
                                PolicyDecision::Allow => {}
                                PolicyDecision::Deny { message } => {
                                    turn.rec.skipped("tool_execute", "denied by policy");
                                    let reply = format!("I can't process that request: {message}");
                                    return self
                                        .stop_plan(
                                            turn,
                                            plan,
                                            index,
                                            "denied by policy",
                                            &reply,
                                            said,
                                        )
                                        .await;
                                }
                                PolicyDecision::Escalate { message } => {
                                    return self.escalate(turn, plan, index, &message, said).await;
                                }
                            }
                            if let Some(prompt) = self
                                .tools
                                .confirmation_prompt(
                                    tool_name,
                                    &arguments,
                                    &self.tool_context(turn, None),
                                )
                                .await
                            {
                                turn.rec.skipped(
                                    "tool_execute",
                                    "waiting for the member's confirmation",
                                );
                                let step = &mut plan.steps[index];
                                step.status = StepStatus::Blocked;
                                step.started_at_ms = Some(now);
                                plan.updated_at_ms = now;
                                self.deps.plans.save_plan(&mut plan).await?;
                                return Ok(self.suspend(
                                    turn,
                                    &plan,
                                    tool_name,
                                    arguments,
                                    prompt,
                                    Vec::new(),
                                ));
                            }
                        }
                    }
                    if !policy_recorded {
                        turn.rec.info(
                            "policy_check",
                            json!({"allowed": true, "decision": if execution.escalation.is_some() {
                                "approved_by_parent"
                            } else {
                                "approved_by_member"
                            }}),
                        );
                        policy_recorded = true;
                    }
                    said.extend(self.tell_before_call(turn, &plan, index).await?);
                    let outcome = self
                        .call(turn, &mut plan, index, tool_name, &arguments)
                        .await?;
                    call_recorded = true;
                    if let CallOutcome::Failed(error) = &outcome {
                        tracing::info!(plan = %plan.plan_id, %error, "the plan's tool call failed");
                    }
                }
            }
            // Stored with the answer below, not step by step: what comes before a call is
            // done again after a stop, and a call stores its own progress (`call`).
            plan.current_index += 1;
            plan.updated_at_ms = now_ms();
        }
        if !policy_recorded {
            turn.rec.skipped("policy_check", "no tool call left");
        }
        if !call_recorded {
            turn.rec.skipped("tool_execute", "no tool call left");
        }
        let reply = if said.is_empty() {
            "Done.".to_string()
        } else {
            said.join("\n\n")
        };
        plan.answer = Some(reply.clone());
        self.deps.plans.save_plan(&mut plan).await?;
        Ok(self.answered(turn, reply, false))
    }

    /// The policy wants a parent's approval of the call of step `index`: the step waits
    /// (`blocked`) in a confirmation any parent may answer from their own chat, bound to
    /// this exact call; the member is told a parent was asked.
    async fn escalate(
        &self,
        turn: &Interaction<'_>,
        mut plan: PlanExecution,
        index: usize,
        message: &str,
        said: Vec<String>,
    ) -> Result<TurnOutcome, TurnError> {
        let PlanStep::ToolCall { tool_name, params } = plan.steps[index].step.clone() else {
            return Err(TurnError::BadTurnState(
                "escalated step is not a tool call".into(),
            ));
        };
        let parents = self.parents(&turn.inbound.member_id);
        if parents.is_empty() {
            turn.rec.skipped("tool_execute", "no parent to ask");
            let reply = format!(
                "I can't do that without a parent's approval, and no parent is set up to \
                 give it: {message}"
            );
            return self
                .stop_plan(turn, plan, index, "no parent to ask", &reply, said)
                .await;
        }
        turn.rec
            .skipped("tool_execute", "waiting for a parent's approval");
        let now = now_ms();
        let step = &mut plan.steps[index];
        step.status = StepStatus::Blocked;
        step.started_at_ms = Some(now);
        step.escalation = Some(message.to_string());
        plan.updated_at_ms = now;
        self.deps.plans.save_plan(&mut plan).await?;
        let arguments = json!(params);
        let call = self
            .tools
            .render_call(&tool_name, &arguments, &self.tool_context(turn, None))
            .await
            .unwrap_or_else(|| render_call_for_people(&tool_name, &arguments));
        let prompt = format!(
            "{} asks a parent to approve this ({message}).\n{call}",
            turn.inbound.member_id
        );
        Ok(self.suspend(turn, &plan, &tool_name, arguments, prompt, parents))
    }

    /// Who a call of this plan is made for, and its idempotency key when it runs.
    fn tool_context(&self, turn: &Interaction<'_>, idempotency_key: Option<String>) -> ToolContext {
        ToolContext {
            member_id: turn.inbound.member_id.clone(),
            conversation_key: turn.inbound.conversation.clone(),
            profile_id: self.profile.id.clone(),
            question_timeout: Duration::from_secs(
                self.profile.processing.confirmation_timeout_seconds,
            ),
            idempotency_key,
        }
    }

    /// The parents who may approve what `member_id` asks (never the member themselves).
    fn parents(&self, member_id: &MemberId) -> Vec<MemberId> {
        self.deps
            .roles
            .iter()
            .filter(|(id, role)| **role == FamilyRole::Parent && *id != member_id)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The `pre` steps just before the call of step `index`, told to the member as the call
    /// starts: on its own on a channel that delivers through the outbox, once even when this
    /// is a retry (the step's once key); otherwise returned, for the answer to say.
    async fn tell_before_call(
        &self,
        turn: &Interaction<'_>,
        plan: &PlanExecution,
        index: usize,
    ) -> Result<Vec<String>, TurnError> {
        let mut pre: Vec<String> = plan.steps[..index]
            .iter()
            .rev()
            .map_while(|step| match &step.step {
                PlanStep::Respond { when, message } if when == PRE => Some(message.clone()),
                _ => None,
            })
            .filter(|message| !message.trim().is_empty())
            .collect();
        pre.reverse();
        let inbound = turn.inbound;
        // A delegated request's answer goes back to the asking profile, whole.
        if pre.is_empty() || inbound.conversation.is_delegated() {
            return Ok(pre);
        }
        let told = self
            .deps
            .tell
            .send(TellMember {
                inbox_id: inbound.id.clone(),
                conversation_key: inbound.conversation.clone(),
                text: pre.join("\n\n"),
                once_key: format!("{}.{index}.pre", plan.plan_id),
            })
            .await;
        match told {
            Ok(Ok(Told::Separately)) => Ok(Vec::new()),
            Ok(Ok(Told::WithTheAnswer)) => Ok(pre),
            Ok(Err(error)) => Err(error.into()),
            Err(error) => Err(TurnError::Mailbox(error.to_string())),
        }
    }

    /// Run the call of step `index` once: `in_progress` with its key stored first.
    async fn call(
        &self,
        turn: &Interaction<'_>,
        plan: &mut PlanExecution,
        index: usize,
        tool_name: &str,
        arguments: &Value,
    ) -> Result<CallOutcome, TurnError> {
        let key = format!("{}.{index}", plan.plan_id);
        {
            let step = &mut plan.steps[index];
            step.status = StepStatus::InProgress;
            step.started_at_ms = Some(now_ms());
            step.idempotency_key = Some(key.clone());
        }
        self.deps.plans.save_plan(plan).await?;
        // Stored, and the lease still surely this worker's: the call starts.
        if let Some(lease) = &turn.lease
            && !lease.trusted()
        {
            return Err(TurnError::LeaseLost(lease.fence.lease.clone()));
        }
        let context = self.tool_context(turn, Some(key.clone()));
        let started = Instant::now();
        let result = self.tools.call(tool_name, arguments, &context).await;
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let outcome = match result {
            Ok(text) | Err(ToolError::ReplyDirectly(text)) => CallOutcome::Done(text),
            Err(ToolError::Failed { message, .. }) => CallOutcome::Failed(message),
            Err(ToolError::Suspended(_)) => CallOutcome::Failed(format!(
                "{tool_name} asks a question of its own, which an intent cannot answer"
            )),
            Err(error) => CallOutcome::Failed(error.to_string()),
        };
        let step = &mut plan.steps[index];
        step.ended_at_ms = Some(now_ms());
        let (success, error) = match &outcome {
            CallOutcome::Done(text) => {
                step.status = StepStatus::Completed;
                step.result = Some(text.clone());
                (true, None)
            }
            CallOutcome::Failed(error) => {
                step.status = StepStatus::Failed;
                step.error = Some(error.clone());
                (false, Some(turn.rec.mask_text(error, &plan.params)))
            }
        };
        turn.rec.record(
            "tool_execute",
            if success {
                super::telemetry::Level::Info
            } else {
                super::telemetry::Level::Warn
            },
            json!({"tool_name": tool_name, "success": success, "error": error,
                   "execution_time_ms": elapsed_ms, "idempotency_key": key}),
        );
        self.deps.plans.save_plan(plan).await?;
        Ok(outcome)
    }

    /// The `post` answer: the intent's template (or its `error` one when the call failed),
    /// or the model's words when there is no `post` template.
    async fn word_outcome(&self, turn: &Interaction<'_>, plan: &PlanExecution) -> String {
        let Some(intent) = self.registry.intent(&plan.intent_id) else {
            return String::new();
        };
        let call = plan
            .steps
            .iter()
            .rev()
            .find(|step| matches!(step.step, PlanStep::ToolCall { .. }));
        let Some(call) = call else {
            return String::new();
        };
        if call.status == StepStatus::Failed {
            let template = intent.respond.error.as_deref().unwrap_or(DEFAULT_ERROR);
            return render(template, &plan.params, None, call.error.as_deref());
        }
        let result_text = call.result.clone().unwrap_or_default();
        let result: Option<Value> = serde_json::from_str(&result_text).ok();
        if let Some(template) = &intent.respond.post {
            return render(template, &plan.params, result.as_ref(), None);
        }
        let planner = Planner { model: &turn.model };
        match planner
            .word_result(intent, &plan.params, &result_text)
            .await
        {
            Ok(text) if !text.trim().is_empty() => text,
            Ok(_) => result_text,
            Err(error) => {
                tracing::warn!(%error, "the model did not word the result; its text is shown");
                result_text
            }
        }
    }

    /// The plan ends at step `index` (failed with `error`, the rest canceled) with `reply`.
    async fn stop_plan(
        &self,
        turn: &Interaction<'_>,
        plan: PlanExecution,
        index: usize,
        error: &str,
        reply: &str,
        mut said: Vec<String>,
    ) -> Result<TurnOutcome, TurnError> {
        let now = now_ms();
        let mut plan = plan;
        {
            let step = &mut plan.steps[index];
            step.status = StepStatus::Failed;
            step.error = Some(error.to_string());
            step.ended_at_ms = Some(now);
        }
        plan.current_index = index + 1;
        said.push(reply.to_string());
        let reply = said.join("\n\n");
        let mut plan = canceled_plan(plan, now);
        plan.answer = Some(reply.clone());
        self.deps.plans.save_plan(&mut plan).await?;
        Ok(self.answered(turn, reply, false))
    }

    /// Stop until the member approves the exact call (their `confirm_tools`).
    fn suspend(
        &self,
        turn: &Interaction<'_>,
        plan: &PlanExecution,
        tool_name: &str,
        arguments: Value,
        prompt: String,
        approvers: Vec<MemberId>,
    ) -> TurnOutcome {
        turn.rec.info(
            "response_generated",
            json!({"length": prompt.chars().count(), "needs_input": true, "confirmation": true}),
        );
        turn.rec.info(
            "memory_updated",
            json!({"stored": 0, "total": turn.history_count, "waiting": "confirmation"}),
        );
        let asked = AskedApproval {
            tool_name: tool_name.to_string(),
            arguments,
            prompt,
            turn_state: json!({"intents_plan": plan.plan_id}),
            expires_at_ms: self.profile.processing.answer_deadline_ms(now_ms()),
            approvers,
        };
        TurnOutcome {
            profile_id: self.profile.id.clone(),
            result: TurnResult::NeedsConfirmation(Box::new(PendingConfirmation::new(
                turn.inbound,
                &self.profile.id,
                asked,
            ))),
        }
    }
}
