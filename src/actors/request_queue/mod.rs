//! `RequestQueue`: the durable front door of processing.
//!
//! It stores every accepted inbound message before anything else happens,
//! keeps the messages of one conversation in order, runs different
//! conversations in parallel up to `queue.max_parallel_conversations`, answers
//! "busy" instead of growing past `queue.max_backlog`, routes slash commands to
//! their profile, and on start-up resumes every message accepted and not
//! answered. A turn that fails transiently is retried later with the member told
//! once; the reply and the turn's history are stored in one transaction. A running
//! turn can put a question to its member (`questions.rs`); their next message answers it.

mod confirmations;
mod lanes;
mod messages;
mod questions;
mod routing;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::fut::{self, ActorFutureExt, WrapFuture};
use actix::{Actor, Addr, AsyncContext, Context, Handler, Recipient, ResponseActFuture};
use tokio::sync::oneshot;

pub use lanes::Lanes;
pub use messages::{
    AnswerConfirmation, AnswerError, AskError, AskMember, CANCELLED_OUTCOME, CancelPending,
    Cancelled, SubmitError, SubmitInbound, Submitted,
};
pub use routing::Router;

use crate::actors::channels::{DeliverReply, ReplyKind};
use crate::actors::processing::{
    ProcessTurn, ProcessingService, ResumeTurn, TurnError, TurnResult,
};
use crate::config::QueueConfig;
use crate::metrics::Metrics;
use crate::ports::{
    Acceptance, Decision, Inbound, Inbox, PendingActions, PendingConfirmation, PendingPluginCalls,
    TurnRecord, now_ms,
};
use crate::readiness::Readiness;

pub const DELAYED_REPLY: &str = "Sorry, I can't reach my language model right now. \
    I've kept your message and will answer as soon as I can.";
pub const FAILED_REPLY: &str =
    "Sorry, I couldn't answer that message. Please try again in a little while.";

/// The longest pause between two retries of one message.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(3600);

struct QueuedTurn {
    inbound: Inbound,
    attempts: u32,
    /// Set when the turn continues after its confirmation was answered.
    resume: Option<Resume>,
}

impl QueuedTurn {
    fn new(inbound: Inbound, attempts: u32) -> Self {
        QueuedTurn {
            inbound,
            attempts,
            resume: None,
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

/// How a turn that ran without error ended.
enum Finished {
    Answered {
        profile_id: String,
        reply: String,
    },
    Asked {
        confirmation: Box<PendingConfirmation>,
    },
}

pub struct RequestQueue {
    inbox: Arc<dyn Inbox>,
    pending: Arc<dyn PendingActions>,
    /// Plugin calls waiting for a member's next message: `/cancel` drops them.
    plugin_calls: Arc<dyn PendingPluginCalls>,
    router: Router,
    services: HashMap<String, Addr<ProcessingService>>,
    channels: HashMap<String, Recipient<DeliverReply>>,
    settings: QueueConfig,
    lanes: Lanes<QueuedTurn>,
    /// Submissions being written to the inbox: they count against the backlog already.
    reserved: usize,
    /// The turn running in each conversation, keyed like the lanes.
    running: HashMap<String, questions::RunningTurn>,
    /// Questions waiting for a member's next message, by (conversation key, member id).
    questions: HashMap<(String, String), questions::OpenQuestion>,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
}

impl RequestQueue {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        inbox: Arc<dyn Inbox>,
        pending: Arc<dyn PendingActions>,
        plugin_calls: Arc<dyn PendingPluginCalls>,
        router: Router,
        services: HashMap<String, Addr<ProcessingService>>,
        channels: HashMap<String, Recipient<DeliverReply>>,
        settings: QueueConfig,
        metrics: Arc<Metrics>,
        readiness: Arc<Readiness>,
    ) -> Self {
        // Not ready until the unanswered messages of the last run are queued again.
        readiness.set("queue", false, "resuming unanswered messages");
        RequestQueue {
            inbox,
            pending,
            plugin_calls,
            router,
            services,
            channels,
            lanes: Lanes::new(settings.max_parallel_conversations),
            settings,
            reserved: 0,
            running: HashMap::new(),
            questions: HashMap::new(),
            metrics,
            readiness,
        }
    }

    fn backlog(&self) -> usize {
        self.lanes.len() + self.reserved
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        while let Some((key, turn)) = self.lanes.next_runnable() {
            self.start_turn(key, turn, ctx);
        }
        self.metrics
            .set_queue_depth(self.backlog(), self.lanes.running());
    }

    /// The profile a turn runs on: a resumed turn stays with the profile that
    /// suspended it; a new one goes where its slash command (or the default) routes it.
    fn profile_of<'a>(&'a self, turn: &'a QueuedTurn) -> &'a str {
        match &turn.resume {
            Some(resume) => &resume.confirmation.profile_id,
            None => self.router.route(&turn.inbound.text).0,
        }
    }

    fn start_turn(&mut self, key: String, mut turn: QueuedTurn, ctx: &mut Context<Self>) {
        let (_, text, slash_command) = self.router.route_command(&turn.inbound.text);
        let profile_id = self.profile_of(&turn).to_string();
        let service = self.services.get(&profile_id).cloned();
        let process = ProcessTurn {
            inbound: turn.inbound.clone(),
            text: text.to_string(),
            slash_command,
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
            },
        );
        let (inbox, pending) = (self.inbox.clone(), self.pending.clone());
        let work = async move {
            let mut consumed = None;
            let result = async {
                let service = service.ok_or_else(|| {
                    TurnError::Mailbox(format!("no processing service for profile {profile_id:?}"))
                })?;
                let inbox_id = process.inbound.id.clone();
                let outcome = match resume {
                    None => service.send(process).await,
                    Some((confirmation, known)) => {
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
                            })
                            .await
                    }
                }
                .map_err(|error| TurnError::Mailbox(error.to_string()))??;
                match outcome.result {
                    TurnResult::Answered { reply, messages } => {
                        inbox
                            .complete(
                                &inbox_id,
                                &TurnRecord {
                                    conversation_key: key,
                                    messages,
                                    reply: reply.clone(),
                                },
                            )
                            .await?;
                        Ok(Finished::Answered {
                            profile_id: outcome.profile_id,
                            reply,
                        })
                    }
                    TurnResult::NeedsConfirmation(confirmation) => {
                        pending.suspend(&confirmation).await?;
                        Ok(Finished::Asked { confirmation })
                    }
                }
            }
            .await;
            (consumed, result)
        };
        ctx.spawn(
            work.into_actor(self)
                .map(move |(consumed, result), act, ctx| {
                    if let (Some(resume), Some(decision)) = (turn.resume.as_mut(), consumed) {
                        // Never run an approved action twice: a retry after a failure
                        // cannot know whether it ran.
                        resume.decision = Some(match decision {
                            Some(Decision::Approved) => None,
                            other => other,
                        });
                    }
                    act.turn_finished(turn, result, ctx);
                }),
        );
    }

    fn turn_finished(
        &mut self,
        turn: QueuedTurn,
        result: Result<Finished, TurnError>,
        ctx: &mut Context<Self>,
    ) {
        let key = turn.inbound.conversation_key();
        match result {
            Ok(Finished::Answered { profile_id, reply }) => {
                self.metrics.increment(
                    "hearth_turns_total",
                    &[("profile", &profile_id), ("outcome", "answered")],
                );
                self.deliver(&turn.inbound, reply, ReplyKind::Answer);
                self.lanes.finish(&key);
            }
            Ok(Finished::Asked { confirmation }) => {
                self.metrics.increment(
                    "hearth_turns_total",
                    &[("profile", &confirmation.profile_id), ("outcome", "asked")],
                );
                self.schedule_expiry(confirmation.expires_at_ms, ctx);
                let kind = ReplyKind::AskConfirmation {
                    confirmation_id: confirmation.id.clone(),
                    expires_at_ms: confirmation.expires_at_ms,
                };
                self.deliver(&turn.inbound, confirmation.prompt.clone(), kind);
                // The conversation goes on while the question waits.
                self.lanes.finish(&key);
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
        self.pump(ctx);
    }

    fn schedule_retry(
        &mut self,
        key: String,
        mut turn: QueuedTurn,
        attempts: u32,
        error: &TurnError,
        ctx: &mut Context<Self>,
    ) {
        // Tell the member once, not on every retry of the same message.
        if attempts == 1 {
            self.deliver(&turn.inbound, DELAYED_REPLY.to_string(), ReplyKind::Delayed);
        }
        let delay = Duration::from_secs(self.settings.retry_delay_seconds)
            .saturating_mul(1 << (attempts - 1).min(16))
            .min(MAX_RETRY_DELAY);
        let inbox = self.inbox.clone();
        let inbox_id = turn.inbound.id.clone();
        let error_text = error.to_string();
        let next_attempt_at_ms =
            now_ms() + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX / 2);
        ctx.spawn(
            async move {
                if let Err(error) = inbox
                    .record_failure(&inbox_id, &error_text, next_attempt_at_ms)
                    .await
                {
                    tracing::warn!(%inbox_id, %error, "failed attempt not recorded");
                }
            }
            .into_actor(self),
        );
        turn.attempts = attempts;
        self.lanes.hold(&key, turn);
        ctx.run_later(delay, move |act, ctx| {
            act.lanes.release(&key);
            act.pump(ctx);
        });
    }

    fn give_up(
        &mut self,
        key: String,
        turn: QueuedTurn,
        error: &TurnError,
        ctx: &mut Context<Self>,
    ) {
        let profile_id = self.profile_of(&turn).to_string();
        self.metrics.increment(
            "hearth_turns_total",
            &[("profile", &profile_id), ("outcome", "failed")],
        );
        self.deliver(&turn.inbound, FAILED_REPLY.to_string(), ReplyKind::Failed);
        let inbox = self.inbox.clone();
        let inbox_id = turn.inbound.id.clone();
        let error_text = error.to_string();
        ctx.spawn(
            async move {
                if let Err(error) = inbox.give_up(&inbox_id, &error_text, FAILED_REPLY).await {
                    tracing::warn!(%inbox_id, %error, "failed message not marked");
                }
            }
            .into_actor(self),
        );
        self.lanes.finish(&key);
    }

    /// A reply of the turn of `inbound`: to whoever waits for it (an answered
    /// confirmation), else to its channel, as the reply to the member's latest message
    /// of the turn (the one that started it, or their answer to its last question).
    fn deliver(&mut self, inbound: &Inbound, text: String, kind: ReplyKind) {
        let running = self.running.get_mut(&inbound.conversation_key());
        let (waiter, inbox_id) = match running {
            Some(running) => (running.reply_to.take(), running.deliver_as.clone()),
            None => (None, None),
        };
        let (inbox_id, reply_to_event) =
            inbox_id.unwrap_or_else(|| (inbound.id.clone(), inbound.platform_event_id.clone()));
        let reply = DeliverReply {
            inbox_id,
            conversation_id: inbound.conversation_id.clone(),
            member_id: inbound.member_id.clone(),
            text,
            kind,
            reply_to_event,
        };
        if let Some(waiter) = waiter {
            let _ = waiter.send(reply);
            return;
        }
        let Some(channel) = self.channels.get(&inbound.channel) else {
            tracing::warn!(channel = %inbound.channel, inbox_id = %inbound.id,
                "no channel to deliver the reply to; it stays stored");
            return;
        };
        channel.do_send(reply);
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
                                let key = record.inbound.conversation_key();
                                act.lanes
                                    .push(&key, QueuedTurn::new(record.inbound, record.attempts));
                            }
                            act.readiness.set("queue", true, "running");
                            act.reopen_confirmations(ctx);
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
        let channel = message.inbound.channel.clone();
        if let Some(inbox_id) = self.answer_open_question(&message.inbound) {
            self.metrics.increment(
                "hearth_inbound_total",
                &[("channel", &channel), ("outcome", "answered_question")],
            );
            return Box::pin(fut::ready(Ok(Submitted::AnsweredQuestion { inbox_id })));
        }
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
        Box::pin(
            async move {
                let accepted = inbox.accept(&message.inbound).await;
                (message.inbound, accepted)
            }
            .into_actor(self)
            .map(move |(inbound, accepted), act, ctx| {
                act.reserved -= 1;
                let result = match accepted {
                    Ok(Acceptance::New) => {
                        let key = inbound.conversation_key();
                        act.lanes.push(&key, QueuedTurn::new(inbound, 0));
                        Ok(Submitted::Accepted)
                    }
                    Ok(Acceptance::Duplicate(record)) => Ok(Submitted::Duplicate(record)),
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
