//! `Coordination` in one process's memory: the in-memory store's, and SQLite's, whose
//! database only one process may open (the instance lock).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::ports::{Coordination, LiveWorker, StorageError, WakeUp, WakeUps, WorkerPresence};

/// Wake-ups not yet taken by a slow listener before it misses some (it looks anyway).
const WAKE_UPS_BUFFERED: usize = 1024;

pub struct InMemoryCoordination {
    state: Mutex<State>,
    wake_ups: tokio::sync::broadcast::Sender<WakeUp>,
}

impl Default for InMemoryCoordination {
    fn default() -> Self {
        InMemoryCoordination {
            state: Mutex::default(),
            wake_ups: tokio::sync::broadcast::channel(WAKE_UPS_BUFFERED).0,
        }
    }
}

#[derive(Default)]
struct State {
    /// By worker id: what it said, when it was last seen, until when it is listed.
    workers: BTreeMap<String, (WorkerPresence, i64, i64)>,
    /// By lease name: holder and expiry.
    leases: BTreeMap<String, (String, i64)>,
}

impl InMemoryCoordination {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Coordination for InMemoryCoordination {
    async fn heartbeat(
        &self,
        worker: &WorkerPresence,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<(), StorageError> {
        let until = now_ms.saturating_add(ttl_ms);
        let mut state = self.state();
        state
            .workers
            .insert(worker.worker_id.clone(), (worker.clone(), now_ms, until));
        for (holder, expires_at_ms) in state.leases.values_mut() {
            if *holder == worker.worker_id {
                *expires_at_ms = until;
            }
        }
        Ok(())
    }

    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool, StorageError> {
        let mut state = self.state();
        let free = match state.leases.get(name) {
            Some((holder, expires_at_ms)) => holder == worker_id || *expires_at_ms <= now_ms,
            None => true,
        };
        if free {
            state.leases.insert(
                name.to_string(),
                (worker_id.to_string(), now_ms.saturating_add(ttl_ms)),
            );
        }
        Ok(free)
    }

    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError> {
        let mut state = self.state();
        if state
            .leases
            .get(name)
            .is_some_and(|(holder, _)| holder == worker_id)
        {
            state.leases.remove(name);
        }
        Ok(())
    }

    async fn leave(&self, worker_id: &str) -> Result<(), StorageError> {
        let mut state = self.state();
        state.leases.retain(|_, (holder, _)| holder != worker_id);
        state.workers.remove(worker_id);
        Ok(())
    }

    async fn lease_holder(&self, name: &str, now_ms: i64) -> Result<Option<String>, StorageError> {
        Ok(self
            .state()
            .leases
            .get(name)
            .filter(|(_, expires_at_ms)| *expires_at_ms > now_ms)
            .map(|(holder, _)| holder.clone()))
    }

    async fn live_workers(&self, now_ms: i64) -> Result<Vec<LiveWorker>, StorageError> {
        let state = self.state();
        let mut live: Vec<LiveWorker> = state
            .workers
            .values()
            .filter(|(_, _, until)| *until > now_ms)
            .map(|(presence, seen_at_ms, _)| LiveWorker {
                presence: presence.clone(),
                seen_at_ms: *seen_at_ms,
                leases: state
                    .leases
                    .iter()
                    .filter(|(_, (holder, expires_at_ms))| {
                        *holder == presence.worker_id && *expires_at_ms > now_ms
                    })
                    .map(|(name, _)| name.clone())
                    .collect(),
            })
            .collect();
        live.sort_by(|a, b| {
            (a.presence.started_at_ms, &a.presence.worker_id)
                .cmp(&(b.presence.started_at_ms, &b.presence.worker_id))
        });
        Ok(live)
    }

    async fn wake(&self, wake_up: &WakeUp) -> Result<(), StorageError> {
        // Nobody listening is fine: there is nobody to wake.
        let _ = self.wake_ups.send(wake_up.clone());
        Ok(())
    }

    async fn wake_ups(&self) -> Result<WakeUps, StorageError> {
        Ok(crate::ports::wake_ups_of(self.wake_ups.subscribe()))
    }
}
