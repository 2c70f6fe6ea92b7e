//! The queue's side of suspended turns: an answer (or an expiry) puts the turn back
//! in its conversation's lane; at start-up, confirmations left open are picked up
//! again, so a restart between the question and the answer loses nothing.

use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, Handler, ResponseActFuture};
use tokio::sync::oneshot;

use super::{
    AnswerConfirmation, AnswerError, Answered, DeliverReply, EXPIRED_OUTCOME, QueuedTurn,
    ReplyKind, RequestQueue, Resume,
};
use crate::ports::{Decision, Inbound, PendingConfirmation, StorageError, now_ms};

/// How often answered confirmations are checked for a turn that did not resume.
pub const STUCK_CHECK_EVERY: Duration = Duration::from_secs(15);

impl RequestQueue {
    /// Put the turn suspended on `confirmation` back in its lane, unless it is there (or
    /// running) already.
    pub(super) fn queue_resumption(
        &mut self,
        confirmation: PendingConfirmation,
        inbound: Inbound,
        decision: Option<Option<Decision>>,
        reply_to: Option<oneshot::Sender<DeliverReply>>,
        ctx: &mut Context<Self>,
    ) {
        if !self.resuming.insert(confirmation.id.clone()) {
            return;
        }
        self.push_turn(
            QueuedTurn {
                inbound,
                attempts: 0,
                resume: Some(Resume {
                    confirmation: Box::new(confirmation),
                    decision,
                    reply_to,
                }),
                listener: Default::default(),
                fence: None,
                unjournaled: None,
            },
            ctx,
        );
    }

    /// Check for expired confirmations at `at_ms` (and at once if that has passed).
    pub(super) fn schedule_expiry(&self, at_ms: i64, ctx: &mut Context<Self>) {
        let wait = u64::try_from(at_ms.saturating_sub(now_ms())).unwrap_or(0);
        // A little after the deadline, so the comparison in storage sees it passed.
        ctx.run_later(Duration::from_millis(wait + 20), |act, ctx| {
            act.expire_due(ctx);
        });
    }

    fn expire_due(&mut self, ctx: &mut Context<Self>) {
        let (pending, inbox) = (self.pending.clone(), self.inbox.clone());
        let work = async move {
            let mut resumed = Vec::new();
            for confirmation in pending.expire_due(now_ms()).await? {
                if let Some(record) = inbox.get(&confirmation.inbox_id).await? {
                    resumed.push((confirmation, record.inbound));
                }
            }
            Ok::<_, StorageError>(resumed)
        };
        ctx.spawn(work.into_actor(self).map(|expired, act, ctx| {
            match expired {
                Ok(expired) => {
                    for (confirmation, inbound) in expired {
                        tracing::info!(confirmation = %confirmation.id, "confirmation expired");
                        act.notify_expired(&confirmation, &inbound, ctx);
                        act.queue_resumption(confirmation, inbound, None, None, ctx);
                    }
                }
                Err(error) => tracing::error!(%error, "expired confirmations not processed"),
            }
            act.pump(ctx);
        }));
    }

    /// Tell the confirmation's channel it expired, so it can take its buttons away.
    fn notify_expired(
        &mut self,
        confirmation: &PendingConfirmation,
        inbound: &Inbound,
        ctx: &mut Context<Self>,
    ) {
        self.deliver_queued(
            inbound,
            EXPIRED_OUTCOME.to_string(),
            ReplyKind::ConfirmationExpired {
                confirmation_id: confirmation.id.clone(),
            },
            ctx,
        );
    }

    /// Every so often: a confirmation answered but whose turn was never put back in its
    /// lane (reading its message failed right after the answer) is resumed now; it is never
    /// left answered and not resumed.
    pub(super) fn resume_answered_periodically(&self, ctx: &mut Context<Self>) {
        ctx.run_interval(STUCK_CHECK_EVERY, |act, ctx| act.resume_answered(ctx));
    }

    pub(super) fn resume_answered(&mut self, ctx: &mut Context<Self>) {
        let (pending, inbox) = (self.pending.clone(), self.inbox.clone());
        let known = self.resuming.clone();
        let work = async move {
            let mut stuck = Vec::new();
            for entry in pending.open().await? {
                if entry.decision.is_none() || known.contains(&entry.confirmation.id) {
                    continue;
                }
                if let Some(record) = inbox.get(&entry.confirmation.inbox_id).await? {
                    stuck.push((entry.confirmation, record.inbound));
                }
            }
            Ok::<_, StorageError>(stuck)
        };
        ctx.spawn(work.into_actor(self).map(|stuck, act, ctx| {
            match stuck {
                Ok(stuck) => {
                    for (confirmation, inbound) in stuck {
                        tracing::info!(confirmation = %confirmation.id, "resuming an answered confirmation's turn");
                        act.queue_resumption(confirmation, inbound, None, None, ctx);
                    }
                }
                Err(error) => tracing::warn!(%error, "answered confirmations not checked"),
            }
            act.pump(ctx);
        }));
    }

    /// At start-up: answered confirmations resume their turns; pending ones get their
    /// expiry timers back.
    pub(super) fn reopen_confirmations(&mut self, ctx: &mut Context<Self>) {
        let (pending, inbox) = (self.pending.clone(), self.inbox.clone());
        let work = async move {
            let mut open = Vec::new();
            for entry in pending.open().await? {
                let record = inbox.get(&entry.confirmation.inbox_id).await?;
                if let Some(record) = record {
                    open.push((entry, record.inbound));
                }
            }
            let mut interrupted = Vec::new();
            for confirmation in pending.interrupted().await? {
                if let Some(record) = inbox.get(&confirmation.inbox_id).await? {
                    interrupted.push((confirmation, record.inbound));
                }
            }
            Ok::<_, StorageError>((open, interrupted))
        };
        ctx.wait(work.into_actor(self).map(|found, act, ctx| match found {
            Ok((open, interrupted)) => {
                for (confirmation, inbound) in interrupted {
                    // Its turn stopped after using the decision: it goes on, and the model
                    // is told the outcome of that action is unknown; it is never run again.
                    tracing::info!(confirmation = %confirmation.id, "resuming an interrupted turn");
                    act.queue_resumption(confirmation, inbound, Some(None), None, ctx);
                }
                for (entry, inbound) in open {
                    match entry.decision {
                        Some(_) => {
                            act.queue_resumption(entry.confirmation, inbound, None, None, ctx)
                        }
                        None => act.schedule_expiry(entry.confirmation.expires_at_ms, ctx),
                    }
                }
                act.pump(ctx);
            }
            Err(error) => {
                tracing::error!(%error, "cannot read open confirmations");
                act.readiness.set(
                    "queue",
                    false,
                    &format!("cannot reopen confirmations: {error}"),
                );
            }
        }));
    }
}

impl Handler<AnswerConfirmation> for RequestQueue {
    type Result = ResponseActFuture<Self, Result<Answered, AnswerError>>;

    fn handle(&mut self, message: AnswerConfirmation, _ctx: &mut Self::Context) -> Self::Result {
        let (pending, inbox) = (self.pending.clone(), self.inbox.clone());
        let (id, member, place, approve) = (
            message.confirmation_id.clone(),
            message.member_id.clone(),
            message.place.clone(),
            message.approve,
        );
        let work = async move {
            let confirmation = pending
                .answer(&id, &member, &place, approve, now_ms())
                .await??;
            let record = inbox.get(&confirmation.inbox_id).await?.ok_or_else(|| {
                StorageError::Corrupt(format!(
                    "confirmation {id:?} names unknown inbox message {:?}",
                    confirmation.inbox_id
                ))
            })?;
            Ok::<_, AnswerError>((confirmation, record.inbound))
        };
        let (reply_to, member_of_answer) = (message.reply_to, message.member_id);
        Box::pin(work.into_actor(self).map(move |answered, act, ctx| {
            let (confirmation, inbound) = answered?;
            tracing::info!(
                confirmation = %confirmation.id,
                approve,
                "confirmation answered"
            );
            let answered = Answered {
                inbox_id: inbound.id.clone(),
                asked_by: confirmation.member_id.clone(),
            };
            // The outcome goes where the request came from: to a waiting call only when
            // it is the asking member's own; an approver's call hears no outcome.
            let reply_to = reply_to.filter(|_| confirmation.member_id == member_of_answer);
            act.queue_resumption(confirmation, inbound, None, reply_to, ctx);
            act.pump(ctx);
            Ok(answered)
        }))
    }
}
