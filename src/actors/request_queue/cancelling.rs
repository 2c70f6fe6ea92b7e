//! `/cancel` (`CancelPending`): what waits for a member in a conversation is dropped. The
//! question they are being asked goes at once (the running turn may be waiting for it); the
//! rest (their plugin call waiting for a value, their family-script workflow, their intents
//! plan waiting for an answer or an approval, their confirmations) goes in the
//! conversation's lane: never while a turn of theirs runs there (the cancel waits for it to
//! end), and no turn starts there until the cancel is done. So a plan or a call that a
//! running turn has loaded is never cancelled under it, and what `/cancel` answers is what
//! it did. Among workers, the cancel waits for the conversation's lease (`leases.rs`).

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, Handler, ResponseActFuture};
use tokio::sync::oneshot;

use super::{CancelPending, Cancelled, RequestQueue};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{AnswerPlace, Inbound, PendingConfirmation, StorageError, now_ms};

/// A `/cancel` waiting for its turn in the lane.
pub(super) struct WaitingCancel {
    member_id: MemberId,
    /// Whether a question was withdrawn when it came.
    question: bool,
    done: oneshot::Sender<Result<Cancelled, StorageError>>,
}

/// What one cancel changed in storage: the confirmations it denied (with their messages,
/// to resume), and whether it dropped a plugin call, a script workflow, a plan.
struct CancelledInStorage {
    denied: Vec<(PendingConfirmation, Inbound)>,
    plugin_call: bool,
    script_workflow: bool,
    plan: bool,
}

impl Handler<CancelPending> for RequestQueue {
    type Result = ResponseActFuture<Self, Result<Cancelled, StorageError>>;

    fn handle(&mut self, message: CancelPending, ctx: &mut Self::Context) -> Self::Result {
        let key = message.conversation_key;
        let question = self.cancel_question(&key, &message.member_id);
        let (done, cancelled) = oneshot::channel();
        self.cancels
            .entry(key.clone())
            .or_default()
            .push(WaitingCancel {
                member_id: message.member_id.clone(),
                question,
                done,
            });
        if !self.cancel_needs_lease(&key, &message.member_id, ctx) {
            self.run_cancels_when_free(&key, ctx);
        }
        Box::pin(
            async move {
                cancelled.await.unwrap_or_else(|_| {
                    Err(StorageError::Database(
                        "the request queue stopped before /cancel was done".into(),
                    ))
                })
            }
            .into_actor(self),
        )
    }
}

impl RequestQueue {
    /// Run the cancels waiting in conversation `key` that may run now: all of them, unless
    /// a cancel runs there already (it looks again when done) or a turn of the same member
    /// runs there (its cancel waits for the turn's end). The lane starts nothing meanwhile.
    pub(super) fn run_cancels_when_free(&mut self, key: &ConversationKey, ctx: &mut Context<Self>) {
        // Among workers, only the conversation's holder cancels (once claimed).
        if self.lanes.is_paused(key) || !self.runs_here(key) {
            return;
        }
        let Some(waiting) = self.cancels.remove(key) else {
            return;
        };
        let running_member = self
            .running
            .get(key)
            .map(|running| running.inbound.member_id.clone());
        let (later, now): (Vec<WaitingCancel>, Vec<WaitingCancel>) = waiting
            .into_iter()
            .partition(|cancel| running_member.as_ref() == Some(&cancel.member_id));
        if !later.is_empty() {
            self.cancels.insert(key.clone(), later);
        }
        if now.is_empty() {
            return;
        }
        self.lanes.pause(key);
        let members: Vec<MemberId> = now.iter().map(|cancel| cancel.member_id.clone()).collect();
        let work = self.cancel_in_storage(key.clone(), members);
        let key = key.clone();
        ctx.spawn(work.into_actor(self).map(move |results, act, ctx| {
            for (cancel, result) in now.into_iter().zip(results) {
                let result = result.map(|stored| {
                    let mut cancelled = Cancelled {
                        confirmation_ids: Vec::new(),
                        question: cancel.question,
                        plugin_call: stored.plugin_call,
                        script_workflow: stored.script_workflow,
                        plan: stored.plan,
                    };
                    for (confirmation, inbound) in stored.denied {
                        tracing::info!(confirmation = %confirmation.id, "confirmation cancelled");
                        cancelled.confirmation_ids.push(confirmation.id.clone());
                        act.queue_resumption(confirmation, inbound, None, None, ctx);
                    }
                    cancelled
                });
                let _ = cancel.done.send(result);
            }
            // Cancels that came meanwhile run before the lane goes on.
            act.lanes.unpause(&key);
            act.run_cancels_when_free(&key, ctx);
            act.pump(ctx);
            act.release_if_idle(&key, ctx);
        }));
    }

    /// The question `member_id` was asked in `key` by another worker's turn is withdrawn
    /// by their waiting cancel: it says so when done.
    pub(super) fn question_withdrawn_elsewhere(
        &mut self,
        key: &ConversationKey,
        member_id: &MemberId,
    ) {
        for cancel in self.cancels.get_mut(key).into_iter().flatten() {
            if cancel.member_id == *member_id {
                cancel.question = true;
            }
        }
    }

    /// Cancel, one member after the other, what waits for each of `members` in
    /// conversation `key`.
    fn cancel_in_storage(
        &self,
        key: ConversationKey,
        members: Vec<MemberId>,
    ) -> impl Future<Output = Vec<Result<CancelledInStorage, StorageError>>> + 'static {
        let (pending, inbox) = (self.pending.clone(), self.inbox.clone());
        let (plugin_calls, plans) = (self.plugin_calls.clone(), self.plans.clone());
        let script_workflows = self.script_workflows.clone();
        async move {
            let mut results = Vec::with_capacity(members.len());
            for member_id in members {
                let cancelled = async {
                    let plugin_call = plugin_calls.clear(&key, &member_id).await?;
                    let script_workflow = script_workflows.clear(&key, &member_id).await?;
                    let plan = plans.cancel_open_plans(&key, &member_id, now_ms()).await? > 0;
                    let mut denied = Vec::new();
                    for entry in pending.open().await? {
                        let confirmation = entry.confirmation;
                        if entry.decision.is_some()
                            || confirmation.member_id != member_id
                            || confirmation.conversation != key
                        {
                            continue;
                        }
                        // Answered meanwhile (a button, the expiry): not ours to cancel.
                        let place = AnswerPlace::Conversation(confirmation.conversation.clone());
                        let Ok(confirmation) = pending
                            .answer(&confirmation.id, &member_id, &place, false, now_ms())
                            .await?
                        else {
                            continue;
                        };
                        if let Some(record) = inbox.get(&confirmation.inbox_id).await? {
                            denied.push((confirmation, record.inbound));
                        }
                    }
                    Ok(CancelledInStorage {
                        denied,
                        plugin_call,
                        script_workflow,
                        plan,
                    })
                }
                .await;
                results.push(cancelled);
            }
            results
        }
    }
}
