//! One turn of a profile: the prompt, then the tool loop, as a state that can stop
//! at a tool call needing confirmation and continue later from storage.
//!
//! A turn stops either before a call in the profile's `confirm_tools` runs, or when a
//! call's own work stops to ask (`ToolError::Suspended`, e.g. a delegated turn
//! reaching a tool that needs confirmation). In the second case the call stays first
//! in `pending_calls` with the tool's state beside it, and the answer goes to
//! `ToolsProvider::resume` instead of running the call again.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ProcessingDeps;
use super::images::{Sight, load_images, read_image};
use super::journal::{FAST_PATH_CALL, INTERRUPTED_CALL_RESULT, Journal, Recovered, recover};
use super::prompt::{DEFAULT_SYSTEM_PROMPT, starting_with_user, system_prompt, user_message_text};
use crate::config::ResolvedProfile;
use crate::llm::{
    CallOrigin, ChatMessage, ChatRequest, GenerateChat, IMAGES_NOT_SHOWN, Role, TextListener,
    ToolCall,
};
use crate::metrics::StageTimer;
use crate::plugins::ROUTE_TO_PLUGIN;
use crate::ports::{AskedApproval, Decision, HistoryEntry, Inbound, PendingConfirmation, now_ms};
use crate::tools::{ToolContext, ToolError, ToolSuspension, ToolsProvider};
use crate::turn::{
    ProcessTurn, ResumeTurn, SLASH_COMMAND_DECLINED, SLASH_COMMAND_EXPIRED, TurnError, TurnOutcome,
    TurnResult,
};

/// Tool results the model reads when a confirmation did not end in "approved":
/// each outcome is distinct, so the model can tell the member what happened.
pub const DECLINED_RESULT: &str =
    "The family member declined this action, so it was not run. Do not retry it unless they ask.";
pub const EXPIRED_RESULT: &str =
    "The family member did not answer the confirmation in time, so this action was not run.";
pub const UNKNOWN_OUTCOME_RESULT: &str = "hearth stopped while running this approved action; \
     whether it completed is unknown. Tell the family member so they can check.";

/// Where a turn is: the conversation so far and the tool calls still to run. Stored with
/// a confirmation while the turn waits, and in the turn journal while it runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct TurnState {
    /// The turn waits for approval to start at all (`confirm_slash_commands`).
    #[serde(default)]
    awaiting_start: bool,
    messages: Vec<ChatMessage>,
    entries: Vec<HistoryEntry>,
    /// Calls of the model's last answer not yet run; the first one may await confirmation.
    pub(super) pending_calls: Vec<ToolCall>,
    /// The first pending call already ran and its own work waits for the member: the
    /// tool's state to resume it with (absent in states stored before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    suspended_call: Option<serde_json::Value>,
    /// LLM rounds done.
    rounds: u32,
    /// Which of the member's attachments are shown as images. The images themselves are
    /// left out of the stored state (it stays in `pending_actions` for good): a resumed
    /// turn reads them again from these attachments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    shown_images: Vec<usize>,
    /// The first pending call is running (its id): saved before it starts, so a turn found
    /// with it set after hearth stopped knows that call's outcome is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) in_flight: Option<String>,
    /// Tool calls started so far: numbers each call's idempotency key.
    #[serde(default)]
    calls_started: u32,
    /// The turn's answer, once a tool gave it: the turn only has to be stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) final_reply: Option<String>,
}

impl TurnState {
    /// The state as stored: without the images, which are read again from the member's
    /// attachments (`restore_images`), so no photo is kept in the database twice.
    pub(super) fn to_stored_value(&self) -> Result<serde_json::Value, TurnError> {
        let mut stored = self.clone();
        for message in &mut stored.messages {
            message.images.clear();
        }
        serde_json::to_value(&stored).map_err(|error| TurnError::BadTurnState(error.to_string()))
    }
}

pub(super) struct TurnRunner {
    pub(super) profile: ResolvedProfile,
    pub(super) tools: Arc<dyn ToolsProvider>,
    pub(super) deps: ProcessingDeps,
}

impl TurnRunner {
    pub(super) async fn run(&self, message: ProcessTurn) -> Result<TurnOutcome, TurnError> {
        let settings = &self.profile.processing;
        let inbound = &message.inbound;
        let conversation_key = inbound.conversation.clone();
        let journal = Journal::for_turn(&self.deps.journal, inbound, message.lease.clone());
        let listener = message.listener.as_ref();
        // A message stored just now has nothing journaled: one round trip fewer.
        if !message.unjournaled
            && let Some(saved) = journal.load().await?
        {
            return self.go_on(inbound, saved, &journal, listener).await;
        }
        if message.slash_command.is_none()
            && let Some(plugins) = &self.deps.plugins
        {
            let context = self.tool_context(inbound);
            if let Some(completion) = plugins.pending_completion(&context, &message.text).await {
                // A call the profile's rules make ask goes through the model and asks: the
                // member approves the completed call, not the one they were asked about.
                let asks = self
                    .tools
                    .confirmation_prompt(
                        ROUTE_TO_PLUGIN,
                        &completion.as_route_arguments(),
                        &context,
                    )
                    .await
                    .is_some();
                // Taken once: a second message cannot run the same call again.
                if !asks && plugins.take_pending(&context).await {
                    let mut state = TurnState {
                        entries: vec![self.entry(inbound, ChatMessage::user(message.text.clone()))],
                        in_flight: Some(FAST_PATH_CALL.to_string()),
                        ..TurnState::default()
                    };
                    journal.save(&state).await?;
                    journal.still_held()?;
                    let context = ToolContext {
                        idempotency_key: Some(journal.idempotency_key(0)),
                        ..context
                    };
                    let reply = plugins
                        .run_completion(completion, &context, &settings.llm_model)
                        .await;
                    state.in_flight = None;
                    state.final_reply = Some(reply.clone());
                    journal.save(&state).await?;
                    return Ok(self.answered(inbound, state, reply));
                }
            }
        }
        let now = crate::clock::now();
        let since_ms = now_ms()
            - i64::try_from(settings.history_max_age_hours)
                .unwrap_or(i64::MAX / 3_600_000)
                .saturating_mul(3_600_000);
        let facts = self.deps.profiles.get(&inbound.member_id).await?;
        let history = self
            .deps
            .memory
            .recent_held(
                &conversation_key,
                settings.max_history_messages,
                since_ms,
                journal.fence(),
            )
            .await?;
        let template = settings
            .prompts
            .get("system_prompt")
            .map(String::as_str)
            .unwrap_or(DEFAULT_SYSTEM_PROMPT);
        let member_name = facts
            .get("name")
            .cloned()
            .unwrap_or_else(|| self.deps.family.display_name(&inbound.member_id));
        // The member's own zone (`family[].timezone`, checked at start-up), else the
        // profile's: the time the model reads is the one the member lives in.
        let zone = self
            .deps
            .family
            .member(inbound.member_id.as_str())
            .and_then(|member| member.timezone)
            .and_then(|zone| zone.parse().ok())
            .unwrap_or(settings.timezone);
        let mut system = system_prompt(template, zone, now, &member_name, &facts);
        // Where a workflow of the tools stands (a family script half chosen): the model
        // reads it every turn, so it never loses its place.
        if let Some(note) = self.tools.turn_note(&self.tool_context(inbound)).await {
            system.push_str("\n\n");
            system.push_str(&note);
        }
        let mut messages = Vec::with_capacity(history.len() + 4);
        messages.push(ChatMessage::system(system));
        messages.extend(
            starting_with_user(&history)
                .iter()
                .map(|entry| ChatMessage {
                    role: entry.role,
                    content: entry.content.clone(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    images: Vec::new(),
                }),
        );
        // What the member sent, with what came with it (a quoted message, attachments);
        // images only for a model that can see them, and only in this turn's request:
        // history keeps the text alone, saying the image was shown then.
        let vision = self.deps.vision_llms.contains(&settings.llm_model);
        let (images, sights) = load_images(&inbound.extras, vision).await;
        let shown_images = (0..sights.len())
            .filter(|index| sights[*index] == Sight::Shown)
            .collect();
        let later: Vec<Sight> = sights.iter().map(Sight::for_history).collect();
        let stored_text = user_message_text(&message.text, &inbound.extras, &later);
        let entries = vec![self.entry(inbound, ChatMessage::user(stored_text))];
        let mut user_text = user_message_text(&message.text, &inbound.extras, &sights);
        // What family memory holds on this message (`recall: auto`): read with the message,
        // after the history, in this turn's request only; the history keeps the member's
        // words alone, and the next message finds its own.
        if let Some(note) = self
            .tools
            .message_note(&self.tool_context(inbound), &message.text)
            .await
        {
            user_text.push_str("\n\n");
            user_text.push_str(&note);
        }
        let mut user_message = ChatMessage::user(user_text);
        user_message.images = images;
        messages.push(user_message);
        let state = TurnState {
            messages,
            entries,
            shown_images,
            ..TurnState::default()
        };
        if let Some(command) = &message.slash_command
            && self.profile.confirm_slash_commands
        {
            let prompt = format!(
                "Run {command} ({})?\n• {}",
                self.profile.description, message.text
            );
            let state = TurnState {
                awaiting_start: true,
                ..state
            };
            return self.suspend(
                inbound,
                state,
                command,
                serde_json::json!({"request": message.text}),
                prompt,
                None,
            );
        }
        self.drive(inbound, state, None, &journal, listener).await
    }

    pub(super) async fn resume(&self, message: ResumeTurn) -> Result<TurnOutcome, TurnError> {
        // A journal entry is newer than the confirmation: the resumed turn got that far.
        let journal =
            Journal::for_turn(&self.deps.journal, &message.inbound, message.lease.clone());
        if let Some(saved) = journal.load().await? {
            return self.go_on(&message.inbound, saved, &journal, None).await;
        }
        let mut state: TurnState = serde_json::from_value(message.confirmation.turn_state.clone())
            .map_err(|error| TurnError::BadTurnState(error.to_string()))?;
        self.restore_images(&message.inbound, &mut state).await;
        if state.awaiting_start {
            state.awaiting_start = false;
            let refused = match message.decision {
                Some(Decision::Approved) => None,
                Some(Decision::Expired) => Some(SLASH_COMMAND_EXPIRED),
                // Denied, or unknown after a restart: starting now could surprise.
                Some(Decision::Denied) | None => Some(SLASH_COMMAND_DECLINED),
            };
            if let Some(reply) = refused {
                let mut messages = state.entries;
                messages.push(self.entry(&message.inbound, ChatMessage::assistant(reply)));
                return Ok(TurnOutcome {
                    profile_id: self.profile.id.clone(),
                    result: TurnResult::Answered {
                        reply: reply.to_string(),
                        messages,
                    },
                });
            }
            return self
                .drive(&message.inbound, state, None, &journal, None)
                .await;
        }
        self.drive(
            &message.inbound,
            state,
            Some(message.decision),
            &journal,
            None,
        )
        .await
    }

    /// Go on with a turn found in the journal (hearth stopped, or the last attempt failed).
    async fn go_on(
        &self,
        inbound: &Inbound,
        saved: TurnState,
        journal: &Journal,
        listener: Option<&TextListener>,
    ) -> Result<TurnOutcome, TurnError> {
        tracing::info!("going on with a journaled turn");
        match recover(saved) {
            Recovered::Answered(state, reply) => Ok(self.answered(inbound, state, reply)),
            Recovered::Continue {
                mut state,
                interrupted,
            } => {
                if let Some(call) = interrupted {
                    let result =
                        ChatMessage::tool_result(call.id, INTERRUPTED_CALL_RESULT.to_string());
                    state.entries.push(self.entry(inbound, result.clone()));
                    state.messages.push(result);
                }
                self.restore_images(inbound, &mut state).await;
                self.drive(inbound, state, None, journal, listener).await
            }
        }
    }

    /// Give the member's message back the images left out when the turn was stored; what
    /// cannot be shown any more (a deleted file, a model no longer seeing) is said instead,
    /// once: such an image is not tried again.
    async fn restore_images(&self, inbound: &Inbound, state: &mut TurnState) {
        if state.shown_images.is_empty() {
            return;
        }
        let vision = self
            .deps
            .vision_llms
            .contains(&self.profile.processing.llm_model);
        let Some(member) = state
            .messages
            .iter_mut()
            .rev()
            .find(|message| message.role == Role::User)
        else {
            return;
        };
        if !vision {
            state.shown_images.clear();
            member.content.push('\n');
            member.content.push_str(IMAGES_NOT_SHOWN);
            return;
        }
        let mut still_shown = Vec::new();
        for index in std::mem::take(&mut state.shown_images) {
            let Some(attachment) = inbound.extras.attachments.get(index) else {
                continue;
            };
            match read_image(attachment).await {
                Ok(image) => {
                    member.images.push(image);
                    still_shown.push(index);
                }
                Err(why) => member.content.push_str(&format!(
                    "\n(The image {:?} cannot be shown again: {why}.)",
                    attachment.file_name
                )),
            }
        }
        state.shown_images = still_shown;
    }

    /// Run pending tool calls and LLM rounds until the model answers in words or a
    /// call needs confirmation. `decision` answers the first pending call (or the
    /// question its own work asked). Every step that matters is saved in `journal`.
    /// `listener` hears each round's text as the model writes it (a preview only).
    async fn drive(
        &self,
        inbound: &Inbound,
        mut state: TurnState,
        mut decision: Option<Option<Decision>>,
        journal: &Journal,
        listener: Option<&TextListener>,
    ) -> Result<TurnOutcome, TurnError> {
        let settings = &self.profile.processing;
        let conversation_key = inbound.conversation.clone();
        let tools = self.tools.tools().await;
        let tool_context = self.tool_context(inbound);
        let max_rounds = settings.max_tool_iterations.max(1);
        loop {
            while let Some(call) = state.pending_calls.first().cloned() {
                let ran = match (decision.take(), state.suspended_call.take()) {
                    // The tool asked; it gets the answer, whatever it is, and goes on.
                    (Some(decision), Some(work)) => {
                        let context = self
                            .start_call(&mut state, &call, journal, &tool_context)
                            .await?;
                        let resumed = self
                            .tools
                            .resume(&call.name, &work, decision, &context)
                            .await;
                        ran(&call, resumed)
                    }
                    (Some(Some(Decision::Approved)), None) => {
                        let context = self
                            .start_call(&mut state, &call, journal, &tool_context)
                            .await?;
                        self.run_tool(&call, &context).await
                    }
                    (Some(Some(Decision::Denied)), None) => Ran::Done(DECLINED_RESULT.into()),
                    (Some(Some(Decision::Expired)), None) => Ran::Done(EXPIRED_RESULT.into()),
                    (Some(None), None) => Ran::Done(UNKNOWN_OUTCOME_RESULT.into()),
                    // Suspended work is only ever stored with a question, so a call
                    // reached without an answer is a new one.
                    (None, _) => {
                        if let Some(prompt) = self
                            .tools
                            .confirmation_prompt(&call.name, &call.arguments, &tool_context)
                            .await
                        {
                            let (name, arguments) = (call.name.clone(), call.arguments.clone());
                            return self.suspend(inbound, state, &name, arguments, prompt, None);
                        }
                        let context = self
                            .start_call(&mut state, &call, journal, &tool_context)
                            .await?;
                        self.run_tool(&call, &context).await
                    }
                };
                state.in_flight = None;
                let result = match ran {
                    Ran::Done(text) => text,
                    Ran::Reply(reply) => {
                        // The model asked for it; the member gets it as written.
                        state.pending_calls.remove(0);
                        let result = ChatMessage::tool_result(call.id, reply.clone());
                        state.entries.push(self.entry(inbound, result));
                        state.final_reply = Some(reply.clone());
                        journal.save(&state).await?;
                        return Ok(self.answered(inbound, state, reply));
                    }
                    Ran::Suspended(suspension) => {
                        let ToolSuspension {
                            prompt,
                            action,
                            arguments,
                            state: work,
                            expires_at_ms,
                        } = *suspension;
                        // The call stays first, its work beside it, for the answer.
                        state.suspended_call = Some(work);
                        return self.suspend(
                            inbound,
                            state,
                            &action,
                            arguments,
                            prompt,
                            Some(expires_at_ms),
                        );
                    }
                };
                state.pending_calls.remove(0);
                let result = ChatMessage::tool_result(call.id, result);
                state.entries.push(self.entry(inbound, result.clone()));
                state.messages.push(result);
                // Its result is kept before anything else happens: never run again.
                journal.save(&state).await?;
            }
            journal.still_held()?;
            state.rounds += 1;
            // The last round offers no tools, so the model has to answer in words.
            let offer_tools = state.rounds < max_rounds && !tools.is_empty();
            let llm_round = StageTimer::start("llm_round");
            let generating = self.deps.broker.send(GenerateChat {
                llm_name: settings.llm_model.clone(),
                fallback_llm_name: settings.llm_fallback_model.clone(),
                request: ChatRequest {
                    messages: state.messages.clone(),
                    tools: if offer_tools {
                        tools.clone()
                    } else {
                        Vec::new()
                    },
                    ..ChatRequest::default()
                },
                origin: CallOrigin {
                    profile_id: Some(self.profile.id.clone()),
                    conversation_key: Some(conversation_key.clone()),
                    member_id: Some(inbound.member_id.clone()),
                },
                // Streamed only while someone listens: a page gone mid-turn costs nothing.
                listener: listener.filter(|listener| listener.is_open()).cloned(),
            });
            let response = journal
                .until_lost(async {
                    Ok(generating
                        .await
                        .map_err(|error| TurnError::Mailbox(error.to_string()))??)
                })
                .await?;
            drop(llm_round);
            if response.tool_calls.is_empty() || !offer_tools {
                let reply = if response.content.trim().is_empty() {
                    "Sorry, I have no answer to that.".to_string()
                } else {
                    response.content
                };
                return Ok(self.answered(inbound, state, reply));
            }
            let asked = ChatMessage {
                role: Role::Assistant,
                content: response.content,
                tool_calls: response.tool_calls.clone(),
                tool_call_id: None,
                images: Vec::new(),
            };
            state.entries.push(self.entry(inbound, asked.clone()));
            state.messages.push(asked);
            state.pending_calls = response.tool_calls;
            // What the model asked for is fixed now: a retry runs these calls, not new ones.
            journal.save(&state).await?;
        }
    }

    /// Mark `call` (the first pending one) in flight and save that before it starts; the
    /// context it runs with carries its idempotency key.
    async fn start_call(
        &self,
        state: &mut TurnState,
        call: &ToolCall,
        journal: &Journal,
        context: &ToolContext,
    ) -> Result<ToolContext, TurnError> {
        state.calls_started += 1;
        state.in_flight = Some(call.id.clone());
        journal.save(state).await?;
        // Stored, and the lease still surely this worker's: the call starts, well before
        // any other worker could take the conversation over.
        journal.still_held()?;
        Ok(ToolContext {
            idempotency_key: Some(journal.idempotency_key(state.calls_started)),
            ..context.clone()
        })
    }

    /// The turn ends with `reply`, which joins its history.
    fn answered(&self, inbound: &Inbound, mut state: TurnState, reply: String) -> TurnOutcome {
        state
            .entries
            .push(self.entry(inbound, ChatMessage::assistant(reply.clone())));
        TurnOutcome {
            profile_id: self.profile.id.clone(),
            result: TurnResult::Answered {
                reply,
                messages: state.entries,
            },
        }
    }

    async fn run_tool(&self, call: &ToolCall, context: &ToolContext) -> Ran {
        let _stage = StageTimer::start("tool_call");
        let result = self.tools.call(&call.name, &call.arguments, context).await;
        ran(call, result)
    }

    /// Stop here until the member answers `prompt` about `action` (a tool call, or a
    /// slash command asking to start), by `expires_at_ms` if the question is a tool's
    /// own, else within the profile's `confirmation_timeout_seconds`.
    fn suspend(
        &self,
        inbound: &Inbound,
        mut state: TurnState,
        action: &str,
        arguments: serde_json::Value,
        prompt: String,
        expires_at_ms: Option<i64>,
    ) -> Result<TurnOutcome, TurnError> {
        let expires_at_ms =
            expires_at_ms.unwrap_or_else(|| self.profile.processing.answer_deadline_ms(now_ms()));
        state.in_flight = None;
        let turn_state = state.to_stored_value()?;
        tracing::info!(action, "waiting for confirmation");
        let asked = AskedApproval {
            tool_name: action.to_string(),
            arguments,
            prompt,
            turn_state,
            expires_at_ms,
            approvers: Vec::new(),
        };
        Ok(TurnOutcome {
            profile_id: self.profile.id.clone(),
            result: TurnResult::NeedsConfirmation(Box::new(PendingConfirmation::new(
                inbound,
                &self.profile.id,
                asked,
            ))),
        })
    }

    /// Who the tools of this turn act for, and how long the member has to answer them.
    fn tool_context(&self, inbound: &Inbound) -> ToolContext {
        ToolContext {
            member_id: inbound.member_id.clone(),
            conversation_key: inbound.conversation.clone(),
            profile_id: self.profile.id.clone(),
            question_timeout: std::time::Duration::from_secs(
                self.profile.processing.confirmation_timeout_seconds,
            ),
            idempotency_key: None,
        }
    }

    /// The history row of `message`: its text and tool calls, never its images.
    fn entry(&self, inbound: &Inbound, message: ChatMessage) -> HistoryEntry {
        HistoryEntry {
            role: message.role,
            content: message.content,
            profile_id: self.profile.id.clone(),
            inbox_id: Some(inbound.id.clone()),
            tool_calls: message.tool_calls,
            tool_call_id: message.tool_call_id,
            created_at_ms: now_ms(),
        }
    }
}

/// How a tool call went: a result for the model, or a question for the member.
enum Ran {
    Done(String),
    Suspended(Box<ToolSuspension>),
    /// The tool's output is the turn's answer.
    Reply(String),
}

fn ran(call: &ToolCall, result: Result<String, ToolError>) -> Ran {
    tracing::debug!(tool = %call.name, "tool call finished");
    match result {
        Ok(text) => Ran::Done(text),
        Err(ToolError::Suspended(suspension)) => Ran::Suspended(suspension),
        Err(ToolError::ReplyDirectly(text)) => Ran::Reply(text),
        // The model reads the error and can correct itself or explain.
        Err(error) => Ran::Done(format!("error: {error}")),
    }
}
