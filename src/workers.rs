//! This process as one worker of its database (`ports::Coordination`): it beats every
//! `HEARTBEAT_EVERY`, which lists it and keeps its leases for `LEASE_TIME`, tells
//! `/readyz` which workers are alive and what each holds, and hands every lease back when
//! it stops. A worker killed outright loses its leases when `LEASE_TIME` runs out.
//!
//! On PostgreSQL the workers share the family: the queue runs each conversation on one
//! worker at a time (`conversation:<key>` leases, `request_queue/leases.rs`), and each chat
//! platform is received and delivered by one (`channel:<platform>`,
//! `channels/core/leader.rs`). On SQLite the instance lock keeps a second process away.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::now_ms;
use crate::ports::{Coordination, LiveWorker, StorageError, WakeUp, WorkerPresence};
use crate::readiness::Readiness;

/// How long a lease lasts without a heartbeat: a dead worker's leases move on after it.
pub const LEASE_TIME: Duration = Duration::from_secs(10);
/// How often a worker beats: several beats fit in one lease time, so a slow database
/// answer or two never lose a living worker its leases.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);

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
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.beating.abort();
        self.listening.abort();
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
        coordination
            .heartbeat(&presence, now_ms(), lease_ms())
            .await?;
        tracing::info!(worker_id = %presence.worker_id, "joined the database's workers");
        let presence = Arc::new(Mutex::new(presence));
        let beating = tokio::spawn(beat(presence.clone(), coordination.clone(), readiness));
        let heard = coordination.wake_ups().await?;
        let (wake_ups, _) = tokio::sync::broadcast::channel(WAKE_UPS_BUFFERED);
        let listening = tokio::spawn(hand_on(heard, wake_ups.clone()));
        Ok(Worker {
            presence,
            coordination,
            beating,
            wake_ups,
            listening,
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
            if let Err(error) = coordination
                .heartbeat(&presence, now_ms(), lease_ms())
                .await
            {
                tracing::warn!(%error, "heartbeat failed");
            }
        });
    }

    /// Take the lease `name` (or extend it); whether this worker holds it.
    pub async fn take(&self, name: &str) -> Result<bool, StorageError> {
        self.coordination
            .take_lease(name, &self.worker_id(), now_ms(), lease_ms())
            .await
    }

    /// Hand the lease `name` back, when this worker holds it.
    pub async fn release(&self, name: &str) -> Result<(), StorageError> {
        self.coordination
            .release_lease(name, &self.worker_id())
            .await
    }

    /// Wake every worker of the database, this one too. A wake-up that cannot be sent is
    /// logged: the periodic looks find the same.
    pub async fn wake(&self, wake_up: WakeUp) {
        if let Err(error) = self.coordination.wake(&wake_up).await {
            tracing::warn!(%error, topic = wake_up.topic.as_str(), "wake-up not sent");
        }
    }

    /// The wake-ups heard from now on.
    pub fn wake_ups(&self) -> crate::ports::WakeUps {
        crate::ports::wake_ups_of(self.wake_ups.subscribe())
    }

    /// A graceful stop: no more beats, every lease handed back, unlisted.
    pub async fn leave(&self) {
        self.beating.abort();
        self.listening.abort();
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
) {
    let mut ticks = tokio::time::interval(HEARTBEAT_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let current = presence
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let now = now_ms();
        let beaten = coordination.heartbeat(&current, now, lease_ms()).await;
        let listed = match beaten {
            Ok(()) => coordination.live_workers(now).await,
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
