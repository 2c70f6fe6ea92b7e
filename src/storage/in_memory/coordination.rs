//! `Coordination` in one process's memory: the in-memory store's, and SQLite's, whose
//! database only one process may open (the instance lock). The process's clock
//! (`clock::now_ms`) is the database's here. The in-memory store and the SQLite store
//! check their fenced writes against it (`check`), so a stale generation is refused on
//! every adapter alike.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::clock::now_ms;
use crate::ports::{
    Coordination, Fence, LeaseHolder, LiveWorker, StorageError, WakeUp, WakeUps, WorkerPresence,
};

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

/// One lease: who holds it, at which generation, until when.
struct Held {
    worker_id: String,
    generation: i64,
    expires_at_ms: i64,
}

#[derive(Default)]
struct State {
    /// By worker id: what it said, when it was last seen, until when it is listed.
    workers: BTreeMap<String, (WorkerPresence, i64, i64)>,
    leases: BTreeMap<String, Held>,
    /// The last generation given: each new tenure of any lease gets the next one.
    last_generation: i64,
}

impl InMemoryCoordination {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `Ok` when `fence` (if any) is its lease's current generation: what a fenced write
    /// of the SQLite store checks just before it writes (in its one writer, in this one
    /// process, where only this process takes leases).
    pub fn check(&self, fence: Option<&Fence>) -> Result<(), StorageError> {
        self.hold(fence).map(drop)
    }

    /// `check`, keeping the leases as they are (no take nor release) until the guard is
    /// dropped: the in-memory store writes while holding it, so a check and its write are
    /// one step.
    pub fn hold(
        &self,
        fence: Option<&Fence>,
    ) -> Result<Option<std::sync::MutexGuard<'_, impl Sized>>, StorageError> {
        let Some(fence) = fence else {
            return Ok(None);
        };
        let state = self.state();
        let current = state
            .leases
            .get(&fence.lease)
            .is_some_and(|held| held.generation == fence.generation);
        if current {
            Ok(Some(state))
        } else {
            Err(fence.refused())
        }
    }
}

#[async_trait]
impl Coordination for InMemoryCoordination {
    async fn heartbeat(&self, worker: &WorkerPresence, ttl_ms: i64) -> Result<(), StorageError> {
        let now = now_ms();
        let until = now.saturating_add(ttl_ms);
        let mut state = self.state();
        state
            .workers
            .insert(worker.worker_id.clone(), (worker.clone(), now, until));
        for held in state.leases.values_mut() {
            if held.worker_id == worker.worker_id && held.expires_at_ms > now {
                held.expires_at_ms = until;
            }
        }
        Ok(())
    }

    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        held: Option<i64>,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StorageError> {
        let now = now_ms();
        let until = now.saturating_add(ttl_ms);
        let mut state = self.state();
        let kept = match state.leases.get(name) {
            Some(lease) if lease.worker_id == worker_id => {
                (Some(lease.generation) == held).then_some(lease.generation)
            }
            Some(lease) if lease.expires_at_ms > now => return Ok(None),
            _ => None,
        };
        let generation = match kept {
            Some(generation) => generation,
            None => {
                state.last_generation += 1;
                state.last_generation
            }
        };
        state.leases.insert(
            name.to_string(),
            Held {
                worker_id: worker_id.to_string(),
                generation,
                expires_at_ms: until,
            },
        );
        Ok(Some(generation))
    }

    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError> {
        let mut state = self.state();
        if state
            .leases
            .get(name)
            .is_some_and(|held| held.worker_id == worker_id)
        {
            state.leases.remove(name);
        }
        Ok(())
    }

    async fn leave(&self, worker_id: &str) -> Result<(), StorageError> {
        let mut state = self.state();
        state.leases.retain(|_, held| held.worker_id != worker_id);
        state.workers.remove(worker_id);
        Ok(())
    }

    async fn lease_holder(&self, name: &str) -> Result<Option<LeaseHolder>, StorageError> {
        let now = now_ms();
        Ok(self
            .state()
            .leases
            .get(name)
            .filter(|held| held.expires_at_ms > now)
            .map(|held| LeaseHolder {
                worker_id: held.worker_id.clone(),
                generation: held.generation,
            }))
    }

    async fn live_workers(&self) -> Result<Vec<LiveWorker>, StorageError> {
        let now = now_ms();
        let state = self.state();
        let mut live: Vec<LiveWorker> = state
            .workers
            .values()
            .filter(|(_, _, until)| *until > now)
            .map(|(presence, seen_at_ms, _)| LiveWorker {
                presence: presence.clone(),
                seen_at_ms: *seen_at_ms,
                leases: state
                    .leases
                    .iter()
                    .filter(|(_, held)| {
                        held.worker_id == presence.worker_id && held.expires_at_ms > now
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
