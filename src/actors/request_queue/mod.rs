//! `RequestQueue`: the durable front door of processing.
//!
//! It stores every accepted inbound message before anything else happens,
//! keeps the messages of one conversation in order, runs different
//! conversations in parallel up to `queue.max_parallel_conversations`, answers
//! "busy" instead of growing past `queue.max_backlog`, routes slash commands to
//! their profile, and on start-up resumes every message accepted and not
//! answered. A turn that fails transiently is retried later with the member told
//! once (`retries.rs`); the reply and the turn's history are stored in one transaction. A running
//! turn can put a question to its member (`questions.rs`); their next message answers it.

mod cancelling;
mod confirmations;
mod delivery;
mod draining;
mod lanes;
mod leases;
mod messages;
mod noted_questions;
mod questions;
mod retries;
mod routing;
mod scheduled;
mod suspending;
mod telling;
mod transcribing;
mod waiting_plans;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use actix::fut::{self, ActorFutureExt, WrapFuture};
use actix::{Actor, Addr, AsyncContext, Context, Handler, Recipient, ResponseActFuture};
use futures::FutureExt;
use tokio::sync::oneshot;

pub use confirmations::STUCK_CHECK_EVERY;
pub use draining::DrainTurns;
pub use lanes::Lanes;
pub use leases::ORPHANS_LOOKED_FOR;
pub use messages::{
    AnswerConfirmation, AnswerError, Answered, CANCELLED_OUTCOME, CancelPending, Cancelled,
    DeliverReply, EXPIRED_OUTCOME, QueueStored, ReplyKind, SubmitError, SubmitInbound, Submitted,
};
pub use questions::{AskedQuestion, ShowQuestion};
pub use retries::{DELAYED_REPLY, FAILED_REPLY};
pub use routing::Router;
pub use suspending::ASKED_A_PARENT;
pub use transcribing::VoiceNotes;
use waiting_plans::{WaitingPlans, process_new};

use crate::actors::processing::ProcessingService;
use crate::config::QueueConfig;
use crate::family::OwnChats;
use crate::ids::{ConfirmationId, ConversationKey, MemberId};
use crate::llm::TextListener;
use crate::metrics::{Metrics, StageTimer};
use crate::ports::{
    Acceptance, Decision, Fence, Inbound, Inbox, Outbox, PendingActions, PendingConfirmation,
    PendingPluginCalls, ScriptWorkflows, StorageError, TurnRecord, now_ms,
};
use crate::readiness::Readiness;
use crate::turn::{ProcessTurn, ResumeTurn, TurnError, TurnOutcome, TurnResult};

struct QueuedTurn {
    inbound: Inbound,
    attempts: u32,
    /// Set when the turn continues after its confirmation was answered.
    resume: Option<Resume>,
    /// Who hears its text as the model writes it; nobody unless its sender listens.
    listener: TextListener,
    /// The conversation's lease its run started under (among workers): its end is stored
    /// only while that generation is current.
    fence: Option<Fence>,
    /// No run of its message has journaled anything: stored just now alone on the database
    /// (`Some(None)`), or among workers stored while this one held the conversation at this
    /// generation, or read without a journal and never tried under it (`Some(Some(_))`,
    /// `push_stored`, `queue_stored`). Its first run here under that lease takes it and
    /// does not read the journal; any other run reads it.
    unjournaled: Option<Option<i64>>,
}

impl QueuedTurn {
    fn new(inbound: Inbound, attempts: u32) -> Self {
        QueuedTurn {
            inbound,
            attempts,
            resume: None,
            listener: TextListener::default(),
            fence: None,
            unjournaled: None,
        }
    }
}

struct Resume {
    confirmation: Box<PendingConfirmation>,
    /// The decision once taken from storage (`consume` hands it out once); `None` before.
    decision: Option<Option<Decision>>,
    /// Whoever answered and waits for the turn's next reply (an HTTP call).
    reply_to: Option<oneshot::Sender<DeliverReply>>,
}

/// How a turn that ran without error ended, stored; `outbox_id` is the row delivering it
/// (channels that deliver through the outbox).
enum Finished {
    Answered {
        profile_id: String,
        reply: String,
        outbox_id: Option<i64>,
        /// Whether the other workers were woken with the turn's end, by the statement
        /// that stored it (else `turn_stored` wakes them).
        woken: bool,
    },
    /// Suspended, stored with every message asking it (`suspending.rs`).
    Asked {
        confirmation: Box<PendingConfirmation>,
        prompts: Vec<suspending::ShownPrompt>,
    },
    /// Nothing stored: the conversation's lease was lost while the turn ran (this worker
    /// away from the database longer than the lease), and another worker runs it.
    Moved,
}

/// The ports the queue works on.
pub struct QueuePorts {
    pub inbox: Arc<dyn Inbox>,
    pub pending: Arc<dyn PendingActions>,
    /// Plugin calls waiting for a member's next message: `/cancel` drops them.
    pub plugin_calls: Arc<dyn PendingPluginCalls>,
    /// Members' family-script workflows: `/cancel` drops them.
    pub script_workflows: Arc<dyn ScriptWorkflows>,
    /// What channels that deliver durably still have to deliver.
    pub outbox: Arc<dyn Outbox>,
    /// Intents plans waiting for a member's answer: `/cancel` cancels them.
    pub plans: Arc<dyn crate::ports::PlanExecutions>,
}

pub struct RequestQueue {
    inbox: Arc<dyn Inbox>,
    pending: Arc<dyn PendingActions>,
    /// Plugin calls waiting for a member's next message: `/cancel` drops them.
    plugin_calls: Arc<dyn PendingPluginCalls>,
    /// Members' family-script workflows: `/cancel` drops them.
    script_workflows: Arc<dyn ScriptWorkflows>,
    /// Intents plans waiting for a member's answer: `/cancel` cancels them.
    plans: Arc<dyn crate::ports::PlanExecutions>,
    outbox: Arc<dyn Outbox>,
    router: Router,
    services: HashMap<String, Addr<ProcessingService>>,
    channels: HashMap<String, Recipient<DeliverReply>>,
    /// The channels whose messages go through the durable outbox (`delivery.rs`).
    durable_channels: HashSet<String>,
    /// Confirmations whose turn is queued or running again, so a confirmation found
    /// answered and not resumed is put back in its lane once only.
    resuming: HashSet<ConfirmationId>,
    settings: QueueConfig,
    lanes: Lanes<ConversationKey, QueuedTurn>,
    /// Submissions being written to the inbox: they count against the backlog already.
    reserved: usize,
    /// The turn running in each conversation, keyed like the lanes.
    running: HashMap<ConversationKey, questions::RunningTurn>,
    /// Questions waiting for a member's next message, by (conversation, member id).
    questions: HashMap<(ConversationKey, MemberId), questions::OpenQuestion>,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    /// Each member's own chats, where a confirmation escalated to them is shown
    /// (`suspending.rs`); the platforms keep it up to date.
    own_chats: Arc<OwnChats>,
    /// `/cancel`s waiting for their turn in a conversation's lane (`cancelling.rs`).
    cancels: HashMap<ConversationKey, Vec<cancelling::WaitingCancel>>,
    /// Set by `DrainTurns`: no turn starts, and its sender waits for the running ones.
    draining: draining::Draining,
    /// The conversations this worker runs, among the database's workers (`leases.rs`).
    leases: leases::ConversationLeases,
    /// Where questions are noted for the other workers (`noted_questions.rs`); `None`
    /// alone on the database.
    question_notes: Option<Arc<dyn crate::ports::ChannelState>>,
    /// Where voice notes are transcribed before their turn (`transcribing.rs`); `None`:
    /// a voice note is answered that none can be.
    voice_notes: Option<transcribing::VoiceNotes>,
}

impl RequestQueue {
    /// `durable_channels` are the channels of `channels` that deliver through the outbox.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ports: QueuePorts,
        router: Router,
        services: HashMap<String, Addr<ProcessingService>>,
        channels: HashMap<String, Recipient<DeliverReply>>,
        durable_channels: HashSet<String>,
        settings: QueueConfig,
        metrics: Arc<Metrics>,
        readiness: Arc<Readiness>,
    ) -> Self {
        // Not ready until the unanswered messages of the last run are queued again.
        readiness.set("queue", false, "resuming unanswered messages");
        RequestQueue {
            inbox: ports.inbox,
            pending: ports.pending,
            plugin_calls: ports.plugin_calls,
            script_workflows: ports.script_workflows,
            plans: ports.plans,
            outbox: ports.outbox,
            router,
            services,
            channels,
            durable_channels,
            resuming: HashSet::new(),
            lanes: Lanes::new(settings.max_parallel_conversations),
            settings,
            reserved: 0,
            running: HashMap::new(),
            questions: HashMap::new(),
            metrics,
            readiness,
            own_chats: Arc::default(),
            cancels: HashMap::new(),
            draining: Default::default(),
            leases: Default::default(),
            question_notes: None,
            voice_notes: None,
        }
    }

    /// This process as one of the database's workers: a conversation's turns run here
    /// only while this worker holds it (`leases.rs`), and the questions its turns ask are
    /// noted in `state` for the others (`noted_questions.rs`).
    pub fn with_worker(
        mut self,
        worker: Option<Arc<crate::workers::Worker>>,
        state: Arc<dyn crate::ports::ChannelState>,
    ) -> Self {
        self.question_notes = worker.is_some().then_some(state);
        self.leases = leases::ConversationLeases::new(worker);
        self
    }

    /// Each member's own chats, where confirmations escalated to them are shown.
    pub fn with_own_chats(mut self, own_chats: Arc<OwnChats>) -> Self {
        self.own_chats = own_chats;
        self
    }

    fn backlog(&self) -> usize {
        self.lanes.len() + self.reserved
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        while !self.draining.stops_turns()
            && let Some((key, turn)) = self.lanes.next_runnable()
        {
            self.start_turn(key, turn, ctx);
        }
        self.draining.turns_running(self.lanes.running());
        self.metrics
            .set_queue_depth(self.backlog(), self.lanes.running());
    }

    /// The profile a turn runs on: a resumed turn stays with the profile that
    /// suspended it; a scheduled task's runs on its profile; a new one goes where its
    /// slash command (or the default) routes it.
    fn profile_of<'a>(&'a self, turn: &'a QueuedTurn) -> &'a str {
        match (&turn.resume, &turn.inbound.extras.profile_id) {
            (Some(resume), _) => &resume.confirmation.profile_id,
            (None, Some(profile_id)) => profile_id,
            (None, None) => self.router.route(&turn.inbound.text).0,
        }
    }

    fn start_turn(&mut self, key: ConversationKey, mut turn: QueuedTurn, ctx: &mut Context<Self>) {
        let lease = self.leases.turn_lease(&key);
        if self.leases.among_workers() && lease.is_none() {
            // Its lease went (this worker stopped trusting its leases) after it was queued:
            // it waits for the conversation to be claimed again.
            self.lanes.finish(&key);
            self.push_turn(turn, ctx);
            return;
        }
        turn.fence = lease.as_ref().map(|lease| lease.fence.clone());
        if Self::needs_transcript(&turn) {
            return self.transcribe_first(key, turn, ctx);
        }
        tracing::debug!(
            stage = "lane_wait",
            inbox_id = %turn.inbound.id,
            elapsed_ms = now_ms().saturating_sub(turn.inbound.received_at_ms),
            "turn starts"
        );
        let scheduled = turn.inbound.extras.profile_id.is_some();
        let (text, slash_command) = if scheduled {
            (turn.inbound.text.as_str(), None)
        } else {
            let (_, text, slash_command) = self.router.route_command(&turn.inbound.text);
            (text, slash_command)
        };
        let profile_id = self.profile_of(&turn).to_string();
        let service = self.services.get(&profile_id).cloned();
        // Only the first run under the lease the message was stored under: a retry, or a
        // run under another generation (another worker may have run it meanwhile), reads.
        let unjournaled = turn.unjournaled.take()
            == Some(lease.as_ref().map(|lease| lease.fence.generation))
            && turn.resume.is_none();
        let process = ProcessTurn {
            inbound: turn.inbound.clone(),
            text: text.to_string(),
            slash_command,
            follows_plan: false,
            listener: Some(turn.listener.clone()),
            lease: lease.clone(),
            unjournaled,
        };
        let resume = turn
            .resume
            .as_ref()
            .map(|resume| (resume.confirmation.clone(), resume.decision));
        self.running.insert(
            key.clone(),
            questions::RunningTurn {
                inbound: turn.inbound.clone(),
                reply_to: turn
                    .resume
                    .as_mut()
                    .and_then(|resume| resume.reply_to.take()),
                deliver_as: None,
                listener: turn.listener.clone(),
            },
        );
        let pending = self.pending.clone();
        let follows_plan = (turn.resume.is_none()
            && process.slash_command.is_none()
            && !scheduled
            && self.router.plans_wait())
        .then(|| WaitingPlans {
            plans: self.plans.clone(),
            services: self.services.clone(),
        });
        let work = async move {
            let mut consumed = None;
            let outcome = async {
                let service = service.ok_or_else(|| {
                    TurnError::Mailbox(format!("no processing service for profile {profile_id:?}"))
                })?;
                let Some((confirmation, known)) = resume else {
                    return process_new(process, &profile_id, service, follows_plan).await;
                };
                let decision = match known {
                    Some(decision) => decision,
                    None => pending.consume(&confirmation.id).await?,
                };
                consumed = Some(decision);
                service
                    .send(ResumeTurn {
                        inbound: process.inbound,
                        confirmation: *confirmation,
                        decision,
                        lease,
                    })
                    .await
                    .map_err(|error| TurnError::Mailbox(error.to_string()))?
            }
            .await;
            (consumed, outcome)
        };
        ctx.spawn(
            work.into_actor(self)
                .map(move |(consumed, outcome), act, ctx| {
                    if let (Some(resume), Some(decision)) = (turn.resume.as_mut(), consumed) {
                        // `consume` hands the decision out once: a retry keeps it. Whether
                        // an approved call started is the turn journal's to say (a call is
                        // marked in flight there before it starts), so a retry never runs
                        // a started call again and still runs one that never started.
                        resume.decision = Some(decision);
                    }
                    match outcome {
                        Ok(outcome) => act.store_outcome(key, turn, outcome, ctx),
                        Err(error) => act.turn_finished(turn, Err(error), ctx),
                    }
                }),
        );
    }

    /// Store how the turn ended (and queue its delivery, for a channel that uses the
    /// outbox) in one transaction, then finish it.
    fn store_outcome(
        &mut self,
        key: ConversationKey,
        turn: QueuedTurn,
        outcome: TurnOutcome,
        ctx: &mut Context<Self>,
    ) {
        let inbox = self.inbox.clone();
        let inbox_id = turn.inbound.id.clone();
        let fence = turn.fence.clone();
        let stored = match outcome.result {
            TurnResult::Answered { reply, messages } => {
                let reply = transcribing::as_heard(&turn.inbound, reply);
                let outgoing = self.outgoing(&turn.inbound, &reply, &ReplyKind::Answer);
                let record = TurnRecord {
                    conversation_key: key,
                    messages,
                    reply: reply.clone(),
                    outgoing,
                };
                let profile_id = outcome.profile_id;
                let wake_ups = self.answered_wake_ups(&turn.inbound, Some(&reply));
                async move {
                    let (outbox_id, woken) = inbox
                        .complete_waking(&inbox_id, &record, fence.as_ref(), &wake_ups)
                        .await?;
                    Ok(Finished::Answered {
                        profile_id,
                        reply,
                        outbox_id,
                        woken,
                    })
                }
                .boxed_local()
            }
            TurnResult::NeedsConfirmation(confirmation) => {
                self.suspend_turn(&turn.inbound, confirmation, turn.fence.clone())
            }
            // Handed back by a plan's profile, the message went to its own; this is only
            // reached if that one handed it back too.
            TurnResult::NotPlaced => async {
                Err(TurnError::BadTurnState(
                    "the profile handed the message back".into(),
                ))
            }
            .boxed_local(),
        };
        // Refused for its lease: another worker holds the conversation now.
        let stored = async move {
            match stored.await {
                Err(TurnError::Storage(StorageError::Fenced { .. })) => Ok(Finished::Moved),
                other => other,
            }
        };
        let stage = StageTimer::start("store_turn");
        ctx.spawn(stored.into_actor(self).map(move |stored, act, ctx| {
            drop(stage);
            act.turn_finished(turn, stored, ctx);
        }));
    }

    fn turn_finished(
        &mut self,
        turn: QueuedTurn,
        result: Result<Finished, TurnError>,
        ctx: &mut Context<Self>,
    ) {
        let key = turn.inbound.conversation.clone();
        // Stopped for its lease: nothing of it is stored here; whoever holds the
        // conversation goes on from the journal.
        let result = match result {
            Err(error) if error.lease_lost() => {
                tracing::debug!(inbox_id = %turn.inbound.id, %error, "turn stopped");
                Ok(Finished::Moved)
            }
            other => other,
        };
        let retrying = matches!(&result, Err(error) if error.is_transient())
            && turn.attempts + 1 < self.settings.max_attempts;
        // A turn that moved did not end: taken here again, its message runs again.
        let moved = matches!(result, Ok(Finished::Moved));
        if !retrying && !moved {
            self.turn_ended_here(&turn.inbound.id);
        }
        if let Some(resume) = &turn.resume
            && !retrying
        {
            self.resuming.remove(&resume.confirmation.id);
        }
        match result {
            Ok(Finished::Answered {
                profile_id,
                reply,
                outbox_id,
                woken,
            }) => {
                self.metrics.increment(
                    "hearth_turns_total",
                    &[("profile", &profile_id), ("outcome", "answered")],
                );
                // Not woken by the statement that stored it: after the commit.
                let unsent = (!woken).then(|| reply.clone());
                self.deliver(&turn.inbound, reply, ReplyKind::Answer, outbox_id, ctx);
                if let Some(reply) = unsent {
                    self.turn_stored(&turn.inbound, Some(&reply));
                }
                self.lanes.finish(&key);
            }
            Ok(Finished::Asked {
                confirmation,
                prompts,
            }) => {
                self.metrics.increment(
                    "hearth_turns_total",
                    &[("profile", &confirmation.profile_id), ("outcome", "asked")],
                );
                self.schedule_expiry(confirmation.expires_at_ms, ctx);
                self.show_prompts(prompts, ctx);
                self.turn_stored(&turn.inbound, None);
                // The conversation goes on while the question waits.
                self.lanes.finish(&key);
            }
            Ok(Finished::Moved) => {
                tracing::warn!(inbox_id = %turn.inbound.id, conversation = %key,
                    "the conversation's lease was lost while its turn ran; another worker runs it");
                self.conversation_moved(&key);
            }
            Err(error) => {
                let attempts = turn.attempts + 1;
                self.metrics.error(error.kind());
                let retry = error.is_transient() && attempts < self.settings.max_attempts;
                tracing::warn!(
                    inbox_id = %turn.inbound.id,
                    conversation = %key,
                    attempts,
                    retry,
                    %error,
                    "turn failed"
                );
                if retry {
                    self.schedule_retry(key.clone(), turn, attempts, &error, ctx);
                } else {
                    self.give_up(key.clone(), turn, &error, ctx);
                }
            }
        }
        self.running.remove(&key);
        self.forget_questions(&key);
        self.run_cancels_when_free(&key, ctx);
        self.pump(ctx);
        self.release_if_idle(&key, ctx);
        self.claim_if_waiting(&key, ctx);
    }
}

impl Actor for RequestQueue {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
        let inbox = self.inbox.clone();
        // `wait`: no new submission is handled before the unanswered ones are queued,
        // so a conversation keeps its order across a restart.
        ctx.wait(
            async move { inbox.unanswered().await }
                .into_actor(self)
                .map(|unanswered, act, ctx| {
                    match unanswered {
                        Ok(records) => {
                            if !records.is_empty() {
                                tracing::info!(
                                    count = records.len(),
                                    "resuming unanswered messages"
                                );
                            }
                            for record in records {
                                act.push_turn(
                                    QueuedTurn::new(record.inbound, record.attempts),
                                    ctx,
                                );
                            }
                            act.share_conversations(ctx);
                            act.readiness.set("queue", true, "running");
                            act.reopen_confirmations(ctx);
                            act.resume_answered_periodically(ctx);
                        }
                        Err(error) => {
                            tracing::error!(%error, "cannot read the inbox to resume messages");
                            act.readiness
                                .set("queue", false, &format!("cannot resume: {error}"));
                        }
                    }
                    act.pump(ctx);
                }),
        );
    }
}

impl Handler<SubmitInbound> for RequestQueue {
    type Result = ResponseActFuture<Self, Result<Submitted, SubmitError>>;

    fn handle(&mut self, message: SubmitInbound, _ctx: &mut Self::Context) -> Self::Result {
        let channel = message.inbound.conversation.channel().to_owned();
        if let Some(inbox_id) =
            self.answer_open_question(&message.inbound, message.listener.as_ref())
        {
            self.metrics.increment(
                "hearth_inbound_total",
                &[("channel", &channel), ("outcome", "answered_question")],
            );
            return Box::pin(fut::ready(Ok(Submitted::AnsweredQuestion { inbox_id })));
        }
        let conversation = &message.inbound.conversation;
        if message.only_answer && !self.may_be_asked_elsewhere(conversation) {
            return Box::pin(fut::ready(Err(SubmitError::NoOpenQuestion)));
        }
        let asked_elsewhere = self.asked_elsewhere(conversation, &message.inbound.member_id);
        let only_answer = message.only_answer;
        let backlog = self.backlog();
        if backlog >= self.settings.max_backlog {
            self.metrics.increment(
                "hearth_inbound_total",
                &[("channel", &channel), ("outcome", "busy")],
            );
            return Box::pin(fut::ready(Err(SubmitError::Busy { backlog })));
        }
        self.reserved += 1;
        let inbox = self.inbox.clone();
        let listener = message.listener;
        // Held here among workers: the conversation's stored messages are read with it.
        let held_at = self.held_at(conversation);
        Box::pin(
            async move {
                let _stage = StageTimer::start("accept");
                // An answer to a question another worker's turn asks is stored like any
                // message; that worker reads it and hands it to the question.
                let asked = asked_elsewhere.await.unwrap_or_else(|error| {
                    tracing::warn!(%error, "questions of other workers not read");
                    None
                });
                if only_answer && asked.is_none() {
                    return (message.inbound, None, None);
                }
                let accepted = match held_at {
                    Some(generation) => inbox
                        .accept_reading(&message.inbound)
                        .await
                        .map(|(acceptance, read)| (acceptance, Some((generation, read)))),
                    None => inbox
                        .accept(&message.inbound)
                        .await
                        .map(|acceptance| (acceptance, None)),
                };
                (message.inbound, Some(accepted), asked)
            }
            .into_actor(self)
            .map(move |(inbound, accepted, asked), act, ctx| {
                act.reserved -= 1;
                let Some(accepted) = accepted else {
                    return Err(SubmitError::NoOpenQuestion);
                };
                let result = match accepted {
                    Ok((Acceptance::New, read)) => {
                        let mut turn = QueuedTurn::new(inbound, 0);
                        if let Some(listener) = listener {
                            turn.listener = listener;
                        }
                        if !act.leases_shared() {
                            turn.unjournaled = Some(None);
                        }
                        act.push_stored(turn, read, ctx);
                        Ok(match asked {
                            Some((asking, _)) => Submitted::AnsweredQuestion { inbox_id: asking },
                            None => Submitted::Accepted,
                        })
                    }
                    Ok((Acceptance::Duplicate(record), _)) => Ok(Submitted::Duplicate(record)),
                    Err(error) => {
                        act.metrics.error("storage");
                        Err(SubmitError::Storage(error))
                    }
                };
                let outcome = match &result {
                    Ok(Submitted::Accepted) => "accepted",
                    Ok(Submitted::Duplicate(_)) => "duplicate",
                    Ok(Submitted::AnsweredQuestion { .. }) => "answered_question",
                    Err(_) => "error",
                };
                act.metrics.increment(
                    "hearth_inbound_total",
                    &[("channel", &channel), ("outcome", outcome)],
                );
                act.pump(ctx);
                result
            }),
        )
    }
}
