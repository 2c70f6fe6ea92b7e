//! A turn that failed: retried later, the member told once that the answer is delayed (the
//! message holds its lane meanwhile, and the pause doubles up to an hour), or, when the
//! failure is not transient or the attempts are used up, given up: the failure stored with
//! its notice, then delivered. A voice note that could not be transcribed is told in its own
//! words (`voice`).

use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context};

use super::{QueuedTurn, ReplyKind, RequestQueue};
use crate::backoff::Doubling;
use crate::ids::ConversationKey;
use crate::ports::now_ms;
use crate::turn::TurnError;
use crate::voice;

pub const DELAYED_REPLY: &str = "Sorry, I can't reach my language model right now. \
    I've kept your message and will answer as soon as I can.";
pub const FAILED_REPLY: &str =
    "Sorry, I couldn't answer that message. Please try again in a little while.";

/// What the member is told, once, when their message waits for a retry.
fn delayed_notice(error: &TurnError) -> String {
    match error {
        TurnError::Transcription(_) => voice::TRANSCRIPTION_DELAYED.to_string(),
        _ => DELAYED_REPLY.to_string(),
    }
}

/// What the member is told when hearth gives up on their message.
fn failed_notice(error: &TurnError) -> String {
    match error {
        TurnError::Voice(refusal) => refusal.to_string(),
        TurnError::Transcription(error) => voice::VoiceRefusal::of_failure(error).to_string(),
        _ => FAILED_REPLY.to_string(),
    }
}

/// The longest pause between two retries of one message.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(3600);

impl RequestQueue {
    pub(super) fn schedule_retry(
        &mut self,
        key: ConversationKey,
        mut turn: QueuedTurn,
        attempts: u32,
        error: &TurnError,
        ctx: &mut Context<Self>,
    ) {
        // Tell the member once, not on every retry of the same message.
        if attempts == 1 {
            self.deliver_queued(
                &turn.inbound,
                delayed_notice(error),
                ReplyKind::Delayed,
                ctx,
            );
        }
        let delay = Doubling::new(
            Duration::from_secs(self.settings.retry_delay_seconds),
            MAX_RETRY_DELAY,
        )
        .after(attempts);
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

    pub(super) fn give_up(
        &mut self,
        key: ConversationKey,
        turn: QueuedTurn,
        error: &TurnError,
        ctx: &mut Context<Self>,
    ) {
        let profile_id = self.profile_of(&turn).to_string();
        self.metrics.increment(
            "hearth_turns_total",
            &[("profile", &profile_id), ("outcome", "failed")],
        );
        // The failure is stored and its notice queued together, then delivered; where the
        // notice is not queued (a waiting HTTP call), it goes at once.
        let notice = failed_notice(error);
        let outgoing = self.outgoing(&turn.inbound, &notice, &ReplyKind::Failed);
        let queued = outgoing.is_some();
        if !queued {
            self.deliver(&turn.inbound, notice.clone(), ReplyKind::Failed, None, ctx);
        }
        let inbox = self.inbox.clone();
        let inbox_id = turn.inbound.id.clone();
        let error_text = error.to_string();
        let inbound = turn.inbound.clone();
        let stored_notice = notice.clone();
        let fence = turn.fence.clone();
        // The conversation is not handed to another worker before the failure is stored.
        self.leases.settling(&key);
        ctx.spawn(
            async move {
                inbox
                    .give_up_fenced(
                        &inbox_id,
                        &error_text,
                        &stored_notice,
                        outgoing.as_ref(),
                        fence.as_ref(),
                    )
                    .await
            }
            .into_actor(self)
            .map(move |given_up, act, ctx| {
                let outbox_id = given_up.unwrap_or_else(|error| {
                    tracing::warn!(inbox_id = %inbound.id, %error, "failed message not marked");
                    None
                });
                if queued {
                    act.deliver(&inbound, notice, ReplyKind::Failed, outbox_id, ctx);
                }
                act.turn_stored(&inbound, None);
                act.leases.settled(&inbound.conversation);
                act.release_if_idle(&inbound.conversation, ctx);
            }),
        );
        self.lanes.finish(&key);
    }
}
