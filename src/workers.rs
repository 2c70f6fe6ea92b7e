//! This process as one worker of its database (`ports::Coordination`): it beats every
//! `HEARTBEAT_EVERY`, which lists it and keeps its leases for `LEASE_TIME` on the
//! database's clock, tells `/readyz` which workers are alive and what each holds, and hands
//! every lease back when it stops. A worker killed outright loses its leases when
//! `LEASE_TIME` runs out.
//!
//! It trusts its leases only as long as a heartbeat confirmed them, measured on its own
//! monotonic clock (`Tenure`): a beat sent at `t` and answered keeps them until
//! `t + LEASE_TIME` on the database, so they are trusted until `LEASE_MARGIN` before that.
//! When that passes without a newer beat (the database away, the process stalled), the
//! worker stops trusting them before any other worker can take them: its turns stop and it
//! claims nothing until a beat succeeds again (a new `term`). A beat answered after its
//! leases could have run out confirms nothing held before it. Whatever slips through (a
//! stall between a check and the write after it) is refused by the database: writes made
//! for a lease are fenced by its generation (`ports::Fence`).
//!
//! Wake-ups are sent in batches: those asked for while one is being sent go together in
//! the next statement.
//!
//! On PostgreSQL the workers share the family: the queue runs each conversation on one
//! worker at a time (`conversation:<key>` leases, `request_queue/leases.rs`), and each chat
//! platform is received and delivered by one (`channel:<platform>`,
//! `channels/core/leader.rs`). On SQLite the instance lock keeps a second process away.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::clock::now_ms;
use crate::ports::{Coordination, LiveWorker, StorageError, Tenure, WakeUp, WorkerPresence};
use crate::readiness::Readiness;

/// How long a lease lasts without a heartbeat: a dead worker's leases move on after it.
pub const LEASE_TIME: Duration = Duration::from_secs(10);
/// How often a worker beats: several beats fit in one lease time, so a slow database
/// answer or two never lose a living worker its leases.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
/// How long before its leases could run out a worker stops trusting them: room for the
/// clocks' rates to differ and for the stop itself.
pub const LEASE_MARGIN: Duration = Duration::from_secs(2);

/// Wake-ups a slow part of this worker may fall behind by before it misses some (it then
/// finds the same by its periodic look).
const WAKE_UPS_BUFFERED: usize = 4096;

fn lease_ms() -> i64 {
    i64::try_from(LEASE_TIME.as_millis()).unwrap_or(i64::MAX)
}

/// This process's place among the workers; leaves (hands its leases back) on `leave`,
/// and stops beating when dropped.
pub struct Worker {
    presence: Arc<Mutex<WorkerPresence>>,
    coordination: Arc<dyn Coordination>,
    beating: tokio::task::JoinHandle<()>,
    /// Every wake-up of the database's workers, heard on one connection and handed to
    /// each part of this worker that subscribed.
    wake_ups: tokio::sync::broadcast::Sender<WakeUp>,
    listening: tokio::task::JoinHandle<()>,
    /// Until when its leases are trusted, on the monotonic clock.
    tenure: Arc<watch::Sender<Tenure>>,
    watching: tokio::task::JoinHandle<()>,
    /// Wake-ups to send, batched by `send_wake_ups`.
    waking: mpsc::UnboundedSender<WakeUp>,
    sending: tokio::task::JoinHandle<()>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.beating.abort();
        self.listening.abort();
        self.watching.abort();
        self.sending.abort();
    }
}

impl Worker {
    /// Join the workers of the database: listed at once, then beating every
    /// `HEARTBEAT_EVERY`; `/readyz` shows the workers under `workers`.
    pub async fn join(
        coordination: Arc<dyn Coordination>,
        readiness: Arc<Readiness>,
    ) -> Result<Worker, StorageError> {
        let host = tokio::fs::read_to_string("/proc/sys/kernel/hostname")
            .await
            .map(|name| name.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let presence = WorkerPresence {
            worker_id: uuid::Uuid::now_v7().to_string(),
            pid: std::process::id(),
            host,
            http_address: None,
            started_at_ms: now_ms(),
        };
        let sent = Instant::now();
        coordination.heartbeat(&presence, lease_ms()).await?;
        let tenure = Arc::new(watch::Sender::new(Tenure {
            trusted_until: Some(trusted_after(sent)),
            term: 0,
        }));
        tracing::info!(worker_id = %presence.worker_id, "joined the database's workers");
        let presence = Arc::new(Mutex::new(presence));
        let beating = tokio::spawn(beat(
            presence.clone(),
            coordination.clone(),
            readiness,
            tenure.clone(),
        ));
        let watching = tokio::spawn(watch_tenure(tenure.clone()));
        let heard = coordination.wake_ups().await?;
        let (wake_ups, _) = tokio::sync::broadcast::channel(WAKE_UPS_BUFFERED);
        let listening = tokio::spawn(hand_on(heard, wake_ups.clone()));
        let (waking, to_send) = mpsc::unbounded_channel();
        let sending = tokio::spawn(send_wake_ups(coordination.clone(), to_send));
        Ok(Worker {
            presence,
            coordination,
            beating,
            wake_ups,
            listening,
            tenure,
            watching,
            waking,
            sending,
        })
    }

    pub fn worker_id(&self) -> String {
        self.presence().worker_id
    }

    fn presence(&self) -> WorkerPresence {
        self.presence
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Where this worker's HTTP API listens: said at once with a beat of its own, so
    /// the commands beside it (`hearth web-link`) find it from the start.
    pub fn record_http_address(&self, address: std::net::SocketAddr) {
        let presence = {
            let mut presence = self
                .presence
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            presence.http_address = Some(address.to_string());
            presence.clone()
        };
        let coordination = self.coordination.clone();
        tokio::spawn(async move {
            if let Err(error) = coordination.heartbeat(&presence, lease_ms()).await {
                tracing::warn!(%error, "heartbeat failed");
            }
        });
    }

    /// Take the lease `name`, or extend it when this worker holds it at generation `held`;
    /// the generation it holds it at now, `None` when another worker holds it.
    pub async fn take(&self, name: &str, held: Option<i64>) -> Result<Option<i64>, StorageError> {
        self.coordination
            .take_lease(name, &self.worker_id(), held, lease_ms())
            .await
    }

    /// How far this worker's leases are trusted, from now on as it changes.
    pub fn tenure(&self) -> watch::Receiver<Tenure> {
        self.tenure.subscribe()
    }

    /// The changes that matter of this worker's trust in its leases, from now on: a new
    /// term (what it held is not trusted any more), or trust lost or regained (not each
    /// heartbeat that only moves it on).
    pub fn tenure_changes(&self) -> futures::stream::BoxStream<'static, Tenure> {
        let receiver = self.tenure.subscribe();
        let last = *receiver.borrow();
        Box::pin(futures::stream::unfold(
            (receiver, last),
            |(mut receiver, last)| async move {
                loop {
                    receiver.changed().await.ok()?;
                    let now = *receiver.borrow_and_update();
                    let trust_changed = now.trusted_until.is_some() != last.trusted_until.is_some();
                    if now.term != last.term || trust_changed {
                        return Some((now, (receiver, now)));
                    }
                }
            },
        ))
    }

    /// Hand the lease `name` back, when this worker holds it.
    pub async fn release(&self, name: &str) -> Result<(), StorageError> {
        self.coordination
            .release_lease(name, &self.worker_id())
            .await
    }

    /// Wake every worker of the database, this one too, in the next batch of wake-ups. A
    /// wake-up that cannot be sent is logged: the periodic looks find the same.
    pub async fn wake(&self, wake_up: WakeUp) {
        // Closed only when the worker is gone: nobody is left to wake.
        let _ = self.waking.send(wake_up);
    }

    /// The wake-ups heard from now on.
    pub fn wake_ups(&self) -> crate::ports::WakeUps {
        crate::ports::wake_ups_of(self.wake_ups.subscribe())
    }

    /// A graceful stop: no more beats, every lease handed back, unlisted.
    pub async fn leave(&self) {
        self.beating.abort();
        self.listening.abort();
        self.sending.abort();
        let worker_id = self.worker_id();
        match self.coordination.leave(&worker_id).await {
            Ok(()) => tracing::info!(%worker_id, "left the database's workers"),
            Err(error) => {
                tracing::warn!(%worker_id, %error, "leases not handed back; they run out")
            }
        }
    }
}

/// One worker in words: id, process, address, leases.
pub fn describe(worker: &LiveWorker) -> String {
    let presence = &worker.presence;
    let mut text = format!(
        "worker {} (pid {} on {}",
        presence.worker_id, presence.pid, presence.host
    );
    if let Some(address) = &presence.http_address {
        text.push_str(&format!(", http api at {address}"));
    }
    text.push(')');
    let conversations = worker
        .leases
        .iter()
        .filter(|lease| lease.starts_with("conversation:"))
        .count();
    let mut holds: Vec<String> = worker
        .leases
        .iter()
        .filter(|lease| !lease.starts_with("conversation:"))
        .cloned()
        .collect();
    if conversations > 0 {
        holds.push(format!("{conversations} conversations"));
    }
    if !holds.is_empty() {
        text.push_str(&format!(" holds {}", holds.join(", ")));
    }
    text
}

async fn beat(
    presence: Arc<Mutex<WorkerPresence>>,
    coordination: Arc<dyn Coordination>,
    readiness: Arc<Readiness>,
    tenure: Arc<watch::Sender<Tenure>>,
) {
    let mut ticks = tokio::time::interval(HEARTBEAT_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let current = presence
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let sent = Instant::now();
        let beaten = tokio::time::timeout(LEASE_TIME, coordination.heartbeat(&current, lease_ms()))
            .await
            .unwrap_or_else(|_| {
                Err(StorageError::Database(format!(
                    "the heartbeat had no answer within {LEASE_TIME:?}"
                )))
            });
        if beaten.is_ok() {
            renewed(&tenure, sent, Instant::now());
        }
        let listed = match beaten {
            Ok(()) => coordination.live_workers().await,
            Err(error) => Err(error),
        };
        match listed {
            Ok(live) => {
                let words: Vec<String> = live.iter().map(describe).collect();
                readiness.set("workers", true, &words.join("; "));
            }
            Err(error) => {
                tracing::warn!(%error, "heartbeat failed");
                readiness.set(
                    "workers",
                    false,
                    &format!("heartbeat failed; leases run out unless it recovers: {error}"),
                );
            }
        }
    }
}

/// Until when leases confirmed by a heartbeat sent at `sent` are trusted: the database
/// keeps them until at least `sent + LEASE_TIME` on its clock.
fn trusted_after(sent: Instant) -> Instant {
    sent + LEASE_TIME.saturating_sub(LEASE_MARGIN)
}

/// A heartbeat sent at `sent` succeeded, answered at `answered`. Answered after the leases
/// it renews could have run out (`sent` of the last one plus `LEASE_TIME`), it may have
/// reached the database too late to keep them: it starts a new term.
pub(crate) fn renewed(tenure: &watch::Sender<Tenure>, sent: Instant, answered: Instant) {
    tenure.send_modify(|tenure| {
        if let Some(until) = tenure.trusted_until
            && answered >= until + LEASE_MARGIN
        {
            tenure.term += 1;
            tracing::warn!(
                term = tenure.term,
                "a heartbeat answered after this worker's leases could have run out; what it held is not trusted"
            );
        }
        tenure.trusted_until = Some(trusted_after(sent));
    });
}

/// Stop trusting the leases when their time passes without a heartbeat renewing them.
pub(crate) async fn watch_tenure(tenure: Arc<watch::Sender<Tenure>>) {
    let mut seen = tenure.subscribe();
    loop {
        let until = seen.borrow_and_update().trusted_until;
        let Some(until) = until else {
            if seen.changed().await.is_err() {
                return;
            }
            continue;
        };
        tokio::select! {
            () = tokio::time::sleep_until(until) => {
                let lapsed = tenure.send_if_modified(|tenure| {
                    if tenure.trusted_until != Some(until) {
                        return false;
                    }
                    tenure.trusted_until = None;
                    tenure.term += 1;
                    true
                });
                if lapsed {
                    tracing::warn!(
                        "no heartbeat succeeded within the lease time: this worker's turns stop and it claims nothing until one does"
                    );
                }
            }
            changed = seen.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

/// Send the wake-ups asked for, each batch in one statement: those asked for while one is
/// sent go together in the next.
async fn send_wake_ups(
    coordination: Arc<dyn Coordination>,
    mut to_send: mpsc::UnboundedReceiver<WakeUp>,
) {
    let mut batch = Vec::new();
    while to_send.recv_many(&mut batch, 256).await > 0 {
        if let Err(error) = coordination.wake_all(&batch).await {
            tracing::warn!(%error, count = batch.len(), "wake-ups not sent; the periodic looks find the same");
        }
        batch.clear();
    }
}

/// Hand each wake-up heard on to this worker's subscribers.
async fn hand_on(
    mut heard: crate::ports::WakeUps,
    subscribers: tokio::sync::broadcast::Sender<WakeUp>,
) {
    use futures::StreamExt;
    while let Some(wake_up) = heard.next().await {
        // Nobody subscribed yet is fine: nobody of this worker waits for it.
        let _ = subscribers.send(wake_up);
    }
    tracing::debug!("no more wake-ups: the database closed");
}

#[cfg(test)]
#[path = "workers_tests.rs"]
mod tests;
