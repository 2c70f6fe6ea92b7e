//! A platform led by one worker at a time, when several workers share a PostgreSQL
//! database: the holder of the lease `channel:<platform>` runs the platform's event source
//! (Telegram's long polling, its webhook registration, Matrix's sync) and delivers its
//! outbox. Telegram lets one poller at a time have the updates, and a Matrix device's
//! encryption keys live with the one client that syncs; one sender per platform also keeps
//! a conversation's messages in outbox order whichever worker ran its turn.
//!
//! Every worker stores what its turns say in the outbox; a worker that does not lead wakes
//! the others (`WakeTopic::Outbox`) and the leader reads the outbox again; it also looks
//! every `LOOK_EVERY` for rows a lost wake-up left. The lease is checked every
//! `HEARTBEAT_EVERY`: a worker that loses it (its database away longer than the lease)
//! stops receiving and delivering at once, and one that finds it free (the leader stopped
//! or was killed, its lease ran out) takes over and reads what is left undelivered. A
//! worker that stops trusting its leases (no heartbeat in time, `workers::Tenure`) steps
//! down too, before any other worker can take the lease, and takes it again at a new
//! generation.
//!
//! On SQLite (one process) there is no leader: the channel receives and delivers from
//! its start.

use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, StreamHandler};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::actor::ChannelActor;
use super::adapter::PlatformAdapter;
use crate::ports::{OutgoingMessage, StorageError, Tenure, WakeTopic, WakeUp};
use crate::workers::{HEARTBEAT_EVERY, LEASE_TIME, Worker};

/// How often the leader reads the outbox without being woken.
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// This worker's part in leading one platform.
pub(crate) struct ChannelLeader {
    worker: Arc<Worker>,
    lease: String,
    /// When the lease was last found held by this worker; `None` while it is not.
    held_since_check: Option<Instant>,
    /// The generation this worker holds the lease at, while it does.
    generation: Option<i64>,
    /// The term of this worker's trust in its leases that `generation` belongs to.
    term: u64,
    /// Ends the event source when this worker stops leading.
    receiving: Option<CancellationToken>,
    /// A reading of the outbox is under way; `look_again`: a wake-up came meanwhile.
    looking: bool,
    look_again: bool,
}

impl ChannelLeader {
    pub(crate) fn new(worker: Arc<Worker>, channel: &str) -> Self {
        let term = worker.tenure().borrow().term;
        ChannelLeader {
            worker,
            lease: format!("channel:{channel}"),
            held_since_check: None,
            generation: None,
            term,
            receiving: None,
            looking: false,
            look_again: false,
        }
    }

    fn leading(&self) -> bool {
        self.receiving.is_some()
    }
}

impl<A: PlatformAdapter> ChannelActor<A> {
    /// Start leading checks (a worker of a shared database), or receive and deliver at
    /// once (the only process on its database).
    pub(super) fn start_receiving(&mut self, ctx: &mut Context<Self>) {
        let Some(leader) = &self.leader else {
            let events = ctx.address().recipient();
            self.tasks
                .spawn_cancellable(self.core.adapter.clone().receive(events));
            self.resume_deliveries(ctx);
            return;
        };
        let channel = self.channel();
        self.readiness.set(
            channel,
            true,
            "waiting to learn whether another worker of the database leads this platform",
        );
        ctx.add_stream(leader.worker.wake_ups());
        ctx.add_stream(leader.worker.tenure_changes());
        self.check_lead(ctx);
        ctx.run_interval(HEARTBEAT_EVERY, |act, ctx| act.check_lead(ctx));
        ctx.run_interval(LOOK_EVERY, |act, ctx| act.look(ctx));
    }

    fn check_lead(&mut self, ctx: &mut Context<Self>) {
        let Some(leader) = &self.leader else { return };
        // Nothing is taken while this worker does not trust its leases.
        let tenure = *leader.worker.tenure().borrow();
        if !tenure.trusted() {
            return;
        }
        let (worker, lease) = (leader.worker.clone(), leader.lease.clone());
        let held = leader.generation;
        let checked_at = Instant::now();
        ctx.spawn(
            async move { worker.take(&lease, held).await }
                .into_actor(self)
                .map(move |taken, act, ctx| act.lead_checked(taken, tenure.term, checked_at, ctx)),
        );
    }

    fn lead_checked(
        &mut self,
        taken: Result<Option<i64>, StorageError>,
        term: u64,
        checked_at: Instant,
        ctx: &mut Context<Self>,
    ) {
        let channel = self.channel();
        let Some(leader) = &mut self.leader else {
            return;
        };
        // Checked in a term that has ended: the next check takes it anew.
        if leader.term != term {
            return;
        }
        match taken {
            Ok(Some(generation)) => {
                leader.held_since_check = Some(checked_at);
                leader.generation = Some(generation);
                if !leader.leading() {
                    tracing::info!(channel, lease = %leader.lease, "this worker now leads the platform");
                    self.begin_leading(ctx);
                }
            }
            Ok(None) => {
                leader.held_since_check = None;
                leader.generation = None;
                if leader.leading() {
                    tracing::warn!(channel, "another worker took the platform's lease");
                    self.step_down();
                } else {
                    self.readiness.set(
                        channel,
                        true,
                        "another worker of the database receives and delivers",
                    );
                }
            }
            Err(error) => {
                // The lease may still be ours until it runs out; not past that.
                let expired = leader
                    .held_since_check
                    .is_none_or(|at| at.elapsed() + HEARTBEAT_EVERY >= LEASE_TIME);
                tracing::warn!(channel, %error, "the platform's lease not checked");
                if leader.leading() && expired {
                    leader.held_since_check = None;
                    leader.generation = None;
                    self.step_down();
                }
            }
        }
    }

    fn begin_leading(&mut self, ctx: &mut Context<Self>) {
        let token = self.tasks.child_token();
        let events = ctx.address().recipient();
        self.tasks
            .spawn_until(token.clone(), self.core.adapter.clone().receive(events));
        if let Some(leader) = &mut self.leader {
            leader.receiving = Some(token);
        }
        self.look(ctx);
    }

    fn step_down(&mut self) {
        let channel = self.channel();
        if let Some(receiving) = self
            .leader
            .as_mut()
            .and_then(|leader| leader.receiving.take())
        {
            receiving.cancel();
        }
        self.deliveries.pause();
        self.readiness.set(
            channel,
            false,
            "lost the platform's lease; waiting to take it again",
        );
    }

    /// Read the outbox and deliver what no delivery has taken (leader only; one reading
    /// at a time, once more when woken meanwhile).
    fn look(&mut self, ctx: &mut Context<Self>) {
        let Some(leader) = &mut self.leader else {
            return;
        };
        if !leader.leading() {
            return;
        }
        if leader.looking {
            leader.look_again = true;
            return;
        }
        leader.looking = true;
        leader.look_again = false;
        let reading = self.deliveries.undelivered();
        ctx.spawn(reading.into_actor(self).map(|(read, loaded), act, ctx| {
            let Some(leader) = &mut act.leader else {
                return;
            };
            leader.looking = false;
            let again = std::mem::take(&mut leader.look_again);
            if !leader.leading() {
                return;
            }
            match loaded {
                Ok(entries) => {
                    for conversation in act.deliveries.resumed(read, entries) {
                        // Its turn ran on another worker: "typing…" ends here.
                        act.typing_stopped(&conversation, ctx);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "undelivered messages not read; looking again")
                }
            }
            if again {
                act.look(ctx);
            }
        }));
    }

    /// Deliver `message`, stored as outbox row `id` (`None`: not stored): here on the
    /// platform's leader (or the only process), else by waking the leader, which reads
    /// the row from the outbox.
    pub(super) fn deliver(&mut self, id: Option<i64>, message: OutgoingMessage) {
        let Some(leader) = &self.leader else {
            self.deliveries.deliver(id, message);
            return;
        };
        match id {
            _ if leader.leading() => self.deliveries.deliver(id, message),
            // Nothing reads an unstored message back: sent from here, once.
            None => self.deliveries.deliver_unstored(message),
            Some(_) => {
                let worker = leader.worker.clone();
                let subject = message.conversation.as_str().to_string();
                tokio::spawn(async move {
                    worker.wake(WakeUp::new(WakeTopic::Outbox, subject)).await;
                });
            }
        }
    }
}

impl<A: PlatformAdapter> StreamHandler<Tenure> for ChannelActor<A> {
    /// A new term: what this worker held is not trusted, so it leads no more until it
    /// takes the lease again (at a new generation).
    fn handle(&mut self, tenure: Tenure, ctx: &mut Context<Self>) {
        let channel = self.channel();
        let Some(leader) = &mut self.leader else {
            return;
        };
        if leader.term != tenure.term {
            leader.term = tenure.term;
            leader.held_since_check = None;
            leader.generation = None;
            if leader.leading() {
                tracing::warn!(
                    channel,
                    "no heartbeat in time: this worker stops leading the platform"
                );
                self.step_down();
            }
        }
        self.check_lead(ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl<A: PlatformAdapter> StreamHandler<WakeUp> for ChannelActor<A> {
    fn handle(&mut self, wake_up: WakeUp, ctx: &mut Context<Self>) {
        let ours = wake_up
            .subject
            .strip_prefix(self.channel())
            .is_some_and(|rest| rest.starts_with(':'));
        if wake_up.topic == WakeTopic::Outbox && ours {
            self.look(ctx);
        }
    }

    /// The wake-ups end only with the worker: the periodic look goes on.
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}
