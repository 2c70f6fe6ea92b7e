//! `ProcessingService`: one actor per service profile. It builds the prompt,
//! runs the LLM tool loop through the `LlmBroker`, executes tool calls through
//! the profile's tools stack, and returns the reply with the turn's history.
//!
//! Turns run as tasks on the tokio runtime, so one profile serves many
//! conversations at once; the queue guarantees one turn per conversation.

mod messages;
mod prompt;

use std::sync::Arc;

use actix::{Actor, Context, Handler, Recipient, ResponseFuture};
use tracing::Instrument;

pub use messages::{ProcessTurn, TurnError, TurnOutcome};
pub use prompt::{DEFAULT_SYSTEM_PROMPT, starting_with_user, system_prompt};

use crate::actors::llm_broker::{CallOrigin, GenerateChat};
use crate::config::ResolvedProfile;
use crate::family::Family;
use crate::llm::{ChatMessage, ChatRequest, Role};
use crate::ports::{ConversationMemory, HistoryEntry, UserProfiles, now_ms};
use crate::tools::{ToolContext, ToolsProvider};

/// What every profile's service needs besides its profile.
#[derive(Clone)]
pub struct ProcessingDeps {
    pub broker: Recipient<GenerateChat>,
    pub memory: Arc<dyn ConversationMemory>,
    pub profiles: Arc<dyn UserProfiles>,
    pub family: Arc<Family>,
}

pub struct ProcessingService {
    turn: Arc<TurnRunner>,
}

impl ProcessingService {
    pub fn new(
        profile: ResolvedProfile,
        tools: Arc<dyn ToolsProvider>,
        deps: ProcessingDeps,
    ) -> Self {
        ProcessingService {
            turn: Arc::new(TurnRunner {
                profile,
                tools,
                deps,
            }),
        }
    }
}

impl Actor for ProcessingService {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

impl Handler<ProcessTurn> for ProcessingService {
    type Result = ResponseFuture<Result<TurnOutcome, TurnError>>;

    fn handle(&mut self, message: ProcessTurn, _ctx: &mut Self::Context) -> Self::Result {
        let runner = self.turn.clone();
        let span = tracing::info_span!(
            "turn",
            conversation = %message.inbound.conversation_key(),
            profile = %runner.profile.id,
            inbox_id = %message.inbound.id,
        );
        let task = tokio::spawn(async move { runner.run(message).await }.instrument(span));
        Box::pin(async move {
            task.await
                .unwrap_or_else(|error| Err(TurnError::Mailbox(format!("turn aborted: {error}"))))
        })
    }
}

struct TurnRunner {
    profile: ResolvedProfile,
    tools: Arc<dyn ToolsProvider>,
    deps: ProcessingDeps,
}

impl TurnRunner {
    async fn run(&self, message: ProcessTurn) -> Result<TurnOutcome, TurnError> {
        let settings = &self.profile.processing;
        let inbound = &message.inbound;
        let conversation_key = inbound.conversation_key();
        let now = chrono::Utc::now();
        let since_ms = now_ms()
            - i64::try_from(settings.history_max_age_hours)
                .unwrap_or(i64::MAX / 3_600_000)
                .saturating_mul(3_600_000);
        let facts = self.deps.profiles.get(&inbound.member_id).await?;
        let history = self
            .deps
            .memory
            .recent(&conversation_key, settings.max_history_messages, since_ms)
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
        let mut messages = Vec::with_capacity(history.len() + 4);
        messages.push(ChatMessage::system(system_prompt(
            template,
            settings.timezone,
            now,
            &member_name,
            &facts,
        )));
        messages.extend(
            starting_with_user(&history)
                .iter()
                .map(|entry| ChatMessage {
                    role: entry.role,
                    content: entry.content.clone(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                }),
        );
        messages.push(ChatMessage::user(message.text.clone()));

        let mut turn_entries = vec![self.entry(inbound, ChatMessage::user(message.text.clone()))];
        let tools = self.tools.tools().await;
        let tool_context = ToolContext {
            member_id: inbound.member_id.clone(),
            conversation_key: conversation_key.clone(),
            profile_id: self.profile.id.clone(),
        };
        let max_iterations = settings.max_tool_iterations.max(1);
        for iteration in 1..=max_iterations {
            // The last round offers no tools, so the model has to answer in words.
            let offer_tools = iteration < max_iterations && !tools.is_empty();
            let response = self
                .deps
                .broker
                .send(GenerateChat {
                    llm_name: settings.llm_model.clone(),
                    fallback_llm_name: settings.llm_fallback_model.clone(),
                    request: ChatRequest {
                        messages: messages.clone(),
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
                    },
                })
                .await
                .map_err(|error| TurnError::Mailbox(error.to_string()))??;
            if response.tool_calls.is_empty() || !offer_tools {
                let reply = if response.content.trim().is_empty() {
                    "Sorry, I have no answer to that.".to_string()
                } else {
                    response.content
                };
                turn_entries.push(self.entry(inbound, ChatMessage::assistant(reply.clone())));
                return Ok(TurnOutcome {
                    profile_id: self.profile.id.clone(),
                    reply,
                    messages: turn_entries,
                });
            }
            let asked = ChatMessage {
                role: Role::Assistant,
                content: response.content,
                tool_calls: response.tool_calls.clone(),
                tool_call_id: None,
            };
            turn_entries.push(self.entry(inbound, asked.clone()));
            messages.push(asked);
            for call in response.tool_calls {
                let result = match self
                    .tools
                    .call(&call.name, &call.arguments, &tool_context)
                    .await
                {
                    Ok(text) => text,
                    // The model reads the error and can correct itself or explain.
                    Err(error) => format!("error: {error}"),
                };
                tracing::debug!(tool = %call.name, "tool call finished");
                let result = ChatMessage::tool_result(call.id, result);
                turn_entries.push(self.entry(inbound, result.clone()));
                messages.push(result);
            }
        }
        unreachable!("the last iteration always answers")
    }

    fn entry(&self, inbound: &crate::ports::Inbound, message: ChatMessage) -> HistoryEntry {
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
