//! Several hearth processes (workers) on one database: which are alive, and which holds
//! each lease. A lease is a name (`telegram`, the one worker that long-polls Telegram;
//! `conversation:<key>`, the one worker running that conversation's turns) held by one
//! worker until it expires; the holder renews all of its leases with its heartbeat, so a
//! worker that dies (kill -9 included) loses them within one lease time, and a worker
//! that stops gracefully hands them back at once (`leave`).
//!
//! Times are the workers' own clocks (`clock::now_ms`), so workers on several machines
//! need synchronised clocks, as the schedules already do. On SQLite, one process owns the
//! database (the instance lock), so its leases live in that process's memory.
//!
//! A worker wakes the others (`wake`, PostgreSQL's `NOTIFY`) when it stored something
//! another may have to act on: a message for a conversation another holds, a turn
//! answered that another's HTTP caller waits for, a row to deliver. A wake-up is never
//! stored and may be missed (a connection lost for a moment): it only makes sooner what a
//! worker's periodic look would find anyway.

use async_trait::async_trait;

use super::StorageError;

/// What a worker says about itself with each heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPresence {
    /// Unique per process start.
    pub worker_id: String,
    pub pid: u32,
    pub host: String,
    /// Where its HTTP API listens, once it does.
    pub http_address: Option<String>,
    pub started_at_ms: i64,
}

/// What a wake-up is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WakeTopic {
    /// A conversation has an accepted message or an answered confirmation: its subject is
    /// the conversation key; the worker holding (or free to take) it runs it.
    Conversation,
    /// A message was answered (or given up): its subject is the inbox id.
    Answered,
    /// A channel has rows to deliver: its subject is the conversation key.
    Outbox,
    /// A member sent `/cancel`: its subject is `<member id> <conversation key>`; the worker
    /// running the conversation withdraws the question that member is asked there.
    Cancel,
    /// The family changed (its subject: the new version): every worker reads it again, so
    /// what it does unasked (a reminder escalated to the parents) follows at once too.
    Members,
}

impl WakeTopic {
    pub fn as_str(self) -> &'static str {
        match self {
            WakeTopic::Conversation => "conversation",
            WakeTopic::Answered => "answered",
            WakeTopic::Outbox => "outbox",
            WakeTopic::Cancel => "cancel",
            WakeTopic::Members => "members",
        }
    }

    fn parse(text: &str) -> Option<WakeTopic> {
        [
            WakeTopic::Conversation,
            WakeTopic::Answered,
            WakeTopic::Outbox,
            WakeTopic::Cancel,
            WakeTopic::Members,
        ]
        .into_iter()
        .find(|topic| topic.as_str() == text)
    }
}

/// One wake-up: a topic and what it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeUp {
    pub topic: WakeTopic,
    pub subject: String,
}

impl WakeUp {
    pub fn new(topic: WakeTopic, subject: impl Into<String>) -> Self {
        WakeUp {
            topic,
            subject: subject.into(),
        }
    }

    /// As sent between workers: `topic:subject`.
    pub fn to_payload(&self) -> String {
        format!("{}:{}", self.topic.as_str(), self.subject)
    }

    /// The one reader of a payload; `None` for one this hearth does not know (a newer
    /// worker's), which is ignored.
    pub fn from_payload(payload: &str) -> Option<WakeUp> {
        let (topic, subject) = payload.split_once(':')?;
        Some(WakeUp::new(WakeTopic::parse(topic)?, subject))
    }
}

/// The wake-ups of every worker from the moment it was asked for, until the store closes.
pub type WakeUps = futures::stream::BoxStream<'static, WakeUp>;

/// The wake-ups a broadcast `receiver` hears, as a stream ending when its sender is gone.
/// Wake-ups missed by a listener that fell behind are skipped: it finds the same by its
/// periodic look.
pub fn wake_ups_of(receiver: tokio::sync::broadcast::Receiver<WakeUp>) -> WakeUps {
    use tokio::sync::broadcast::error::RecvError;
    Box::pin(futures::stream::unfold(
        receiver,
        |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(wake_up) => return Some((wake_up, receiver)),
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "wake-ups missed; the periodic look finds them");
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    ))
}

/// A worker seen alive, with the leases it holds (sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveWorker {
    pub presence: WorkerPresence,
    pub seen_at_ms: i64,
    pub leases: Vec<String>,
}

#[async_trait]
pub trait Coordination: Send + Sync {
    /// `worker` is alive at `now_ms`: it is listed until `now_ms + ttl_ms`, and every lease
    /// it still holds is kept until then too.
    async fn heartbeat(
        &self,
        worker: &WorkerPresence,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<(), StorageError>;

    /// Take the lease `name` for `worker_id` until `now_ms + ttl_ms`, when nobody holds it,
    /// its holder's time ran out, or `worker_id` holds it already (then it is extended);
    /// whether `worker_id` holds it now. Of workers racing for one lease, one wins.
    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool, StorageError>;

    /// Hand the lease `name` back, when `worker_id` holds it.
    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError>;

    /// A graceful stop: every lease of `worker_id` handed back and the worker unlisted.
    async fn leave(&self, worker_id: &str) -> Result<(), StorageError>;

    /// The worker holding `name` at `now_ms`, if any.
    async fn lease_holder(&self, name: &str, now_ms: i64) -> Result<Option<String>, StorageError>;

    /// The workers alive at `now_ms`, oldest first, each with the leases it holds then.
    async fn live_workers(&self, now_ms: i64) -> Result<Vec<LiveWorker>, StorageError>;

    /// Wake every worker listening (this one too) with `wake_up`.
    async fn wake(&self, wake_up: &WakeUp) -> Result<(), StorageError>;

    /// Listen: the wake-ups from now on.
    async fn wake_ups(&self) -> Result<WakeUps, StorageError>;
}
