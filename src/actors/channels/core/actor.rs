//! `ChannelActor`: the one actor of every chat platform, generic over its
//! `PlatformAdapter`. It runs the platform's event source and delivery workers under its
//! `ChannelTasks` (on a database shared by several workers, only while it leads the
//! platform: `leader.rs`), hands each event to the inbound sequence (`inbound.rs`) and carries out
//! what that asks for (store and deliver a message, show "typing…"), delivers the queue's
//! `DeliverReply`s through the outbox, forgets old handled-event notes, and on
//! `StopChannel` stops its tasks, waiting for the parts being sent.

use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, ResponseActFuture};

use super::adapter::PlatformAdapter;
use super::delivery::Deliveries;
use super::delivery::DeliverySettings;
use super::inbound::{ChannelCore, FollowUp};
use super::leader::ChannelLeader;
use super::messages::{EventReceived, StopChannel};
use super::reminder_answers::ReminderAnswers;
use super::tasks::{ChannelTasks, STOP_WAIT};
use super::typing::TypingTurns;
use crate::actors::channels::{ChannelError, DeliverStored};
use crate::actors::request_queue::{DeliverReply, RequestQueue};
use crate::family::{Family, OwnChats};
use crate::ids::ConversationKey;
use crate::metrics::Metrics;
use crate::ports::{ChannelState, Inbox, Outbox, OutgoingMessage};
use crate::readiness::Readiness;

/// How often the notes of handled commands are pruned (and once at start).
pub(super) const PRUNE_HANDLED_EVERY: Duration = Duration::from_secs(6 * 3600);

/// What every chat platform's channel needs besides its own settings.
#[derive(Clone)]
pub struct ChannelDeps {
    pub family: Arc<Family>,
    pub queue: Addr<RequestQueue>,
    /// Read only: whether a redelivered event was accepted before.
    pub inbox: Arc<dyn Inbox>,
    /// Small durable facts of the channel (an update offset, where a prompt is shown,
    /// which commands were handled).
    pub state: Arc<dyn ChannelState>,
    pub outbox: Arc<dyn Outbox>,
    pub readiness: Arc<Readiness>,
    pub metrics: Arc<Metrics>,
    pub delivery: DeliverySettings,
    /// Each member's own chats; a platform that finds them as it goes (Matrix) keeps its
    /// own up to date here.
    pub own_chats: Arc<OwnChats>,
    /// Where answers to fired reminders go; `None` when nothing schedules them.
    pub reminders: Option<ReminderAnswers>,
    /// The family's commands; `None` where members are not changed in chat.
    pub membership: Option<super::membership::MembershipParts>,
    /// This process among the workers of a shared (PostgreSQL) database: the platform is
    /// then led by one of them. `None` for the only process on its database.
    pub worker: Option<Arc<crate::workers::Worker>>,
}

pub(crate) struct ChannelActor<A: PlatformAdapter> {
    pub(super) core: Arc<ChannelCore<A>>,
    /// The outbox's messages for this platform, in order per conversation; conversations
    /// do not wait on each other.
    pub(super) deliveries: Deliveries<A>,
    /// Turns running per place, and the timer showing "typing…" for them.
    typing: TypingTurns<String>,
    pub(super) tasks: ChannelTasks,
    pub(super) readiness: Arc<Readiness>,
    /// Whether this worker leads the platform; `None`: the only process, always leading.
    pub(super) leader: Option<ChannelLeader>,
}

impl<A: PlatformAdapter> ChannelActor<A> {
    /// The channel of `adapter`; `handled_kept_for`: how long a handled command is
    /// remembered (as long as the inbox keeps finished messages).
    pub(crate) fn new(adapter: A, deps: ChannelDeps, handled_kept_for: Duration) -> Self {
        let ChannelDeps {
            family,
            queue,
            inbox,
            state,
            outbox,
            readiness,
            metrics,
            delivery,
            reminders,
            membership,
            worker,
            ..
        } = deps;
        let adapter = Arc::new(adapter);
        let leader = worker.map(|worker| ChannelLeader::new(worker, adapter.channel()));
        let tasks = ChannelTasks::default();
        ChannelActor {
            core: Arc::new(ChannelCore {
                adapter: adapter.clone(),
                family,
                queue,
                inbox,
                state,
                handled_kept_for,
                reminders,
                membership,
            }),
            deliveries: Deliveries::new(adapter, outbox, metrics, delivery, tasks.clone()),
            typing: TypingTurns::default(),
            tasks,
            readiness,
            leader,
        }
    }

    pub(super) fn channel(&self) -> &'static str {
        self.core.adapter.channel()
    }

    /// Carry out what handling an event asked for.
    fn follow_up(&mut self, actions: Vec<FollowUp>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                FollowUp::TurnStarted(conversation) => self.typing_started(&conversation, ctx),
                FollowUp::Send(message) => self.send(message, ctx),
            }
        }
    }

    /// A turn of `conversation` started (or goes on): show "typing…".
    fn typing_started(&mut self, conversation: &ConversationKey, ctx: &mut Context<Self>) {
        let Some(place) = self.core.adapter.typing_place(conversation) else {
            return;
        };
        let adapter = self.core.adapter.clone();
        let shown = place.clone();
        self.typing.started(
            place,
            ctx,
            A::TYPING_EVERY,
            move || adapter.show_typing(&shown, true),
            |channel: &mut Self| &mut channel.typing,
        );
    }

    /// A turn of `conversation` answered or stopped to wait for the member.
    pub(super) fn typing_stopped(
        &mut self,
        conversation: &ConversationKey,
        ctx: &mut Context<Self>,
    ) {
        if let Some(place) = self.core.adapter.typing_place(conversation)
            && self.typing.stopped(&place, ctx)
        {
            self.core.adapter.show_typing(&place, false);
        }
    }

    /// Store `message` in the outbox, then deliver it (what a channel says on its own:
    /// `/help`, the busy reply, a prompt closed by an answer).
    fn send(&mut self, message: OutgoingMessage, ctx: &mut Context<Self>) {
        let storing = self.deliveries.store(message);
        ctx.spawn(
            storing
                .into_actor(self)
                .map(|(message, stored), act, _ctx| match stored {
                    Ok(id) => act.deliver(Some(id), message),
                    Err(error) => {
                        act.deliveries.not_stored(&message, &error);
                        act.deliver(None, message);
                    }
                }),
        );
    }

    /// Read what the last run left undelivered and deliver it before anything newer
    /// (tried again every few seconds while the database does not answer).
    pub(super) fn resume_deliveries(&mut self, ctx: &mut Context<Self>) {
        let loading = self.deliveries.undelivered();
        ctx.spawn(
            loading
                .into_actor(self)
                .map(|(read, loaded), act, ctx| match loaded {
                    Ok(entries) => {
                        act.deliveries.resumed(read, entries);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "undelivered messages not read; trying again");
                        ctx.run_later(Duration::from_secs(5), |act, ctx| {
                            act.resume_deliveries(ctx)
                        });
                    }
                }),
        );
    }

    fn prune_handled(&mut self, ctx: &mut Context<Self>) {
        let core = self.core.clone();
        let channel = self.channel();
        ctx.spawn(
            async move {
                match core.prune_handled().await {
                    Ok(0) => {}
                    Ok(forgotten) => {
                        tracing::debug!(channel, forgotten, "old handled events forgotten")
                    }
                    Err(error) => {
                        tracing::warn!(channel, %error, "old handled events not forgotten")
                    }
                }
            }
            .into_actor(self),
        );
    }
}

impl<A: PlatformAdapter> Actor for ChannelActor<A> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        self.start_receiving(ctx);
        self.prune_handled(ctx);
        ctx.run_interval(PRUNE_HANDLED_EVERY, |act, ctx| act.prune_handled(ctx));
    }
}

impl<A: PlatformAdapter> Handler<EventReceived<A::Event>> for ChannelActor<A> {
    type Result = ResponseActFuture<Self, Result<(), ChannelError>>;

    fn handle(&mut self, event: EventReceived<A::Event>, _ctx: &mut Self::Context) -> Self::Result {
        let core = self.core.clone();
        let channel = self.channel();
        let work = async move { core.handle(event.0).await };
        Box::pin(work.into_actor(self).map(move |handled, act, ctx| {
            let actions = handled.inspect_err(|error| {
                tracing::warn!(channel, %error, "event not handled; it will come again");
            })?;
            act.follow_up(actions, ctx);
            Ok(())
        }))
    }
}

impl<A: PlatformAdapter> Handler<DeliverReply> for ChannelActor<A> {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, ctx: &mut Self::Context) {
        if reply.kind.ends_a_turn() {
            self.typing_stopped(&reply.conversation, ctx);
        }
        let message = reply.outgoing();
        self.deliver(reply.outbox_id, message);
    }
}

impl<A: PlatformAdapter> Handler<DeliverStored> for ChannelActor<A> {
    type Result = ();

    fn handle(&mut self, stored: DeliverStored, _ctx: &mut Self::Context) {
        self.deliver(Some(stored.outbox_id), stored.message);
    }
}

impl<A: PlatformAdapter> Handler<StopChannel> for ChannelActor<A> {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _message: StopChannel, _ctx: &mut Self::Context) -> Self::Result {
        let channel = self.channel();
        self.readiness.set(channel, false, "stopped");
        let stopping = self.tasks.stop(STOP_WAIT);
        Box::pin(stopping.into_actor(self).map(move |ended, _act, ctx| {
            if !ended {
                tracing::warn!(
                    channel,
                    waited_s = STOP_WAIT.as_secs(),
                    "parts still being sent at stop; the next start sends them again"
                );
            }
            // The typing timers live in this context and end with it.
            ctx.stop();
        }))
    }
}
