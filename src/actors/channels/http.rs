//! `HttpChannel`: the actor behind `POST /inbound`.
//!
//! `SubmitHttpInbound` registers the caller's waiter and submits the message to the
//! queue in one step, so a fast reply can never arrive before anyone listens. A
//! reply with no waiter (the caller gave up, or hearth restarted) stays stored in
//! the inbox and can be read with `GET /inbound/{id}`.

use std::collections::HashMap;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, Addr, Context, Handler, Message, ResponseActFuture};
use tokio::sync::oneshot;

use crate::actors::request_queue::{
    DeliverReply, ReplyKind, RequestQueue, SubmitError, SubmitInbound, Submitted,
};
use crate::ports::Inbound;

/// Submit `inbound` to the queue; its reply will be sent to `reply_to`.
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

/// The caller stopped waiting for `inbox_id`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetReply {
    pub inbox_id: String,
}

pub struct HttpChannel {
    queue: Addr<RequestQueue>,
    waiters: HashMap<String, oneshot::Sender<DeliverReply>>,
}

impl HttpChannel {
    pub fn new(queue: Addr<RequestQueue>) -> Self {
        HttpChannel {
            queue,
            waiters: HashMap::new(),
        }
    }
}

impl Actor for HttpChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

impl Handler<SubmitHttpInbound> for HttpChannel {
    type Result = ResponseActFuture<Self, Result<Submitted, HttpSubmitError>>;

    fn handle(&mut self, message: SubmitHttpInbound, _ctx: &mut Self::Context) -> Self::Result {
        let inbox_id = message.inbound.id.clone();
        // Registered before submitting: the reply cannot overtake the waiter.
        self.waiters.insert(inbox_id.clone(), message.reply_to);
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
        self.waiters.remove(&message.inbox_id);
    }
}

impl Handler<DeliverReply> for HttpChannel {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, _ctx: &mut Self::Context) {
        // A delayed notice answers the HTTP call; the final answer is then read by id.
        if let Some(waiter) = self.waiters.remove(&reply.inbox_id) {
            let _ = waiter.send(reply);
        } else if reply.kind == ReplyKind::Answer {
            tracing::debug!(inbox_id = %reply.inbox_id, "http reply stored for later reading");
        }
    }
}
