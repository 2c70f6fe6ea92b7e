//! Several hearth processes (workers) on one database: which are alive, and which holds
//! each lease. A lease is a name (`channel:telegram`, the one worker that long-polls
//! Telegram; `conversation:<key>`, the one worker running that conversation's turns) held
//! by one worker until it expires; the holder renews all of its leases with its heartbeat,
//! so a worker that dies (kill -9 included) loses them within one lease time, and a worker
//! that stops gracefully hands them back at once (`leave`).
//!
//! Expiry is judged on the database's clock alone, never a worker's: a worker whose clock
//! runs ahead does not find others' leases run out early. Each lease has a generation, a
//! fencing token that grows whenever the lease passes to a holder (another worker, or the
//! same one taking it again after losing it) and is never given twice, even after the
//! lease was handed back. A write made for a lease (`Fence`) is conditional on that
//! generation being the current one, checked in the write itself: a worker that stalled
//! past its lease and wakes finds its writes refused (`StorageError::Fenced`) instead of
//! overwriting what the new holder did. On SQLite, one process owns the database (the
//! instance lock), so its leases live in that process's memory, and the process's clock is
//! the database's.
//!
//! A worker wakes the others (`wake`, PostgreSQL's `NOTIFY`) when it stored something
//! another may have to act on: a message for a conversation another holds, a turn
//! answered that another's HTTP caller waits for, a row to deliver. A wake-up is never
//! stored and may be missed (a connection lost for a moment): it only makes sooner what a
//! worker's periodic look would find anyway.

use async_trait::async_trait;

use serde::{Deserialize, Serialize};

use super::StorageError;
use crate::ids::{ConversationKey, MemberId};

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
    /// A conversation has an answered confirmation (sent after its `Conversation`): its
    /// subject is the conversation key; the worker holding it reads the answered
    /// confirmations and resumes their turns, which a `Conversation` alone does not make
    /// it read (a worker not knowing this topic does on every `Conversation`).
    Confirmed,
    /// A message was answered (or given up): its subject is the inbox id.
    Answered,
    /// A message was answered, with its reply: its subject is an `AnsweredWith` (JSON), from
    /// which a caller waiting on another worker is answered without reading the inbox.
    /// Sent before the message's `Answered` when it fits in a wake-up (a worker that does
    /// not know this topic ignores it and reads the inbox on `Answered`).
    Replied,
    /// A channel has rows to deliver: its subject is the conversation key.
    Outbox,
    /// A member sent `/cancel`: its subject is `<member id> <conversation key>`; the worker
    /// running the conversation withdraws the question that member is asked there.
    Cancel,
    /// The family changed (its subject: the new version): every worker reads it again, so
    /// what it does unasked (a reminder escalated to the parents) follows at once too.
    Members,
    /// Reminders or scheduled tasks were added, snoozed, edited or cancelled: its subject
    /// is the id of the worker that changed them; every other worker's scheduler reads what
    /// is due next from the database.
    Schedules,
}

impl WakeTopic {
    pub fn as_str(self) -> &'static str {
        match self {
            WakeTopic::Conversation => "conversation",
            WakeTopic::Confirmed => "confirmed",
            WakeTopic::Answered => "answered",
            WakeTopic::Replied => "replied",
            WakeTopic::Outbox => "outbox",
            WakeTopic::Cancel => "cancel",
            WakeTopic::Members => "members",
            WakeTopic::Schedules => "schedules",
        }
    }

    fn parse(text: &str) -> Option<WakeTopic> {
        [
            WakeTopic::Conversation,
            WakeTopic::Confirmed,
            WakeTopic::Answered,
            WakeTopic::Replied,
            WakeTopic::Outbox,
            WakeTopic::Cancel,
            WakeTopic::Members,
            WakeTopic::Schedules,
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

/// The longest wake-up payload sent, in bytes: PostgreSQL's `NOTIFY` takes less than 8000.
pub const WAKE_UP_MAX_BYTES: usize = 7_900;

/// What a `WakeTopic::Replied` wake-up says: the message answered, and its reply as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnsweredWith {
    pub inbox_id: String,
    pub conversation: ConversationKey,
    pub member_id: MemberId,
    /// The platform id of the message answered (`Inbound::platform_event_id`).
    pub reply_to_event: Option<String>,
    pub reply: String,
}

impl AnsweredWith {
    /// This answer as a wake-up, when its payload fits in one (`WAKE_UP_MAX_BYTES`).
    pub fn wake_up(&self) -> Option<WakeUp> {
        let subject = serde_json::to_string(self).ok()?;
        let wake_up = WakeUp::new(WakeTopic::Replied, subject);
        (wake_up.to_payload().len() <= WAKE_UP_MAX_BYTES).then_some(wake_up)
    }

    /// The answer a `Replied` wake-up's subject says, if it says one.
    pub fn read(subject: &str) -> Option<AnsweredWith> {
        serde_json::from_str(subject).ok()
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

/// A lease as its holder holds it: the name, and the generation it was taken at. Writes
/// made for it are conditional on that generation still being the lease's (a fencing
/// token): one passed to another holder meanwhile makes them fail with
/// `StorageError::Fenced`, and write nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fence {
    pub lease: String,
    pub generation: i64,
}

impl Fence {
    /// The error of a write refused because this fence's generation is no longer current.
    pub fn refused(&self) -> StorageError {
        StorageError::Fenced {
            lease: self.lease.clone(),
            generation: self.generation,
        }
    }
}

/// A worker's hold on its leases, on its own monotonic clock (`tokio::time::Instant`, which
/// no change of the date moves): every lease it holds is surely still its own until
/// `trusted_until`, a margin before any other worker could find it run out. `None` once
/// that passed without a heartbeat confirming them (the database away, the process
/// stalled): the worker then runs and claims nothing until a heartbeat succeeds again, and
/// `term` has grown, so nothing of the earlier term goes on as if its leases were held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenure {
    pub trusted_until: Option<tokio::time::Instant>,
    /// Grows each time the leases stop being trusted.
    pub term: u64,
}

impl Tenure {
    /// Whether the leases are trusted now.
    pub fn trusted(&self) -> bool {
        self.trusted_until
            .is_some_and(|until| tokio::time::Instant::now() < until)
    }
}

/// A lease's current holder: which worker, at which generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    pub worker_id: String,
    pub generation: i64,
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
    /// `worker` is alive: it is listed for `ttl_ms` from now on the database's clock, and
    /// every lease it holds that has not run out is kept until then too.
    async fn heartbeat(&self, worker: &WorkerPresence, ttl_ms: i64) -> Result<(), StorageError>;

    /// Take the lease `name` for `worker_id` for `ttl_ms` from now on the database's clock,
    /// when nobody holds it, its holder's time ran out, or `worker_id` holds it already;
    /// the generation `worker_id` holds it at now, or `None` when another worker holds it.
    /// Of workers racing for one lease, one wins. `held` is the generation the caller
    /// believes it holds the lease at: the lease is extended at that generation when it is
    /// still `worker_id`'s at it, and every other take starts a new generation (a worker
    /// that took a lease again after losing track of it never reuses the old one).
    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        held: Option<i64>,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StorageError>;

    /// Hand the lease `name` back, when `worker_id` holds it.
    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError>;

    /// A graceful stop: every lease of `worker_id` handed back and the worker unlisted.
    async fn leave(&self, worker_id: &str) -> Result<(), StorageError>;

    /// Who holds `name` now, if anyone.
    async fn lease_holder(&self, name: &str) -> Result<Option<LeaseHolder>, StorageError>;

    /// The workers alive now, oldest first, each with the leases it holds.
    async fn live_workers(&self) -> Result<Vec<LiveWorker>, StorageError>;

    /// Wake every worker listening (this one too) with `wake_up`.
    async fn wake(&self, wake_up: &WakeUp) -> Result<(), StorageError>;

    /// Wake every worker listening with each of `wake_ups`, in order: one round trip to
    /// the database where it can. The same wake-up twice in one batch may be heard once.
    async fn wake_all(&self, wake_ups: &[WakeUp]) -> Result<(), StorageError> {
        for wake_up in wake_ups {
            self.wake(wake_up).await?;
        }
        Ok(())
    }

    /// Listen: the wake-ups from now on.
    async fn wake_ups(&self) -> Result<WakeUps, StorageError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(reply: &str) -> AnsweredWith {
        AnsweredWith {
            inbox_id: "m-1".into(),
            conversation: "http:alice/s1".parse().unwrap(),
            member_id: "alice".parse().unwrap(),
            reply_to_event: Some("alice/7".into()),
            reply: reply.into(),
        }
    }

    #[test]
    fn an_answer_reads_back_from_its_wake_up_as_sent() {
        let sent = answered("Done: milk: on the list.\n\"quoted\" ✓");
        let wake_up = sent.wake_up().expect("a short reply fits");
        let heard = WakeUp::from_payload(&wake_up.to_payload()).unwrap();
        assert_eq!(heard.topic, WakeTopic::Replied);
        assert_eq!(AnsweredWith::read(&heard.subject), Some(sent));
        assert_eq!(AnsweredWith::read("not json"), None);
    }

    #[test]
    fn an_answer_too_long_for_a_wake_up_is_not_sent_in_one() {
        assert!(answered(&"x".repeat(WAKE_UP_MAX_BYTES)).wake_up().is_none());
        // Counted in bytes, as PostgreSQL counts a payload.
        assert!(
            answered(&"é".repeat(WAKE_UP_MAX_BYTES / 2))
                .wake_up()
                .is_none()
        );
        assert!(
            answered(&"é".repeat(WAKE_UP_MAX_BYTES / 4))
                .wake_up()
                .is_some()
        );
    }
}
