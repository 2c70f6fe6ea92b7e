//! `ProcessingService`: one actor per service profile. It builds the prompt,
//! runs the LLM tool loop through the `LlmBroker`, executes tool calls through
//! the profile's tools stack, and returns the reply with the turn's history.
//! Photos go to the profile's model as images when it can see (`images.rs`).
//!
//! Turns run as tasks on the tokio runtime, so one profile serves many
//! conversations at once; the queue guarantees one turn per conversation.

mod images;
mod journal;
mod prompt;
mod turn;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use actix::{Actor, Context, Handler, Recipient, ResponseFuture};
use tracing::Instrument;

pub use journal::{INTERRUPTED_CALL_RESULT, INTERRUPTED_PLUGIN_CALL_REPLY};
pub use turn::{DECLINED_RESULT, EXPIRED_RESULT, UNKNOWN_OUTCOME_RESULT};

pub use prompt::{DEFAULT_SYSTEM_PROMPT, starting_with_user, system_prompt};
use turn::TurnRunner;

use crate::config::{LlmModelConfig, ResolvedProfile};
use crate::family::Family;
use crate::llm::GenerateChat;
use crate::ports::{ConversationMemory, UserProfiles};
use crate::tools::ToolsProvider;
use crate::turn::{ProcessTurn, ResumeTurn, TurnError, TurnOutcome};

/// What every profile's service needs besides its profile.
#[derive(Clone)]
pub struct ProcessingDeps {
    pub broker: Recipient<GenerateChat>,
    pub memory: Arc<dyn ConversationMemory>,
    pub profiles: Arc<dyn UserProfiles>,
    pub family: Arc<Family>,
    /// Names of config `llms` that can see images: a profile whose `llm_model` is one gets
    /// the member's photos as images, any other a line saying it cannot see them.
    pub vision_llms: Arc<HashSet<String>>,
    /// The plugins, when any profile may use them: a member's message that completes a
    /// pending plugin call is answered by the plugin without the model (seed 000 §3.6).
    pub plugins: Option<Arc<crate::plugins::PluginRuntime>>,
    /// Where running turns keep their progress (exactly-once tool calls).
    pub journal: Arc<dyn crate::ports::TurnJournal>,
}

impl ProcessingDeps {
    /// The names of `llms` whose model the operator declared able to see (`vision: true`).
    pub fn vision_llms(llms: &BTreeMap<String, LlmModelConfig>) -> Arc<HashSet<String>> {
        Arc::new(
            llms.iter()
                .filter(|(_, model)| model.vision)
                .map(|(name, _)| name.clone())
                .collect(),
        )
    }
}

pub struct ProcessingService {
    turn: Arc<TurnRunner>,
    /// The intents engine of an `engine: intents` profile, which answers in place of the
    /// tool loop.
    intents: Option<Arc<crate::intents::IntentsEngine>>,
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
            intents: None,
        }
    }

    /// This profile's turns go through the intents engine.
    pub fn with_intents(mut self, engine: Arc<crate::intents::IntentsEngine>) -> Self {
        self.intents = Some(engine);
        self
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
            conversation = %message.inbound.conversation,
            profile = %runner.profile.id,
            inbox_id = %message.inbound.id,
        );
        if let Some(engine) = self.intents.clone() {
            return spawn_turn(span, async move { engine.run(message).await });
        }
        spawn_turn(span, async move { runner.run(message).await })
    }
}

impl Handler<ResumeTurn> for ProcessingService {
    type Result = ResponseFuture<Result<TurnOutcome, TurnError>>;

    fn handle(&mut self, message: ResumeTurn, _ctx: &mut Self::Context) -> Self::Result {
        let runner = self.turn.clone();
        let span = tracing::info_span!(
            "turn",
            conversation = %message.inbound.conversation,
            profile = %runner.profile.id,
            inbox_id = %message.inbound.id,
            confirmation = %message.confirmation.id,
        );
        if let Some(engine) = self.intents.clone() {
            return spawn_turn(span, async move { engine.resume(message).await });
        }
        spawn_turn(span, async move { runner.resume(message).await })
    }
}

/// Run a turn as its own task, in its span, so the actor never waits on it.
fn spawn_turn(
    span: tracing::Span,
    turn: impl std::future::Future<Output = Result<TurnOutcome, TurnError>> + Send + 'static,
) -> ResponseFuture<Result<TurnOutcome, TurnError>> {
    let task = tokio::spawn(turn.instrument(span));
    Box::pin(async move {
        task.await
            .unwrap_or_else(|error| Err(TurnError::Mailbox(format!("turn aborted: {error}"))))
    })
}
