//! hearth's actors in this process on tokio's paused clock, for the tests of what happens
//! with time: expiries, retries, time-to-lives. `run_paused` runs a test in an actix System
//! on a paused runtime, the wall clock following it (`hearth::clock`), so a five-minute
//! expiry or an hour's backoff passes at once and always the same way. `PausedHearth` is
//! the app started there with in-memory stores, neither HTTP nor a chat platform (their
//! sockets would race a clock that jumps), a model answering from a script in this
//! process (`PausedModel`), the console channel, whose replies the test reads, and no
//! memory indexer.

// The integration tests and the benchmarks each use a different part of the support.
#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Context, Handler};
use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::time::Instant;

use hearth::actors::llm_broker::ModelEntry;
use hearth::actors::request_queue::{
    AnswerConfirmation, AnswerError, Answered, DeliverReply, SubmitInbound, Submitted,
};
use hearth::app::{self, RunningApp, StartOptions};
use hearth::config::LlmBackend;
use hearth::ids::ConversationKey;
use hearth::llm::scripted::ScriptedProvider;
use hearth::llm::{ChatRequest, ChatResponse, LlmError, LlmProvider, Role};
use hearth::ports::{AnswerPlace, Inbound, InboxRecord, now_ms};
use hearth::storage::Stores;

use super::hearth_app::{load, test_env};
use super::test_config::TestConfig;

/// The channel the paused tests' messages come from and their replies go to: the console's
/// (`hearth chat`), a channel every intent's constraints may name, taken by the test here.
pub const CHANNEL: &str = "console";

/// Longer than any timer a test waits for: a reply not there by then never comes.
const AT_MOST: Duration = Duration::from_secs(7 * 24 * 3600);

/// Run `test` in an actix System whose clock starts paused, hearth's wall clock following
/// it. Time moves only when every task waits for a timer: then straight to the next one.
pub fn run_paused<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("paused runtime")
    };
    actix::System::with_tokio_rt(runtime).block_on(async move {
        let _clock = hearth::clock::follow_tokio_clock();
        test().await;
    });
}

/// Return once every task waits for a timer or for outside input: a write handed to a
/// task is then done. The clock moves a millisecond.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// The model of every `llms` entry: answers from `script` (echoing once it runs out), and
/// notes when each call came.
#[derive(Default)]
pub struct PausedModel {
    pub script: ScriptedProvider,
    calls: Mutex<Vec<Instant>>,
}

impl PausedModel {
    /// When each call came, oldest first.
    pub fn calls(&self) -> Vec<Instant> {
        self.calls.lock().unwrap().clone()
    }

    /// The last tool result the model was given.
    pub fn last_tool_result(&self) -> String {
        let requests = self.script.requests();
        let last = requests.last().expect("the model was asked");
        last.messages
            .iter()
            .rev()
            .find(|message| message.role == Role::Tool)
            .map(|message| message.content.clone())
            .unwrap_or_default()
    }

    /// The system prompt of the last request.
    pub fn last_system_prompt(&self) -> String {
        let requests = self.script.requests();
        let last = requests.last().expect("the model was asked");
        last.messages
            .iter()
            .find(|message| message.role == Role::System)
            .map(|message| message.content.clone())
            .unwrap_or_default()
    }
}

#[async_trait]
impl LlmProvider for PausedModel {
    fn wire(&self) -> &'static str {
        self.script.wire()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls.lock().unwrap().push(Instant::now());
        self.script.chat(request).await
    }
}

/// What the paused channel was handed, and when.
struct Replies(mpsc::UnboundedSender<(Instant, DeliverReply)>);

impl Actor for Replies {
    type Context = Context<Self>;
}

impl Handler<DeliverReply> for Replies {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, _ctx: &mut Context<Self>) {
        let _ = self.0.send((Instant::now(), reply));
    }
}

/// hearth's actors on the paused clock (see the module doc).
pub struct PausedHearth {
    pub running: RunningApp,
    pub model: Arc<PausedModel>,
    replies: mpsc::UnboundedReceiver<(Instant, DeliverReply)>,
    pub folder: tempfile::TempDir,
}

impl PausedHearth {
    /// The test config (`TestConfig::new`) with `overrides`.
    pub async fn start(overrides: &[(&str, &str)]) -> PausedHearth {
        Self::start_with(overrides, |config, _| config).await
    }

    /// The test config changed by `change` (given the folder it lives in), with
    /// `overrides`.
    pub async fn start_with(
        overrides: &[(&str, &str)],
        change: impl FnOnce(TestConfig, &Path) -> TestConfig,
    ) -> PausedHearth {
        let folder = tempfile::tempdir().expect("temporary folder");
        // No model is reached over HTTP: every `llms` entry is the paused model. No memory
        // indexer unless a test turns it on: its pass every few seconds would fill the
        // clock's jumps of days.
        let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
            .with(|config| config.memory.enabled = false);
        let path = change(config, folder.path()).write(folder.path());
        let loaded = load(&path, &test_env(overrides));
        let model = Arc::new(PausedModel::default());
        let models = loaded
            .config
            .llms
            .keys()
            .map(|name| {
                let entry = ModelEntry {
                    model: name.clone(),
                    backend: LlmBackend::Cloud,
                    timeout: Duration::from_secs(60),
                    provider: model.clone(),
                    cost_per_million_input_tokens: 0.0,
                    cost_per_million_output_tokens: 0.0,
                    vision: false,
                };
                (name.clone(), entry)
            })
            .collect::<HashMap<_, _>>();
        let (sender, replies) = mpsc::unbounded_channel();
        let channel = Replies(sender).start();
        let options = StartOptions {
            serve: false,
            extra_channels: HashMap::from([(CHANNEL.to_string(), channel.recipient())]),
            stores: Some(Stores::in_memory()),
        };
        let running = app::start_with_models(&loaded, options, models)
            .await
            .unwrap_or_else(|error| panic!("hearth does not start: {error}"));
        PausedHearth {
            running,
            model,
            replies,
            folder,
        }
    }

    /// `member` writes `text` in their own conversation; the message's inbox id.
    pub async fn say(&self, member: &str, text: &str) -> String {
        let inbound = Inbound {
            id: Inbound::new_id(),
            conversation: ConversationKey::new(CHANNEL, member).unwrap(),
            member_id: member.parse().unwrap(),
            text: text.into(),
            platform_event_id: None,
            received_at_ms: now_ms(),
            extras: Default::default(),
        };
        let id = inbound.id.clone();
        let submitted = self
            .running
            .queue
            .send(SubmitInbound {
                inbound,
                listener: None,
                only_answer: false,
            })
            .await;
        assert!(
            matches!(submitted, Ok(Ok(Submitted::Accepted))),
            "{submitted:?}"
        );
        id
    }

    /// The next reply the channel is handed, and when.
    pub async fn next_reply(&mut self) -> (Instant, DeliverReply) {
        tokio::time::timeout(AT_MOST, self.replies.recv())
            .await
            .expect("no reply within a week")
            .expect("the channel is gone")
    }

    /// Whether a reply is waiting now.
    pub fn has_reply(&mut self) -> bool {
        !self.replies.is_empty()
    }

    /// `member` answers confirmation `id` from their own conversation.
    pub async fn answer(
        &self,
        id: &str,
        member: &str,
        approve: bool,
    ) -> Result<Answered, AnswerError> {
        self.running
            .queue
            .send(AnswerConfirmation {
                confirmation_id: id.parse().unwrap(),
                member_id: member.parse().unwrap(),
                place: AnswerPlace::Conversation(ConversationKey::new(CHANNEL, member).unwrap()),
                approve,
                reply_to: None,
            })
            .await
            .expect("the queue is running")
    }

    /// The stored inbox record of message `id`, once what was under way is written.
    pub async fn record(&self, id: &str) -> InboxRecord {
        settle().await;
        let record = self.running.stores.inbox.get(id).await.unwrap();
        record.unwrap_or_else(|| panic!("no inbox record {id}"))
    }
}
