//! `Scheduler`: fires reminders and scheduled tasks from the durable `schedules` table, on
//! time, once.
//!
//! It holds the next due items in memory (schedules' next occurrences and unacknowledged
//! reminders' escalations up to a horizon, at most `HELD` of them) and one timer for the
//! earliest: no polling loop that drifts, no scan of the table per tick. When the timer
//! fires, every item due by then is fired at once (each a claim of its own, which the
//! SQLite writer commits together), then the next items are read again (one indexed
//! query). A schedule added or moved (`SchedulesChanged`) before the horizon joins what is
//! held. Each occurrence is claimed in the database with what it sends (`firing.rs`), so it
//! fires once across kill -9 and several hearths; what is missed while hearth is down fires
//! at start-up, late within `reminders.grace_minutes` or told as missed.
//!
//! Among the workers of one PostgreSQL database every scheduler holds every schedule, so
//! whichever worker is alive at the due time fires it (the claim lets one of them): a
//! schedule added, snoozed, edited or cancelled on one worker wakes the others
//! (`WakeTopic::Schedules`), which read what is due next from the database at once (reads
//! asked for while one runs make one more), and each reads again every `LOOK_EVERY` for
//! what a lost wake-up left. A worker killed right after storing a reminder has woken the
//! others already: it fires on time on one of them.
//!
//! Done and Snooze (`SettleReminder`, `answers.rs`) settle a fired reminder once. A
//! channel's `/reminders` lists a member's schedules (`ListReminders`) and cancels one from
//! that list (`CancelReminder`) here, by `reminders::listing`'s rules, the same as the
//! tools': the scheduler holds the schedules the channels have no port for. The web page's
//! Cancel comes here too. A cancelled schedule needs no change to what is held: its claim
//! finds it taken.

mod answers;
mod firing;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{
    Actor, AsyncContext, Context, Handler, Recipient, ResponseActFuture, ResponseFuture,
    SpawnHandle, StreamHandler,
};
use chrono::{DateTime, Utc};
use futures::future::join_all;

use crate::actors::channels::DeliverStored;
use crate::actors::request_queue::QueueStored;
use crate::config::{FamilyMember, RemindersConfig};
use crate::family::{Family, OwnChats};
use crate::ids::{FiringId, MemberId};
use crate::metrics::Metrics;
use crate::ports::{Schedules, StorageError, TelemetrySink, now_ms};
use crate::ports::{WakeTopic, WakeUp};
use crate::reminders::{
    CancelReminder, ListReminders, ListingError, ReminderCancelled, ReminderError, ReminderListing,
    ReminderSettled, SchedulesChanged, SettleReminder, listing,
};
use crate::workers::Worker;

/// Most due items held in memory; the rest are read when these are done.
const HELD: usize = 1024;
/// How far ahead items are held; the timer reads again at the horizon.
const LOOKAHEAD_MS: i64 = 6 * 60 * 60 * 1000;
/// After a failed read, how long until the next try.
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Among workers, how often what is due is read again without a wake-up: the most a
/// change whose wake-up was lost (a listener reconnecting) waits to be seen.
pub const LOOK_EVERY: Duration = Duration::from_secs(30);

/// What the scheduler fires with.
pub struct SchedulerDeps {
    pub schedules: Arc<dyn Schedules>,
    pub family: Arc<Family>,
    pub own_chats: Arc<OwnChats>,
    pub settings: RemindersConfig,
    pub metrics: Arc<Metrics>,
    pub telemetry: Arc<dyn TelemetrySink>,
    /// The channels that deliver stored outbox rows, by name (Telegram, Matrix).
    pub channels: HashMap<String, Recipient<DeliverStored>>,
    /// Where a task's turn, stored accepted, is queued.
    pub queue: Recipient<QueueStored>,
    /// This process as one worker of a shared database (`None` alone on it): changes are
    /// told to the other workers' schedulers, and theirs heard.
    pub worker: Option<Arc<Worker>>,
}

/// A due item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// Schedule `id`'s next occurrence.
    Occurrence(i64),
    /// An open occurrence's escalation to the parents.
    Escalation(FiringId),
}

pub struct Scheduler {
    deps: Arc<SchedulerDeps>,
    /// (due at, item), soonest first: every item due by `horizon_ms`.
    held: BTreeMap<(i64, Due), ()>,
    horizon_ms: i64,
    timer: Option<SpawnHandle>,
    /// A firing round is running; a new one starts when it ends.
    firing: bool,
    /// A read of what is due is running: schedules changed meanwhile, which the read may
    /// have missed, join what it found.
    reading: Option<Vec<(i64, Due)>>,
    /// Another read was asked for while one ran: it runs when that one ends.
    read_again: bool,
}

impl Scheduler {
    pub fn new(deps: SchedulerDeps) -> Self {
        Scheduler {
            deps: Arc::new(deps),
            held: BTreeMap::new(),
            horizon_ms: i64::MIN,
            timer: None,
            firing: false,
            reading: None,
            read_again: false,
        }
    }

    /// Read the next due items again, then arm the timer.
    fn reload(&mut self, ctx: &mut Context<Self>) {
        if self.reading.is_some() {
            self.read_again = true;
            return;
        }
        self.reading = Some(Vec::new());
        let deps = self.deps.clone();
        let read = async move {
            let until = now_ms().saturating_add(LOOKAHEAD_MS);
            let occurrences = deps.schedules.due(until, HELD).await?;
            let escalations = deps.schedules.due_escalations(until, HELD).await?;
            Ok::<_, StorageError>((until, occurrences, escalations))
        };
        ctx.spawn(read.into_actor(self).map(|read, act, ctx| {
            let changed_meanwhile = act.reading.take().unwrap_or_default();
            act.read(read, changed_meanwhile, ctx);
            if std::mem::take(&mut act.read_again) {
                act.reload(ctx);
            }
        }));
    }

    /// Hold what a read found, with what changed while it ran, and arm the timer.
    fn read(
        &mut self,
        read: Result<(i64, Vec<crate::ports::Schedule>, Vec<crate::ports::Firing>), StorageError>,
        changed_meanwhile: Vec<(i64, Due)>,
        ctx: &mut Context<Self>,
    ) {
        let act = self;
        match read {
            Ok((until, occurrences, escalations)) => {
                // Everything due before the last item read is held when a read was full.
                let mut horizon = until;
                if occurrences.len() >= HELD
                    && let Some(last) = occurrences.last().and_then(|s| s.next_due_ms)
                {
                    horizon = horizon.min(last - 1);
                }
                if escalations.len() >= HELD
                    && let Some(last) = escalations.last().and_then(|f| f.escalate_at_ms)
                {
                    horizon = horizon.min(last - 1);
                }
                act.held.clear();
                for schedule in occurrences {
                    if let Some(due) = schedule.next_due_ms {
                        act.held.insert((due, Due::Occurrence(schedule.id)), ());
                    }
                }
                for firing in escalations {
                    if let Some(at) = firing.escalate_at_ms {
                        act.held.insert((at, Due::Escalation(firing.id)), ());
                    }
                }
                act.horizon_ms = horizon;
                for (due, item) in changed_meanwhile {
                    if due <= horizon {
                        act.held.insert((due, item), ());
                    }
                }
                act.arm(ctx);
            }
            Err(error) => {
                tracing::error!(%error, "cannot read what is due; trying again shortly");
                act.deps.metrics.error("scheduler");
                act.rearm_in(RETRY_AFTER, ctx);
            }
        }
    }

    /// One timer for the earliest held item, or the horizon.
    fn arm(&mut self, ctx: &mut Context<Self>) {
        if self.firing {
            return;
        }
        let next = self
            .held
            .keys()
            .next()
            .map_or(self.horizon_ms, |(due, _)| (*due).min(self.horizon_ms));
        let wait = u64::try_from(next.saturating_sub(now_ms())).unwrap_or(0);
        self.rearm_in(Duration::from_millis(wait), ctx);
    }

    fn rearm_in(&mut self, wait: Duration, ctx: &mut Context<Self>) {
        if let Some(timer) = self.timer.take() {
            ctx.cancel_future(timer);
        }
        self.timer = Some(ctx.run_later(wait, |act, ctx| {
            act.timer = None;
            act.fire_due(ctx);
        }));
    }

    /// Fire every held item due by now, all at once; then read what is due next.
    fn fire_due(&mut self, ctx: &mut Context<Self>) {
        let now_ms = now_ms();
        let mut due = Vec::new();
        while let Some(entry) = self.held.first_entry() {
            if entry.key().0 > now_ms {
                break;
            }
            due.push(entry.remove_entry().0.1);
        }
        if due.is_empty() && now_ms < self.horizon_ms {
            self.arm(ctx);
            return;
        }
        self.firing = true;
        let deps = self.deps.clone();
        let now = DateTime::<Utc>::from_timestamp_millis(now_ms).unwrap_or_else(crate::clock::now);
        let round = async move {
            join_all(
                due.into_iter()
                    .map(|item| fire_one(deps.clone(), item, now)),
            )
            .await
        };
        ctx.spawn(round.into_actor(self).map(|_, act, ctx| {
            act.firing = false;
            act.reload(ctx);
        }));
    }
}

/// Fire one item and hand on what it stored.
async fn fire_one(deps: Arc<SchedulerDeps>, item: Due, now: DateTime<Utc>) {
    let fired = match item {
        Due::Occurrence(id) => match deps.schedules.schedule(id).await {
            Ok(Some(schedule))
                if schedule
                    .next_due_ms
                    .is_some_and(|due| due <= now.timestamp_millis()) =>
            {
                firing::fire_occurrence(&deps, &schedule, now).await
            }
            Ok(_) => Ok(None),
            Err(error) => Err(error),
        },
        Due::Escalation(id) => match deps.schedules.firing(id).await {
            Ok(Some(firing)) => firing::escalate(&deps, &firing, now).await,
            Ok(None) => Ok(None),
            Err(error) => Err(error),
        },
    };
    match fired {
        Ok(Some(sent)) => hand_on(&deps, sent.rows, sent.turn),
        Ok(None) => {}
        Err(error) => {
            // Nothing was stored: the next read finds it due again.
            deps.metrics.error("scheduler");
            tracing::error!(?item, %error, "a due item was not fired; it is tried again");
        }
    }
}

/// Hand stored outbox rows to their channels and a task's turn to the queue.
fn hand_on(
    deps: &SchedulerDeps,
    rows: Vec<(i64, crate::ports::OutgoingMessage)>,
    turn: Option<crate::ports::Inbound>,
) {
    for (outbox_id, message) in rows {
        match deps.channels.get(message.conversation.channel()) {
            Some(channel) => channel.do_send(DeliverStored { outbox_id, message }),
            None => {
                tracing::warn!(
                    channel = message.conversation.channel(),
                    outbox_id,
                    "no channel to deliver to; it stays stored"
                )
            }
        }
    }
    if let Some(inbound) = turn {
        deps.queue.do_send(QueueStored { inbound });
    }
}

impl Actor for Scheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
        self.reload(ctx);
        if let Some(worker) = &self.deps.worker {
            ctx.add_stream(worker.wake_ups());
            ctx.run_interval(LOOK_EVERY, |act, ctx| act.reload(ctx));
        }
    }
}

/// Another worker changed schedules: what is due next is read from the database.
impl StreamHandler<WakeUp> for Scheduler {
    fn handle(&mut self, wake_up: WakeUp, ctx: &mut Self::Context) {
        let ours = self
            .deps
            .worker
            .as_ref()
            .is_some_and(|worker| worker.worker_id() == wake_up.subject);
        if wake_up.topic == WakeTopic::Schedules && !ours {
            self.reload(ctx);
        }
    }

    /// The wake-ups end only when the database closes: the periodic read goes on.
    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl Scheduler {
    /// Tell the other workers' schedulers that schedules changed here.
    fn tell_other_workers(&self) {
        if let Some(worker) = self.deps.worker.clone() {
            let wake_up = WakeUp::new(WakeTopic::Schedules, worker.worker_id());
            actix::spawn(async move { worker.wake(wake_up).await });
        }
    }
}

impl Handler<SchedulesChanged> for Scheduler {
    type Result = ();

    fn handle(&mut self, changed: SchedulesChanged, ctx: &mut Self::Context) {
        self.tell_other_workers();
        let Some(next_due_ms) = changed.next_due_ms else {
            return;
        };
        let item = (next_due_ms, Due::Occurrence(changed.schedule_id));
        if let Some(meanwhile) = &mut self.reading {
            meanwhile.push(item);
            return;
        }
        if next_due_ms > self.horizon_ms {
            return;
        }
        self.held.insert(item, ());
        self.arm(ctx);
    }
}

impl Handler<SettleReminder> for Scheduler {
    type Result = ResponseActFuture<Self, Result<ReminderSettled, ReminderError>>;

    fn handle(&mut self, answer: SettleReminder, _ctx: &mut Self::Context) -> Self::Result {
        let deps = self.deps.clone();
        let work = async move {
            let now = crate::clock::now();
            let (settled, rows, snoozed) = answers::settle(&deps, &answer, now).await?;
            hand_on(&deps, rows, None);
            Ok::<_, ReminderError>((settled, snoozed))
        };
        Box::pin(work.into_actor(self).map(|settled, act, ctx| {
            let (settled, snoozed) = settled?;
            if let Some((schedule_id, next_due_ms)) = snoozed {
                <Self as Handler<SchedulesChanged>>::handle(
                    act,
                    SchedulesChanged {
                        schedule_id,
                        next_due_ms: Some(next_due_ms),
                    },
                    ctx,
                );
            }
            Ok(settled)
        }))
    }
}

/// The family member a list or a cancel is asked for.
fn family_member(deps: &SchedulerDeps, member_id: MemberId) -> Result<FamilyMember, ListingError> {
    deps.family
        .member(member_id.as_str())
        .ok_or(ListingError::NotAMember(member_id))
}

impl Handler<ListReminders> for Scheduler {
    type Result = ResponseFuture<Result<ReminderListing, ListingError>>;

    fn handle(&mut self, asked: ListReminders, _ctx: &mut Self::Context) -> Self::Result {
        let deps = self.deps.clone();
        Box::pin(async move {
            let member = family_member(&deps, asked.member_id)?;
            let now = crate::clock::now();
            Ok(listing::list(deps.schedules.as_ref(), &deps.family, &member, now).await?)
        })
    }
}

impl Handler<CancelReminder> for Scheduler {
    type Result = ResponseFuture<Result<ReminderCancelled, ListingError>>;

    fn handle(&mut self, asked: CancelReminder, _ctx: &mut Self::Context) -> Self::Result {
        let deps = self.deps.clone();
        Box::pin(async move {
            let member = family_member(&deps, asked.member_id)?;
            let schedule =
                listing::cancel(deps.schedules.as_ref(), &member, asked.schedule_id).await?;
            tracing::info!(schedule = schedule.id, member = %member.id, "schedule cancelled from a list");
            if let Some(worker) = deps.worker.clone() {
                worker
                    .wake(WakeUp::new(WakeTopic::Schedules, worker.worker_id()))
                    .await;
            }
            Ok(ReminderCancelled {
                schedule_id: schedule.id,
                text: listing::cancelled_text(&schedule),
            })
        })
    }
}
