//! `HttpChannel`: the actor behind `POST /inbound`.
//!
//! `SubmitHttpInbound` registers the caller's waiter and submits the message to the
//! queue in one step, so a fast reply can never arrive before anyone listens. A
//! reply with no waiter (the caller gave up, or hearth restarted) stays stored in
//! the inbox and can be read with `GET /inbound/{id}`.
//!
//! Among several workers on one database, the turn may run on the worker holding its
//! conversation: that one wakes the others when the turn's end is stored, and the waiter
//! here is answered from the reply the wake-up carries (`WakeTopic::Replied`), else from
//! the inbox (`WakeTopic::Answered`).
//!
//! A message sent again while its first turn runs (on this worker or another) waits like
//! the first one (`AwaitReply`): one message may have several waiters, each answered. So
//! does an answer to a confirmation whose turn another worker resumes. A waiter registered
//! after the turn ended elsewhere is answered at once from what is stored.

use std::collections::HashMap;

use actix::fut::{ActorFutureExt, WrapFuture};
use std::sync::Arc;

use actix::{
    Actor, Addr, AsyncContext, Context, Handler, Message, ResponseActFuture, StreamHandler,
};
use tokio::sync::oneshot;

use crate::actors::request_queue::{
    DeliverReply, ReplyKind, RequestQueue, SubmitError, SubmitInbound, Submitted,
};
use crate::ports::{AnsweredWith, Inbound, InboxStatus, WakeTopic, WakeUp};
use crate::workers::Worker;

/// Submit `inbound` to the queue; its reply will be sent to `reply_to`.
///
/// Sent by `POST /inbound` (`http/inbound.rs`) and the web page's chat
/// (`http/page/chat.rs`); handled here, in `channels/http.rs`.
#[derive(Message)]
#[rtype(result = "Result<Submitted, HttpSubmitError>")]
pub struct SubmitHttpInbound {
    pub inbound: Inbound,
    pub reply_to: oneshot::Sender<DeliverReply>,
    /// Who hears the reply's text as the model writes it (the web page's stream).
    pub listener: Option<crate::llm::TextListener>,
    /// Only an answer to an open question (`SubmitInbound::only_answer`).
    pub only_answer: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HttpSubmitError {
    #[error(transparent)]
    Queue(#[from] SubmitError),
    #[error("the request queue is not running")]
    QueueStopped,
}

/// A caller stopped waiting for `inbox_id`: the waiters whose caller is gone are dropped.
///
/// Sent by `http/inbound.rs`, `http/page/chat.rs` and `http/page/chat_stream.rs` when
/// their wait ends without the reply; handled here, in `channels/http.rs`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetReply {
    pub inbox_id: String,
}

/// Wait for the reply of `inbox_id`, a message stored before (sent again while its turn
/// runs).
///
/// Sent by `POST /inbound` (a message sent again) and `POST /inbound/confirm` (a turn
/// another worker resumes), both in `http/inbound.rs`; handled here, in `channels/http.rs`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AwaitReply {
    pub inbox_id: String,
    pub reply_to: oneshot::Sender<DeliverReply>,
}

pub struct HttpChannel {
    queue: Addr<RequestQueue>,
    /// Each waiting message's callers.
    waiters: HashMap<String, Vec<oneshot::Sender<DeliverReply>>>,
    /// Among several workers: where turns run elsewhere are read back from.
    shared: Option<SharedWith>,
}

struct SharedWith {
    worker: Arc<Worker>,
    inbox: Arc<dyn crate::ports::Inbox>,
    pending: Arc<dyn crate::ports::PendingActions>,
}

impl HttpChannel {
    pub fn new(queue: Addr<RequestQueue>) -> Self {
        HttpChannel {
            queue,
            waiters: HashMap::new(),
            shared: None,
        }
    }

    /// One of several workers on the database: a turn another worker ran answers the
    /// caller waiting here.
    pub fn shared_with(
        mut self,
        worker: Arc<Worker>,
        inbox: Arc<dyn crate::ports::Inbox>,
        pending: Arc<dyn crate::ports::PendingActions>,
    ) -> Self {
        self.shared = Some(SharedWith {
            worker,
            inbox,
            pending,
        });
        self
    }

    /// The stored end of the turn of `inbox_id`, as the reply its waiter expects; `None`
    /// while it has none (still accepted).
    async fn stored_reply(
        inbox: Arc<dyn crate::ports::Inbox>,
        pending: Arc<dyn crate::ports::PendingActions>,
        inbox_id: String,
    ) -> Option<DeliverReply> {
        let record = inbox.get(&inbox_id).await.ok()??;
        let inbound = record.inbound;
        let (text, kind) = match record.status {
            InboxStatus::Answered => (record.reply.unwrap_or_default(), ReplyKind::Answer),
            InboxStatus::Failed => (record.reply.unwrap_or_default(), ReplyKind::Failed),
            InboxStatus::Suspended => {
                let confirmation = pending.waiting_for(&inbox_id).await.ok()??;
                (
                    confirmation.prompt,
                    ReplyKind::AskConfirmation {
                        confirmation_id: confirmation.id,
                        expires_at_ms: confirmation.expires_at_ms,
                    },
                )
            }
            _ => return None,
        };
        Some(DeliverReply {
            inbox_id,
            conversation: inbound.conversation,
            member_id: inbound.member_id,
            text,
            kind,
            reply_to_event: inbound.platform_event_id,
            outbox_id: None,
        })
    }
}

impl HttpChannel {
    /// Answer every caller waiting for `reply`'s message; whether one waited.
    fn answer(&mut self, reply: DeliverReply) -> bool {
        let Some(waiters) = self.waiters.remove(&reply.inbox_id) else {
            return false;
        };
        for waiter in waiters {
            let _ = waiter.send(reply.clone());
        }
        true
    }
}

impl Actor for HttpChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
        if let Some(shared) = &self.shared {
            ctx.add_stream(shared.worker.wake_ups());
        }
    }
}

impl StreamHandler<WakeUp> for HttpChannel {
    fn handle(&mut self, wake_up: WakeUp, ctx: &mut Self::Context) {
        let Some(shared) = &self.shared else {
            return;
        };
        if wake_up.topic == WakeTopic::Replied {
            if let Some(answered) = AnsweredWith::read(&wake_up.subject) {
                self.answer(DeliverReply {
                    inbox_id: answered.inbox_id,
                    conversation: answered.conversation,
                    member_id: answered.member_id,
                    text: answered.reply,
                    kind: ReplyKind::Answer,
                    reply_to_event: answered.reply_to_event,
                    outbox_id: None,
                });
            }
            return;
        }
        if wake_up.topic != WakeTopic::Answered || !self.waiters.contains_key(&wake_up.subject) {
            return;
        }
        let read = Self::stored_reply(
            shared.inbox.clone(),
            shared.pending.clone(),
            wake_up.subject,
        );
        ctx.spawn(read.into_actor(self).map(|reply, act, _ctx| {
            if let Some(reply) = reply {
                act.answer(reply);
            }
        }));
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl Handler<SubmitHttpInbound> for HttpChannel {
    type Result = ResponseActFuture<Self, Result<Submitted, HttpSubmitError>>;

    fn handle(&mut self, message: SubmitHttpInbound, _ctx: &mut Self::Context) -> Self::Result {
        let inbox_id = message.inbound.id.clone();
        // Registered before submitting: the reply cannot overtake the waiter.
        self.waiters
            .entry(inbox_id.clone())
            .or_default()
            .push(message.reply_to);
        let submitted = self.queue.send(SubmitInbound {
            inbound: message.inbound,
            listener: message.listener,
            only_answer: message.only_answer,
        });
        Box::pin(submitted.into_actor(self).map(move |result, act, _ctx| {
            let result = match result {
                Ok(Ok(submitted)) => Ok(submitted),
                Ok(Err(error)) => Err(HttpSubmitError::Queue(error)),
                Err(_) => Err(HttpSubmitError::QueueStopped),
            };
            // An answer to a question: the asking turn's next reply answers this message.
            if !matches!(
                result,
                Ok(Submitted::Accepted | Submitted::AnsweredQuestion { .. })
            ) {
                act.waiters.remove(&inbox_id);
            }
            result
        }))
    }
}

impl Handler<ForgetReply> for HttpChannel {
    type Result = ();

    fn handle(&mut self, message: ForgetReply, _ctx: &mut Self::Context) {
        if let Some(waiters) = self.waiters.get_mut(&message.inbox_id) {
            waiters.retain(|waiter| !waiter.is_closed());
            if waiters.is_empty() {
                self.waiters.remove(&message.inbox_id);
            }
        }
    }
}

impl Handler<AwaitReply> for HttpChannel {
    type Result = ();

    fn handle(&mut self, message: AwaitReply, ctx: &mut Self::Context) {
        let inbox_id = message.inbox_id;
        self.waiters
            .entry(inbox_id.clone())
            .or_default()
            .push(message.reply_to);
        // Among workers, the turn may have ended on another before this waiter was
        // registered, and its wake-up gone by: what is stored answers at once.
        let Some(shared) = &self.shared else {
            return;
        };
        let read = Self::stored_reply(shared.inbox.clone(), shared.pending.clone(), inbox_id);
        ctx.spawn(read.into_actor(self).map(|reply, act, _ctx| {
            if let Some(reply) = reply {
                act.answer(reply);
            }
        }));
    }
}

impl Handler<DeliverReply> for HttpChannel {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, _ctx: &mut Self::Context) {
        // A delayed notice answers the HTTP call; the final answer is then read by id.
        let kind = reply.kind.clone();
        let inbox_id = reply.inbox_id.clone();
        if !self.answer(reply) && kind == ReplyKind::Answer {
            tracing::debug!(%inbox_id, "http reply stored for later reading");
        }
    }
}
