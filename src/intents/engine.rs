//! The intents engine of a service profile (`processing_config.engine: intents`), run by the
//! profile's `ProcessingService` in place of the tool loop: received → history → eligible
//! intents → classifier → planner → policy → tool executor → response, with the ten
//! telemetry stages recorded for every interaction.
//!
//! A plan waiting for the member's answer (`waiting_user`) is continued by their next
//! message in that conversation (the queue routes it here even without the slash command):
//! the classifier is told what was asked, and when it finds the plan's intent the answer
//! fills the parameter (the message itself when the model extracted nothing). A message with
//! another intent, or none, cancels the waiting plan; one that is for no intent of this
//! profile goes back to the queue (`TurnResult::NotPlaced`), for the profile it was routed
//! to (the default one), as if no plan had waited.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use actix::Recipient;
use chrono::NaiveDate;
use serde_json::{Value, json};

use super::classifier::{Awaited, Classification, ClassifyError, IntentClassifier};
use super::llm::{AskError, ModelAccess};
use super::params::read_params;
use super::planner::Planner;
use super::policy::{NullPolicyEngine, PolicyEngine, RulePolicyEngine};
use super::registry::{IntentContext, IntentsRegistry};
use super::telemetry::{Level, StageRecorder};
use super::unreadable::Unreadable;
use crate::config::{FamilyRole, ResolvedProfile};
use crate::ids::MemberId;
use crate::llm::{CallOrigin, ChatMessage, GenerateChat, LlmError};
use crate::metrics::Metrics;
use crate::ports::{
    ConversationMemory, HistoryEntry, Inbound, PlanExecution, PlanExecutions, PlanStep,
    StepExecution, StepStatus, StorageError, TelemetrySink, TurnJournal, canceled_plan, now_ms,
};
use crate::tools::ToolsProvider;
use crate::turn::{ProcessTurn, ResumeTurn, TellMember, TurnError, TurnOutcome, TurnResult};

/// No intent, or not confident enough (seed 003).
pub const NOT_SURE_REPLY: &str = "I'm not sure how to help with that. Could you rephrase?";
/// An answer to a plan's confirmation that came after the plan was cancelled.
pub const CANCELLED_REPLY: &str = "That request was cancelled, so nothing was done.";
/// The model failed or kept answering unusably (seed 003).
pub const SOMETHING_WRONG_REPLY: &str = "Something went wrong. Please try again.";

/// What the engine needs besides its profile, registry and tools.
#[derive(Clone)]
pub struct IntentsDeps {
    pub broker: Recipient<GenerateChat>,
    pub memory: Arc<dyn ConversationMemory>,
    pub plans: Arc<dyn PlanExecutions>,
    pub journal: Arc<dyn TurnJournal>,
    pub telemetry: Arc<dyn TelemetrySink>,
    pub metrics: Arc<Metrics>,
    /// `family[].role` by member id.
    pub roles: Arc<BTreeMap<MemberId, FamilyRole>>,
    /// Where a plan tells its member what it is about to do before its answer: the
    /// request queue.
    pub tell: Recipient<TellMember>,
}

pub struct IntentsEngine {
    pub(super) profile: ResolvedProfile,
    pub(super) registry: Arc<IntentsRegistry>,
    pub(super) tools: Arc<dyn ToolsProvider>,
    pub(super) policy: Arc<dyn PolicyEngine>,
    pub(super) deps: IntentsDeps,
    redacted: Arc<BTreeSet<String>>,
}

/// One interaction as it goes: who, where, and its telemetry.
pub(super) struct Interaction<'a> {
    pub inbound: &'a Inbound,
    /// What the member wrote (without the slash command), stored in history.
    pub text: String,
    pub rec: StageRecorder,
    pub model: ModelAccess,
    pub role: FamilyRole,
    pub history_count: usize,
    /// The conversation's lease among workers: a call starts only while it is trusted.
    /// (A plan's steps are fenced by the plan's version: a worker that lost the race
    /// for a step finds its save refused.)
    pub lease: Option<crate::turn::TurnLease>,
}

impl IntentsEngine {
    pub fn new(
        profile: ResolvedProfile,
        registry: Arc<IntentsRegistry>,
        tools: Arc<dyn ToolsProvider>,
        deps: IntentsDeps,
    ) -> Self {
        let policy: Arc<dyn PolicyEngine> = if registry.policy.is_empty() {
            Arc::new(NullPolicyEngine)
        } else {
            Arc::new(RulePolicyEngine::new(registry.policy.clone()))
        };
        let redacted = Arc::new(registry.redacted_params.clone());
        IntentsEngine {
            profile,
            registry,
            tools,
            policy,
            deps,
            redacted,
        }
    }

    fn interaction<'a>(
        &self,
        inbound: &'a Inbound,
        text: String,
        lease: Option<crate::turn::TurnLease>,
    ) -> Interaction<'a> {
        let session_id = inbound.conversation.clone();
        Interaction {
            inbound,
            text,
            lease,
            rec: StageRecorder::new(
                self.deps.telemetry.clone(),
                self.deps.metrics.clone(),
                &self.profile.id,
                &session_id,
                &inbound.id,
                self.redacted.clone(),
            ),
            model: ModelAccess {
                broker: self.deps.broker.clone(),
                llm_name: self.profile.processing.llm_model.clone(),
                fallback_llm_name: self.profile.processing.llm_fallback_model.clone(),
                origin: CallOrigin {
                    profile_id: Some(self.profile.id.clone()),
                    conversation_key: Some(session_id),
                    member_id: Some(inbound.member_id.clone()),
                },
            },
            role: self
                .deps
                .roles
                .get(&inbound.member_id)
                .copied()
                .unwrap_or_default(),
            history_count: 0,
        }
    }

    pub async fn run(&self, message: ProcessTurn) -> Result<TurnOutcome, TurnError> {
        let inbound = &message.inbound;
        let mut turn = self.interaction(inbound, message.text.clone(), message.lease.clone());
        // Tried again (an LLM failure, a restart) after its plan was fixed: go on with it.
        if !inbound.conversation.is_delegated()
            && let Some(plan) = self.journaled_plan(&inbound.id).await?
        {
            tracing::info!(plan = %plan.plan_id, "going on with a journaled plan");
            let outcome = self.drive(&turn, plan, None).await;
            return self.cancelled_meanwhile(&turn, outcome);
        }
        turn.rec.info(
            "received",
            json!({"channel": inbound.conversation.channel(), "text_length": message.text.chars().count()}),
        );
        let settings = &self.profile.processing;
        let since_ms = now_ms()
            - i64::try_from(settings.history_max_age_hours)
                .unwrap_or(i64::MAX / 3_600_000)
                .saturating_mul(3_600_000);
        let history = self
            .deps
            .memory
            .recent(
                &inbound.conversation,
                settings.max_history_messages,
                since_ms,
            )
            .await?;
        turn.history_count = history.len();
        turn.rec
            .info("history_loaded", json!({"count": history.len()}));
        // A delegated request counts as coming from the member's own channel.
        let context = IntentContext {
            channel: inbound.conversation.root().channel(),
            member_id: &inbound.member_id,
            role: turn.role,
        };
        let eligible = self.registry.eligible(&context);
        let ids: Vec<&str> = eligible.iter().map(|intent| intent.id.as_str()).collect();
        turn.rec.info(
            "intents_eligible",
            json!({"intents": ids, "role": turn.role.as_str()}),
        );
        let open = self
            .deps
            .plans
            .open_plan(&inbound.conversation, &inbound.member_id)
            .await?
            .filter(|plan| plan.profile_id == self.profile.id);
        let awaited =
            open.as_ref()
                .and_then(|plan| match &plan.steps.get(plan.current_index)?.step {
                    PlanStep::AskUser { param, .. } if plan.awaits_member(now_ms()) => {
                        Some((plan.intent_id.clone(), param.clone()))
                    }
                    _ => None,
                });
        let classifier = IntentClassifier { model: &turn.model };
        let classified = classifier
            .classify(
                &eligible,
                &history,
                &message.text,
                awaited
                    .as_ref()
                    .map(|(intent_id, param)| Awaited { intent_id, param }),
            )
            .await;
        let classification = match classified {
            Ok(classification) => classification,
            Err(error) => return self.failed_to_classify(&turn, error),
        };
        turn.rec.info(
            "intent_classified",
            json!({
                "intent_id": classification.intent_id,
                "confidence": classification.confidence,
                "params": turn.rec.params(&classification.extracted_params),
                "missing_params": classification.missing_params,
            }),
        );
        let confident = classification.confidence >= self.registry.min_confidence;
        let today = crate::clock::now()
            .with_timezone(&self.profile.processing.timezone)
            .date_naive();
        let planned = match (open, awaited) {
            (Some(open), Some((intent_id, param)))
                if confident && classification.intent_id.as_deref() == Some(intent_id.as_str()) =>
            {
                self.continue_plan(open, &param, &classification, &message.text, today)
            }
            (open, _) => {
                if let Some(open) = open
                    && open.status() == StepStatus::WaitingUser
                {
                    // The member asked something else: the waiting plan is dropped. (A plan
                    // waiting for a parent stays: its confirmation decides it.) Changed
                    // meanwhile, it was cancelled already.
                    match self
                        .deps
                        .plans
                        .save_plan(&mut canceled_plan(open, now_ms()))
                        .await
                    {
                        Ok(()) | Err(StorageError::Stale(_)) => {}
                        Err(error) => return Err(error.into()),
                    }
                }
                match classification.intent_id.as_deref() {
                    Some(intent_id) if confident => {
                        self.new_plan(inbound, intent_id, &classification, today)
                    }
                    _ => None,
                }
            }
        };
        let Some((mut plan, unreadable)) = planned else {
            if message.follows_plan {
                return Ok(self.handed_back(&turn));
            }
            return Ok(self.not_sure(&turn, &classification));
        };
        let intent = self
            .registry
            .intent(&plan.intent_id)
            .cloned()
            .ok_or_else(|| {
                TurnError::BadTurnState(format!("intent {:?} is gone", plan.intent_id))
            })?;
        let planner = Planner { model: &turn.model };
        let steps = match planner
            .plan(&intent, &plan.params, &unreadable, &message.text)
            .await
        {
            Ok(steps) => steps,
            Err(error) => return self.model_failed(&turn, error, "plan_created"),
        };
        plan.steps
            .extend(steps.into_iter().map(StepExecution::pending));
        plan.updated_at_ms = now_ms();
        let kinds: Vec<&str> = plan.steps[plan.current_index..]
            .iter()
            .map(|step| step.step.kind())
            .collect();
        // What was wrong with a value, never the value itself.
        let not_read: Vec<Value> = unreadable
            .iter()
            .map(|(param, problem)| json!({"param": param, "problem": problem.problem.code()}))
            .collect();
        turn.rec.info(
            "plan_created",
            json!({"plan_id": plan.plan_id, "intent_id": plan.intent_id, "steps": kinds,
                   "current_index": plan.current_index, "params": turn.rec.params(&plan.params),
                   "unreadable_params": not_read}),
        );
        let plan_type = if kinds.contains(&"ask_user") {
            "ask_user"
        } else {
            "tool_call"
        };
        turn.rec.info("plan_type", json!({"type": plan_type}));
        if let Err(error) = self.deps.plans.save_plan(&mut plan).await {
            return self.cancelled_meanwhile(&turn, Err(error.into()));
        }
        // From here a retry of this message goes on with this plan, never plans again.
        self.journal_plan(inbound, &plan).await?;
        let outcome = self.drive(&turn, plan, None).await;
        self.cancelled_meanwhile(&turn, outcome)
    }

    /// `outcome`, unless a write of the plan found it changed meanwhile: outside its turn
    /// only `/cancel` changes a plan, and only an open one (waiting for the member or an
    /// approval), never one whose call has started. So the plan was cancelled before its
    /// call could run: it stops there, and the member is told nothing was done.
    fn cancelled_meanwhile(
        &self,
        turn: &Interaction<'_>,
        outcome: Result<TurnOutcome, TurnError>,
    ) -> Result<TurnOutcome, TurnError> {
        match outcome {
            Err(TurnError::Storage(StorageError::Stale(what))) => {
                tracing::info!(%what, inbox_id = %turn.inbound.id,
                    "the plan was cancelled while its turn ran; it stops");
                Ok(self.answered(turn, CANCELLED_REPLY.to_string(), false))
            }
            other => other,
        }
    }

    /// A turn suspended on a confirmation of its tool call, answered.
    pub async fn resume(&self, message: ResumeTurn) -> Result<TurnOutcome, TurnError> {
        let inbound = &message.inbound;
        let turn = self.interaction(inbound, inbound.text.clone(), message.lease.clone());
        // Resumed before and stopped: the plan's step says whether its call started.
        if let Some(plan) = self.journaled_plan(&inbound.id).await? {
            let outcome = self.drive(&turn, plan, Some(message.decision)).await;
            return self.cancelled_meanwhile(&turn, outcome);
        }
        let plan_id = message.confirmation.turn_state["intents_plan"]
            .as_str()
            .ok_or_else(|| TurnError::BadTurnState("no intents plan in the confirmation".into()))?;
        let plan = self
            .deps
            .plans
            .plan(plan_id)
            .await?
            .ok_or_else(|| TurnError::BadTurnState(format!("plan {plan_id} is gone")))?;
        if !plan.is_open() {
            // Cancelled meanwhile (`/cancel`): the answer comes too late to run anything.
            return Ok(self.answered(&turn, CANCELLED_REPLY.to_string(), false));
        }
        self.journal_plan(inbound, &plan).await?;
        let outcome = self.drive(&turn, plan, Some(message.decision)).await;
        self.cancelled_meanwhile(&turn, outcome)
    }

    /// From now on a retry of this message goes on with `plan`. A delegated turn has no
    /// inbox message of its own: its parent's call is journaled instead.
    async fn journal_plan(&self, inbound: &Inbound, plan: &PlanExecution) -> Result<(), TurnError> {
        if inbound.conversation.is_delegated() {
            return Ok(());
        }
        self.deps
            .journal
            .save_turn(&inbound.id, &json!({"intents_plan": plan.plan_id}))
            .await?;
        Ok(())
    }

    async fn journaled_plan(&self, inbox_id: &str) -> Result<Option<PlanExecution>, TurnError> {
        let Some(saved) = self.deps.journal.load_turn(inbox_id).await? else {
            return Ok(None);
        };
        let Some(plan_id) = saved["intents_plan"].as_str() else {
            return Ok(None);
        };
        Ok(self.deps.plans.plan(plan_id).await?)
    }

    /// A new plan of `intent_id` with the values the classifier found, each read once into
    /// its parameter's type, and those that could not be read.
    fn new_plan(
        &self,
        inbound: &Inbound,
        intent_id: &str,
        classification: &Classification,
        today: NaiveDate,
    ) -> Option<(PlanExecution, Vec<(String, Unreadable)>)> {
        let intent = self.registry.intent(intent_id)?;
        let (params, unreadable) = read_params(intent, &classification.extracted_params, today);
        let now = now_ms();
        let plan = PlanExecution {
            plan_id: uuid::Uuid::now_v7().to_string(),
            intent_id: intent_id.to_string(),
            conversation_key: inbound.conversation.clone(),
            member_id: inbound.member_id.clone(),
            profile_id: self.profile.id.clone(),
            params,
            steps: Vec::new(),
            current_index: 0,
            created_at_ms: now,
            updated_at_ms: now,
            waiting_until_ms: None,
            answer: None,
            version: 0,
        };
        Some((plan, unreadable))
    }

    /// The waiting plan with the member's answer: its question answered, what the
    /// classifier found added (each value read once into its type; a new value replaces the
    /// old, and one that cannot be read leaves the parameter missing), and the message itself
    /// as the asked value if the model found none. `None` when the plan's intent is gone.
    fn continue_plan(
        &self,
        mut plan: PlanExecution,
        param: &str,
        classification: &Classification,
        text: &str,
        today: NaiveDate,
    ) -> Option<(PlanExecution, Vec<(String, Unreadable)>)> {
        let intent = self.registry.intent(&plan.intent_id)?;
        let now = now_ms();
        let mut found = BTreeMap::new();
        if classification.intent_id.as_deref() == Some(plan.intent_id.as_str()) {
            found = classification.extracted_params.clone();
        }
        // The model knew the intent but extracted nothing: the answer is the value asked for.
        if !found.contains_key(param) && !plan.params.contains_key(param) && !text.trim().is_empty()
        {
            found.insert(param.to_string(), text.trim().to_string());
        }
        let (values, unreadable) = read_params(intent, &found, today);
        for name in found.keys() {
            plan.params.remove(name);
        }
        plan.params.extend(values);
        if let Some(step) = plan.steps.get_mut(plan.current_index) {
            step.status = StepStatus::Completed;
            step.ended_at_ms = Some(now);
        }
        plan.current_index += 1;
        plan.updated_at_ms = now;
        plan.waiting_until_ms = None;
        Some((plan, unreadable))
    }

    /// Classification failed: a transient model failure is the queue's to retry; anything
    /// else is told to the member and recorded as an error.
    fn failed_to_classify(
        &self,
        turn: &Interaction<'_>,
        error: ClassifyError,
    ) -> Result<TurnOutcome, TurnError> {
        match error {
            ClassifyError::Ask(error) => self.model_failed(turn, error, "intent_classified"),
            ClassifyError::Invalid(why) => {
                turn.rec.record(
                    "intent_classified",
                    Level::Error,
                    json!({"error": "invalid_output", "detail": why}),
                );
                Ok(self.end_early(
                    turn,
                    "intent_classified",
                    SOMETHING_WRONG_REPLY,
                    "classification failed",
                ))
            }
        }
    }

    fn model_failed(
        &self,
        turn: &Interaction<'_>,
        error: AskError,
        stage: &'static str,
    ) -> Result<TurnOutcome, TurnError> {
        match error {
            AskError::Llm(error) if error.is_transient() => Err(TurnError::Llm(error)),
            AskError::Mailbox(error) => Err(TurnError::Mailbox(error)),
            AskError::Llm(error) => {
                turn.rec.record(
                    stage,
                    Level::Error,
                    json!({"error": error.kind(), "detail": llm_detail(&error)}),
                );
                Ok(self.end_early(turn, stage, SOMETHING_WRONG_REPLY, "the model failed"))
            }
        }
    }

    fn not_sure(&self, turn: &Interaction<'_>, classification: &Classification) -> TurnOutcome {
        let reason = if classification.intent_id.is_some() {
            "confidence below min_confidence"
        } else {
            "no intent matched"
        };
        turn.rec
            .info("plan_created", json!({"plan_id": null, "reason": reason}));
        turn.rec.info("plan_type", json!({"type": "none"}));
        turn.rec.skipped("policy_check", reason);
        turn.rec.skipped("tool_execute", reason);
        self.answered(turn, NOT_SURE_REPLY.to_string(), false)
    }

    /// The message came only because this profile's plan waited for the member, and it
    /// is not for the plan nor any intent here: the plan is canceled, and the message goes
    /// back to the queue for the profile it was routed to. Nothing is stored.
    fn handed_back(&self, turn: &Interaction<'_>) -> TurnOutcome {
        let reason = "not for this profile: handed back to go where it was routed";
        turn.rec
            .info("plan_created", json!({"plan_id": null, "reason": reason}));
        turn.rec.info("plan_type", json!({"type": "none"}));
        for stage in [
            "policy_check",
            "tool_execute",
            "response_generated",
            "memory_updated",
        ] {
            turn.rec.skipped(stage, reason);
        }
        TurnOutcome {
            profile_id: self.profile.id.clone(),
            result: TurnResult::NotPlaced,
        }
    }

    /// The stages after `stage` recorded as skipped, and `reply`.
    fn end_early(
        &self,
        turn: &Interaction<'_>,
        stage: &'static str,
        reply: &str,
        reason: &str,
    ) -> TurnOutcome {
        let after = super::telemetry::STAGES
            .iter()
            .skip_while(|name| **name != stage)
            .skip(1)
            .take_while(|name| **name != "response_generated");
        for name in after {
            turn.rec.skipped(name, reason);
        }
        self.answered(turn, reply.to_string(), false)
    }

    /// The turn ends with `reply`: its last two stages, and the history to store with it.
    pub(super) fn answered(
        &self,
        turn: &Interaction<'_>,
        reply: String,
        needs_input: bool,
    ) -> TurnOutcome {
        turn.rec.info(
            "response_generated",
            json!({"length": reply.chars().count(), "needs_input": needs_input}),
        );
        let messages = vec![
            self.entry(turn, ChatMessage::user(turn.text.clone())),
            self.entry(turn, ChatMessage::assistant(reply.clone())),
        ];
        turn.rec.info(
            "memory_updated",
            json!({"stored": messages.len(), "total": turn.history_count + messages.len()}),
        );
        TurnOutcome {
            profile_id: self.profile.id.clone(),
            result: TurnResult::Answered { reply, messages },
        }
    }

    pub(super) fn entry(&self, turn: &Interaction<'_>, message: ChatMessage) -> HistoryEntry {
        HistoryEntry {
            role: message.role,
            content: message.content,
            profile_id: self.profile.id.clone(),
            inbox_id: Some(turn.inbound.id.clone()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at_ms: now_ms(),
        }
    }
}

/// What an LLM error says, without anything a provider might have echoed back at length.
fn llm_detail(error: &LlmError) -> String {
    let text = error.to_string();
    text.chars().take(200).collect()
}
