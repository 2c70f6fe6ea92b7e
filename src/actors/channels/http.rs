//! `HttpChannel`: the reply side of `POST /inbound`.
//!
//! The HTTP handler registers a waiter under the inbound id *before* submitting,
//! so a fast reply can never arrive before anyone listens. A reply with no
//! waiter (the caller gave up, or hearth restarted) stays stored in the inbox
//! and can be read with `GET /inbound/{id}`.

use std::collections::HashMap;

use actix::{Actor, Context, Handler, Message};
use tokio::sync::oneshot;

use super::{DeliverReply, ReplyKind};

/// Wait for the reply to `inbox_id`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ExpectReply {
    pub inbox_id: String,
    pub sender: oneshot::Sender<DeliverReply>,
}

/// The caller stopped waiting for `inbox_id`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetReply {
    pub inbox_id: String,
}

#[derive(Default)]
pub struct HttpChannel {
    waiters: HashMap<String, oneshot::Sender<DeliverReply>>,
}

impl Actor for HttpChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

impl Handler<ExpectReply> for HttpChannel {
    type Result = ();

    fn handle(&mut self, message: ExpectReply, _ctx: &mut Self::Context) {
        self.waiters.insert(message.inbox_id, message.sender);
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
