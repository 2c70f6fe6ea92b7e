//! Where the queue's messages go: to whoever waits for a turn's next reply (an HTTP call
//! that answered a confirmation), else to the channel of the conversation.
//!
//! For the channels that deliver through the durable outbox (Telegram, Matrix) every
//! message is a row "to deliver" first: a turn's answer, its prompt and its failure notice
//! in the transaction that stores them (`outgoing` builds the row), hearth's other notices
//! (delayed, a running turn's question, an expired prompt closed) in a write of their own
//! (`deliver_queued`). The channel is then told the row's id, and marks it delivered once
//! its platform accepted it; a restart delivers what is left. The HTTP API and the console
//! are answered from the inbox instead (`GET /inbound/{id}`).

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context};

use super::{DeliverReply, ReplyKind, RequestQueue};
use crate::ports::{Inbound, OutgoingMessage};

impl RequestQueue {
    /// Where a reply of the turn of `inbound` goes: its waiter (taken only when `take`),
    /// and the inbox id and platform event it answers (the message that started the turn,
    /// or the member's answer to its last question).
    fn reply_target(
        &mut self,
        inbound: &Inbound,
        take: bool,
    ) -> (
        Option<tokio::sync::oneshot::Sender<DeliverReply>>,
        bool,
        String,
        Option<String>,
    ) {
        let running = self.running.get_mut(&inbound.conversation);
        let (waiter, has_waiter, inbox_id) = match running {
            Some(running) => {
                let has_waiter = running.reply_to.is_some();
                let waiter = if take { running.reply_to.take() } else { None };
                (waiter, has_waiter, running.deliver_as.clone())
            }
            None => (None, false, None),
        };
        let (inbox_id, reply_to_event) =
            inbox_id.unwrap_or_else(|| (inbound.id.clone(), inbound.platform_event_id.clone()));
        (waiter, has_waiter, inbox_id, reply_to_event)
    }

    /// The outbox row delivering `text` of `kind` in the conversation of `inbound`, when its
    /// channel delivers through the outbox and nobody waits for the reply directly.
    pub(super) fn outgoing(
        &mut self,
        inbound: &Inbound,
        text: &str,
        kind: &ReplyKind,
    ) -> Option<OutgoingMessage> {
        if !self
            .durable_channels
            .contains(inbound.conversation.channel())
        {
            return None;
        }
        let (_, has_waiter, inbox_id, reply_to_event) = self.reply_target(inbound, false);
        if has_waiter {
            return None;
        }
        Some(OutgoingMessage {
            conversation: inbound.conversation.clone(),
            inbox_id: Some(inbox_id),
            text: text.to_string(),
            kind: kind.outgoing_kind(&inbound.member_id),
            reply_to_event,
        })
    }

    /// Hand `text` of `kind`, already queued in the outbox as row `outbox_id` (if its
    /// channel uses the outbox), to its waiter or its channel.
    pub(super) fn deliver(
        &mut self,
        inbound: &Inbound,
        text: String,
        kind: ReplyKind,
        outbox_id: Option<i64>,
        ctx: &mut Context<Self>,
    ) {
        let (waiter, _, inbox_id, reply_to_event) = self.reply_target(inbound, true);
        self.close_answer_from_elsewhere(&inbox_id, &text, ctx);
        let reply = DeliverReply {
            inbox_id,
            conversation: inbound.conversation.clone(),
            member_id: inbound.member_id.clone(),
            text,
            kind,
            reply_to_event,
            outbox_id,
        };
        if let Some(waiter) = waiter {
            let _ = waiter.send(reply);
            return;
        }
        self.deliver_to_channel(inbound.conversation.channel(), reply);
    }

    /// Hand `reply` to the channel `channel`.
    pub(super) fn deliver_to_channel(&self, channel: &str, reply: DeliverReply) {
        let Some(recipient) = self.channels.get(channel) else {
            tracing::warn!(%channel, inbox_id = %reply.inbox_id,
                "no channel to deliver the reply to; it stays stored");
            return;
        };
        recipient.do_send(reply);
    }

    /// Queue `text` of `kind` in the outbox (when its channel uses it), then deliver it. A
    /// message the outbox cannot take is still handed to the channel, undurably, and logged.
    pub(super) fn deliver_queued(
        &mut self,
        inbound: &Inbound,
        text: String,
        kind: ReplyKind,
        ctx: &mut Context<Self>,
    ) {
        let Some(outgoing) = self.outgoing(inbound, &text, &kind) else {
            self.deliver(inbound, text, kind, None, ctx);
            return;
        };
        let outbox = self.outbox.clone();
        let inbound = inbound.clone();
        ctx.spawn(
            async move { outbox.enqueue(&outgoing).await }
                .into_actor(self)
                .map(move |queued, act, ctx| {
                    let outbox_id = match queued {
                        Ok(id) => Some(id),
                        Err(error) => {
                            act.metrics.error("outbox");
                            tracing::error!(inbox_id = %inbound.id, %error,
                                "message not stored for delivery; sent once without retry");
                            None
                        }
                    };
                    act.deliver(&inbound, text, kind, outbox_id, ctx);
                }),
        );
    }
}
