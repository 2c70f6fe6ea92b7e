//! What a running turn tells its member before its answer (`TellMember`): an intents plan
//! saying what it is about to do before its tool runs.
//!
//! On a channel that delivers through the outbox the text is a row of its own, stored under
//! the turn's once key: a retry of the turn (after a stop, or a failure after it was said)
//! finds the row and does not deliver it again. Channels that answer a message once (HTTP,
//! the console) and a call waiting for the turn's reply get it with the answer instead.

use actix::fut::{self, ActorFutureExt, WrapFuture};
use actix::{Handler, ResponseActFuture};

use super::{ReplyKind, RequestQueue};
use crate::ports::StorageError;
use crate::turn::{TellMember, Told};

impl Handler<TellMember> for RequestQueue {
    type Result = ResponseActFuture<Self, Result<Told, StorageError>>;

    fn handle(&mut self, message: TellMember, _ctx: &mut Self::Context) -> Self::Result {
        let inbound = match self.running.get(&message.conversation_key) {
            Some(running) if running.inbound.id == message.inbox_id => running.inbound.clone(),
            // Not the turn running there (it ended meanwhile): it says it with its answer.
            _ => return Box::pin(fut::ready(Ok(Told::WithTheAnswer))),
        };
        let Some(outgoing) = self.outgoing(&inbound, &message.text, &ReplyKind::Progress) else {
            return Box::pin(fut::ready(Ok(Told::WithTheAnswer)));
        };
        let outbox = self.outbox.clone();
        let once_key = message.once_key;
        Box::pin(
            async move { outbox.enqueue_once(&once_key, &outgoing).await }
                .into_actor(self)
                .map(move |queued, act, ctx| {
                    match queued {
                        Ok(Some(outbox_id)) => act.deliver(
                            &inbound,
                            message.text,
                            ReplyKind::Progress,
                            Some(outbox_id),
                            ctx,
                        ),
                        // Stored by an earlier try: delivered then, or by the restart.
                        Ok(None) => tracing::info!(inbox_id = %inbound.id,
                            "already told before this try; not told again"),
                        Err(error) => {
                            act.metrics.error("outbox");
                            return Err(error);
                        }
                    }
                    Ok(Told::Separately)
                }),
        )
    }
}
