//! Delivering the outbox: one worker per conversation takes that conversation's messages in
//! outbox order, hands each part to the platform, notes each part and the whole message as
//! delivered once the platform accepted it, and tries again with growing pauses while the
//! platform fails for a reason that may pass, for `delivery.max_age_hours`; then it gives
//! up, logged and counted (`hearth_outbox_undelivered_total`). A conversation's trouble
//! never holds up another's. An idle worker ends, so idle conversations cost nothing.
//!
//! A platform's own pause (Telegram's `retry_after`, Matrix's `M_LIMIT_EXCEEDED`) is obeyed
//! up to `MAX_PAUSE`: a platform asking for a year does not park a conversation for a
//! year; asked again after five minutes, it says again how long to wait.
//!
//! Workers run under the channel's `ChannelTasks`: when the channel stops, a worker ends
//! after the part it is sending (noted as sent) and leaves the rest in the outbox.
//!
//! At start the rows the last run left undelivered go first; messages that arrive before
//! they are read wait behind them, so a conversation keeps its order across a restart.
//!
//! On a PostgreSQL database with several workers only the platform's leader delivers
//! (`leader.rs`): `pause` ends this worker's deliveries when it stops leading, and each
//! reading of the outbox skips the rows a delivery already took (`delivery_ids.rs`).
//!
//! Telegram has no way to recognise a resent message: if hearth is killed after Telegram
//! accepted a part and before that was noted, the part is sent again after the restart.
//! Matrix recognises it by the transaction id, made from the outbox row and the part.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::delivery_ids::{DispatchedIds, OutboxRead};
use super::platform::{DeliveryError, Platform};
use super::tasks::ChannelTasks;
use crate::ids::{ConversationKey, PromptId};
use crate::metrics::{Metrics, StageTimer};
use crate::ports::{Outbox, OutboxEntry, OutgoingKind, OutgoingMessage, StorageError, now_ms};
use crate::reminders::sent_late;

/// An idle conversation's worker ends after this.
const IDLE_WORKER: Duration = Duration::from_secs(30);
/// Workers kept before the ended ones are swept from the map.
const SWEEP_ABOVE: usize = 64;
/// The longest pause between two attempts of a part, also when the platform asks for
/// longer.
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(300);

/// How long delivery keeps trying (config `delivery`).
#[derive(Debug, Clone, Copy)]
pub struct DeliverySettings {
    /// A message older than this that still fails is given up.
    pub max_age: Duration,
}

/// The pause before attempt `attempt + 1` of a part that failed `attempt` times: 1 s
/// doubling, or what the platform asked for; never more than `MAX_PAUSE`.
pub(crate) fn pause_after(attempt: u32, asked: Option<Duration>) -> Duration {
    asked
        .unwrap_or_else(|| Duration::from_secs(1u64 << attempt.min(9)))
        .min(MAX_PAUSE)
}

struct Shared<P: Platform> {
    platform: Arc<P>,
    outbox: Arc<dyn Outbox>,
    metrics: Arc<Metrics>,
    settings: DeliverySettings,
    tasks: ChannelTasks,
    ids: DispatchedIds,
}

/// A channel's deliveries. Lives in the channel actor; workers are tokio tasks.
pub(crate) struct Deliveries<P: Platform> {
    shared: Arc<Shared<P>>,
    workers: HashMap<ConversationKey, mpsc::UnboundedSender<OutboxEntry>>,
    /// Ends this term's workers: the channel stopping, or this worker no longer
    /// delivering the platform (`pause`).
    term: CancellationToken,
    /// Until the last run's undelivered rows are read: what arrived meanwhile.
    held: Option<Vec<OutboxEntry>>,
    /// Numbers messages the outbox could not take (delivered once, not noted).
    unstored: i64,
}

impl<P: Platform> Deliveries<P> {
    pub(crate) fn new(
        platform: Arc<P>,
        outbox: Arc<dyn Outbox>,
        metrics: Arc<Metrics>,
        settings: DeliverySettings,
        tasks: ChannelTasks,
    ) -> Self {
        let term = tasks.child_token();
        Deliveries {
            shared: Arc::new(Shared {
                platform,
                outbox,
                metrics,
                settings,
                tasks,
                ids: DispatchedIds::default(),
            }),
            workers: HashMap::new(),
            term,
            held: Some(Vec::new()),
            unstored: 0,
        }
    }

    /// The platform's undelivered rows (the last run's, another worker's): hand them to
    /// `resumed`.
    pub(crate) fn undelivered(
        &self,
    ) -> impl std::future::Future<Output = (OutboxRead, Result<Vec<OutboxEntry>, StorageError>)> + 'static
    {
        let (outbox, channel) = (self.shared.outbox.clone(), self.shared.platform.channel());
        let read = self.shared.ids.read_begins();
        async move { (read, outbox.undelivered(channel).await) }
    }

    /// Deliver the undelivered rows `read` found that no delivery has taken, then (the
    /// first time) what arrived meanwhile, in order.
    /// The conversations given something to deliver.
    pub(crate) fn resumed(
        &mut self,
        read: OutboxRead,
        mut entries: Vec<OutboxEntry>,
    ) -> Vec<ConversationKey> {
        let returned = entries.iter().map(|entry| entry.id).collect();
        self.shared.ids.read_returned(&read, &returned);
        drop(read);
        let ids = &self.shared.ids;
        entries.retain(|entry| !ids.is_taken(entry.id));
        if !entries.is_empty() {
            tracing::info!(
                channel = self.shared.platform.channel(),
                count = entries.len(),
                "delivering what is left undelivered"
            );
        }
        let held = self.held.take().unwrap_or_default();
        for entry in held {
            if !entries
                .iter()
                .any(|known| known.id == entry.id && entry.id > 0)
            {
                entries.push(entry);
            }
        }
        entries.sort_by_key(|entry| order_key(entry.id));
        let mut conversations: Vec<ConversationKey> = Vec::new();
        for entry in entries {
            if !conversations.contains(&entry.message.conversation) {
                conversations.push(entry.message.conversation.clone());
            }
            self.dispatch(entry);
        }
        conversations
    }

    /// Store `message` in the outbox; deliver it with `stored` once that is done.
    pub(crate) fn store(
        &self,
        message: OutgoingMessage,
    ) -> impl std::future::Future<Output = (OutgoingMessage, Result<i64, StorageError>)> + 'static
    {
        let outbox = self.shared.outbox.clone();
        async move {
            let stored = outbox.enqueue(&message).await;
            (message, stored)
        }
    }

    /// `message` could not be stored: counted and logged; it is delivered once, undurably.
    pub(crate) fn not_stored(&self, message: &OutgoingMessage, error: &StorageError) {
        self.shared.metrics.error("outbox");
        tracing::error!(conversation = %message.conversation, %error,
            "message not stored for delivery; sent once without retry");
    }

    /// Deliver `message`, which is outbox row `id` (`None`: not stored).
    pub(crate) fn deliver(&mut self, id: Option<i64>, message: OutgoingMessage) {
        let entry = self.entry(id, message);
        match &mut self.held {
            Some(held) => held.push(entry),
            None => self.dispatch(entry),
        }
    }

    /// Deliver `message`, which the outbox could not take, now: nothing reads it back.
    pub(crate) fn deliver_unstored(&mut self, message: OutgoingMessage) {
        let entry = self.entry(None, message);
        self.dispatch(entry);
    }

    fn entry(&mut self, id: Option<i64>, message: OutgoingMessage) -> OutboxEntry {
        let id = id.unwrap_or_else(|| {
            self.unstored -= 1;
            self.unstored
        });
        OutboxEntry {
            id,
            message,
            created_at_ms: now_ms(),
            attempts: 0,
            parts_delivered: 0,
        }
    }

    /// This worker no longer delivers the platform: each delivery ends after the part it
    /// sends, and what arrives is held until `resumed` (the leader's outbox reads it).
    pub(crate) fn pause(&mut self) {
        self.term.cancel();
        self.term = self.shared.tasks.child_token();
        self.workers.clear();
        self.shared.ids.forget_all();
        self.held = Some(Vec::new());
    }

    fn dispatch(&mut self, mut entry: OutboxEntry) {
        if !self.shared.ids.dispatched(entry.id) {
            return;
        }
        if self.workers.len() > SWEEP_ABOVE {
            self.workers.retain(|_, sender| !sender.is_closed());
        }
        let key = entry.message.conversation.clone();
        loop {
            let sender = self.workers.entry(key.clone()).or_insert_with(|| {
                let (sender, receiver) = mpsc::unbounded_channel();
                let term = self.term.clone();
                self.shared
                    .tasks
                    .spawn(run_worker(self.shared.clone(), receiver, term));
                sender
            });
            match sender.send(entry) {
                Ok(()) => return,
                // The worker ended while idle: a new one takes it.
                Err(mpsc::error::SendError(back)) => {
                    self.workers.remove(&key);
                    entry = back;
                }
            }
        }
    }
}

/// Stored rows in id order; unstored ones (negative ids) after them, as they came.
fn order_key(id: i64) -> (bool, i64) {
    (id <= 0, id.abs())
}

async fn run_worker<P: Platform>(
    shared: Arc<Shared<P>>,
    mut entries: mpsc::UnboundedReceiver<OutboxEntry>,
    term: CancellationToken,
) {
    let mut waiting: BTreeMap<(bool, i64), OutboxEntry> = BTreeMap::new();
    loop {
        // Stopping: what waits stays in the outbox for the next start (or leader).
        if term.is_cancelled() {
            return;
        }
        while let Ok(entry) = entries.try_recv() {
            waiting.insert(order_key(entry.id), entry);
        }
        if let Some((_, entry)) = waiting.pop_first() {
            let id = entry.id;
            let span = tracing::info_span!("deliver", channel = shared.platform.channel(),
                outbox_id = entry.id, conversation = %entry.message.conversation);
            match deliver_one(&shared, entry, &term).instrument(span).await {
                Some(noted) => shared.ids.settled(id, noted),
                None => shared.ids.dropped(id),
            }
            continue;
        }
        let next = tokio::select! {
            next = tokio::time::timeout(IDLE_WORKER, entries.recv()) => next,
            () = term.cancelled() => return,
        };
        match next {
            Ok(Some(entry)) => {
                waiting.insert(order_key(entry.id), entry);
            }
            Ok(None) => return,
            Err(_) => {
                // Idle: no new message can come in now; deliver what came at the last
                // moment, then end.
                entries.close();
                while let Ok(entry) = entries.try_recv() {
                    waiting.insert(order_key(entry.id), entry);
                }
                if waiting.is_empty() {
                    return;
                }
            }
        }
    }
}

/// A fired reminder's prompt not yet shown, going out later than it was due: it says so
/// (its firing stored it on time, before hearth stopped or the platform failed).
fn said_late_when_it_is(mut entry: OutboxEntry) -> OutboxEntry {
    if let OutgoingKind::Prompt {
        prompt: PromptId::Reminder(firing),
        ..
    } = &entry.message.kind
        && entry.parts_delivered == 0
        && let (Some(due), Some(fired_at)) = (
            DateTime::<Utc>::from_timestamp_millis(firing.due_ms),
            DateTime::<Utc>::from_timestamp_millis(entry.created_at_ms),
        )
        && let Some(text) = sent_late(&entry.message.text, due, fired_at, crate::clock::now())
    {
        entry.message.text = text;
    }
    entry
}

/// Deliver `entry`; once it settled (delivered or given up), whether the outbox noted
/// that; `None` when `term` ended first.
async fn deliver_one<P: Platform>(
    shared: &Shared<P>,
    entry: OutboxEntry,
    term: &CancellationToken,
) -> Option<bool> {
    let entry = said_late_when_it_is(entry);
    let channel = shared.platform.channel();
    let stored = entry.id > 0;
    let parts = match rendered(&shared.platform, &entry).await {
        Rendered::Parts(parts) => parts,
        Rendered::Failed(error) => return Some(give_up(shared, &entry, &error, stored).await),
        Rendered::Stopped => return None,
    };
    let mut next = usize::try_from(entry.parts_delivered).unwrap_or(0);
    let mut attempts = entry.attempts;
    let mut first_id = None;
    tracing::debug!(
        stage = "outbox_wait",
        outbox_id = entry.id,
        elapsed_ms = now_ms().saturating_sub(entry.created_at_ms),
        "delivery starts"
    );
    while next < parts.len() {
        if term.is_cancelled() {
            return None;
        }
        let transaction_id = format!("hearth-{}-{next}", entry.id);
        let sending = StageTimer::start("deliver_part");
        let sent = shared
            .platform
            .deliver(&entry, next, &parts[next], &transaction_id)
            .await;
        drop(sending);
        match sent {
            Ok(platform_id) => {
                first_id = first_id.or(platform_id);
                next += 1;
                if stored && next < parts.len() {
                    let parts_done = u32::try_from(next).unwrap_or(u32::MAX);
                    if let Err(error) = shared.outbox.part_delivered(entry.id, parts_done).await {
                        tracing::warn!(outbox_id = entry.id, %error, "delivered part not noted");
                    }
                }
            }
            Err(error) => {
                attempts += 1;
                if stored
                    && let Err(storage) = shared
                        .outbox
                        .attempt_failed(entry.id, &error.to_string())
                        .await
                {
                    tracing::warn!(outbox_id = entry.id, error = %storage, "failed attempt not noted");
                }
                let too_old = now_ms().saturating_sub(entry.created_at_ms)
                    > i64::try_from(shared.settings.max_age.as_millis()).unwrap_or(i64::MAX);
                let retry_after = match &error {
                    DeliveryError::Transient { retry_after, .. } if !too_old => *retry_after,
                    _ => return Some(give_up(shared, &entry, &error, stored).await),
                };
                let pause = pause_after(attempts.saturating_sub(1), retry_after);
                shared
                    .metrics
                    .increment("hearth_outbox_retries_total", &[("channel", channel)]);
                tracing::info!(channel, outbox_id = entry.id, attempts, %error,
                    pause_ms = pause.as_millis() as u64, "delivery failed; trying again");
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = term.cancelled() => return None,
                }
            }
        }
    }
    shared
        .metrics
        .increment("hearth_outbox_delivered_total", &[("channel", channel)]);
    if stored && let Err(error) = shared.outbox.delivered(entry.id, first_id.as_deref()).await {
        // Sent, not noted: a restart sends it again (Matrix recognises it, Telegram not).
        tracing::warn!(outbox_id = entry.id, %error, "delivered message not noted");
        return Some(false);
    }
    Some(true)
}

/// A text longer than this is rendered on the blocking pool: rendering grows with the
/// text. Measured (release build, pulldown-cmark alone): 1 KB of markdown renders in about
/// 25 µs, and a hop to the pool and back costs 6 to 25 µs, so a shorter reply stays here.
const RENDERED_INLINE_BYTES: usize = 1024;

enum Rendered<T> {
    Parts(Vec<T>),
    /// The platform's rendering panicked on this text: it never will be delivered.
    Failed(DeliveryError),
    /// The runtime is stopping: the row stays in the outbox.
    Stopped,
}

/// The parts of `entry`, rendered here when its text is short, else on the blocking pool
/// so a long reply never holds the actors' thread.
async fn rendered<P: Platform>(platform: &Arc<P>, entry: &OutboxEntry) -> Rendered<P::Part> {
    if entry.message.text.len() <= RENDERED_INLINE_BYTES {
        return Rendered::Parts(platform.parts(entry));
    }
    let (platform, owned) = (platform.clone(), entry.clone());
    match tokio::task::spawn_blocking(move || platform.parts(&owned)).await {
        Ok(parts) => Rendered::Parts(parts),
        Err(error) if error.is_panic() => Rendered::Failed(DeliveryError::Permanent(format!(
            "rendering the {} bytes of text failed",
            entry.message.text.len()
        ))),
        Err(_) => Rendered::Stopped,
    }
}

async fn give_up<P: Platform>(
    shared: &Shared<P>,
    entry: &OutboxEntry,
    error: &DeliveryError,
    stored: bool,
) -> bool {
    let channel = shared.platform.channel();
    shared
        .metrics
        .increment("hearth_outbox_undelivered_total", &[("channel", channel)]);
    tracing::error!(channel, outbox_id = entry.id, conversation = %entry.message.conversation,
        inbox_id = ?entry.message.inbox_id, %error, "message given up: not delivered");
    if stored && let Err(storage) = shared.outbox.abandon(entry.id, &error.to_string()).await {
        tracing::warn!(outbox_id = entry.id, error = %storage, "given-up message not noted");
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use tokio::time::Instant;

    use super::*;
    use crate::actors::channels::core::commands::say;
    use crate::storage::in_memory::InMemoryStore;

    /// A platform whose attempts fail as `fails` says (given how many came before), and
    /// that takes the part otherwise; when each attempt came is noted.
    struct Scripted {
        attempts: Mutex<Vec<Instant>>,
        fails: fn(usize) -> Option<DeliveryError>,
    }

    #[async_trait]
    impl Platform for Scripted {
        type Part = ();

        fn channel(&self) -> &'static str {
            "test"
        }

        fn parts(&self, _entry: &OutboxEntry) -> Vec<()> {
            vec![()]
        }

        async fn deliver(
            &self,
            _entry: &OutboxEntry,
            _index: usize,
            _part: &(),
            _transaction_id: &str,
        ) -> Result<Option<String>, DeliveryError> {
            let mut attempts = self.attempts.lock().unwrap();
            let before = attempts.len();
            attempts.push(Instant::now());
            match (self.fails)(before) {
                Some(error) => Err(error),
                None => Ok(None),
            }
        }
    }

    /// One message stored and handed to the deliveries of a `Scripted` platform failing as
    /// `fails`; the platform, the outbox and the metrics.
    async fn deliver_one(
        fails: fn(usize) -> Option<DeliveryError>,
        max_age: Duration,
    ) -> (Arc<Scripted>, Arc<InMemoryStore>, Arc<Metrics>) {
        let platform = Arc::new(Scripted {
            attempts: Mutex::new(Vec::new()),
            fails,
        });
        let outbox = Arc::new(InMemoryStore::default());
        let metrics = Arc::new(Metrics::default());
        let mut deliveries = Deliveries::new(
            platform.clone(),
            outbox.clone(),
            metrics.clone(),
            DeliverySettings { max_age },
            ChannelTasks::default(),
        );
        let (read, undelivered) = deliveries.undelivered().await;
        deliveries.resumed(read, undelivered.unwrap());
        let message = say(&"test:chat-1".parse().unwrap(), "Hello.", None);
        let id = outbox.enqueue(&message).await.unwrap();
        deliveries.deliver(Some(id), message);
        (platform, outbox, metrics)
    }

    /// A platform whose one part is the thread that rendered it.
    struct RenderedWhere;

    #[async_trait]
    impl Platform for RenderedWhere {
        type Part = std::thread::ThreadId;

        fn channel(&self) -> &'static str {
            "test"
        }

        fn parts(&self, _entry: &OutboxEntry) -> Vec<std::thread::ThreadId> {
            vec![std::thread::current().id()]
        }

        async fn deliver(
            &self,
            _entry: &OutboxEntry,
            _index: usize,
            _part: &std::thread::ThreadId,
            _transaction_id: &str,
        ) -> Result<Option<String>, DeliveryError> {
            Ok(None)
        }
    }

    #[tokio::test]
    async fn a_long_text_is_rendered_off_the_actors_thread_and_a_short_one_on_it() {
        let platform = Arc::new(RenderedWhere);
        let here = std::thread::current().id();
        let entry = |text: &str| OutboxEntry {
            id: 1,
            message: say(&"test:chat-1".parse().unwrap(), text, None),
            created_at_ms: now_ms(),
            attempts: 0,
            parts_delivered: 0,
        };
        let where_rendered = |rendered: Rendered<std::thread::ThreadId>| match rendered {
            Rendered::Parts(parts) => parts[0],
            Rendered::Failed(_) | Rendered::Stopped => panic!("not rendered"),
        };
        let short = entry(&"a".repeat(RENDERED_INLINE_BYTES));
        assert_eq!(where_rendered(rendered(&platform, &short).await), here);
        let long = entry(&"a".repeat(RENDERED_INLINE_BYTES + 1));
        assert_ne!(where_rendered(rendered(&platform, &long).await), here);
    }

    /// When each attempt came, once the outbox has nothing left to deliver (delivered or
    /// given up), which must be within a day.
    async fn attempts_once_settled(platform: &Scripted, outbox: &InMemoryStore) -> Vec<Instant> {
        let settled = async {
            while !outbox.undelivered("test").await.unwrap().is_empty() {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        };
        let a_day = Duration::from_secs(24 * 3600);
        let settled = tokio::time::timeout(a_day, settled).await;
        assert!(settled.is_ok(), "still to deliver a day later");
        platform.attempts.lock().unwrap().clone()
    }

    #[tokio::test(start_paused = true)]
    async fn a_platform_asking_for_a_year_is_tried_again_after_the_longest_pause() {
        let asks_for_a_year = |before: usize| {
            (before == 0).then(|| DeliveryError::Transient {
                reason: "flood control".into(),
                retry_after: Some(Duration::from_secs(365 * 24 * 3600)),
            })
        };
        let two_days = Duration::from_secs(48 * 3600);
        let (platform, outbox, _) = deliver_one(asks_for_a_year, two_days).await;

        let attempts = attempts_once_settled(&platform, &outbox).await;
        assert_eq!(attempts.len(), 2);
        assert_eq!(attempts[1] - attempts[0], MAX_PAUSE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_still_failing_past_the_maximum_age_is_given_up_and_counted() {
        let _clock = crate::clock::follow_tokio_clock();
        let always_down = |_: usize| {
            Some(DeliveryError::Transient {
                reason: "bad gateway".into(),
                retry_after: None,
            })
        };
        let max_age = Duration::from_secs(2 * 3600);
        let created = Instant::now();
        let (platform, outbox, metrics) = deliver_one(always_down, max_age).await;

        let attempts = attempts_once_settled(&platform, &outbox).await;
        // Tried again and again while young enough; the first failure past the age ends it.
        let (last, before_last) = (attempts[attempts.len() - 1], attempts[attempts.len() - 2]);
        assert!(before_last - created <= max_age, "{attempts:?}");
        assert!(last - created > max_age, "{attempts:?}");
        assert!(last - created <= max_age + MAX_PAUSE, "{attempts:?}");
        let undelivered = metrics.value("hearth_outbox_undelivered_total", &[("channel", "test")]);
        assert_eq!(undelivered, 1.0);
        tokio::time::sleep(MAX_PAUSE * 3).await;
        assert_eq!(platform.attempts.lock().unwrap().len(), attempts.len());
    }

    #[test]
    fn pauses_grow_to_a_bound_and_obey_the_platform() {
        assert_eq!(pause_after(0, None), Duration::from_secs(1));
        assert_eq!(pause_after(3, None), Duration::from_secs(8));
        assert_eq!(pause_after(40, None), MAX_PAUSE);
        assert_eq!(
            pause_after(0, Some(Duration::from_secs(42))),
            Duration::from_secs(42)
        );
        let a_year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(pause_after(0, Some(a_year)), MAX_PAUSE);
    }

    #[test]
    fn stored_rows_go_in_id_order_before_unstored_ones() {
        let mut keys = [order_key(-1), order_key(7), order_key(3), order_key(-2)];
        keys.sort();
        assert_eq!(keys, [(false, 3), (false, 7), (true, 1), (true, 2)]);
    }
}
