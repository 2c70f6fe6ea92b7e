//! A worker's trust in its leases on tokio's paused clock: a worker whose heartbeats hang
//! stops trusting them `LEASE_MARGIN` before they run out on the database, so its turns
//! stop before any other worker can take them; the worker that takes them then holds a new
//! generation, which fences the stalled one's writes; and a heartbeat that succeeds again
//! starts a new term, in which nothing held before is trusted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::{Instant, advance};

use super::{LEASE_MARGIN, LEASE_TIME, Worker, renewed};
use crate::clock::follow_tokio_clock;
use crate::ports::{
    Coordination, Fence, LeaseHolder, LiveWorker, StorageError, Tenure, WakeUp, WakeUps,
    WorkerPresence,
};
use crate::readiness::Readiness;
use crate::storage::in_memory::coordination::InMemoryCoordination;
use crate::turn::TurnLease;

/// The in-memory coordination, whose heartbeats can be made to hang (the database away).
#[derive(Default)]
struct Stalling {
    inner: InMemoryCoordination,
    hang: AtomicBool,
}

#[async_trait]
impl Coordination for Stalling {
    async fn heartbeat(&self, worker: &WorkerPresence, ttl_ms: i64) -> Result<(), StorageError> {
        if self.hang.load(Ordering::SeqCst) {
            futures::future::pending::<()>().await;
        }
        self.inner.heartbeat(worker, ttl_ms).await
    }
    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        held: Option<i64>,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StorageError> {
        self.inner.take_lease(name, worker_id, held, ttl_ms).await
    }
    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError> {
        self.inner.release_lease(name, worker_id).await
    }
    async fn leave(&self, worker_id: &str) -> Result<(), StorageError> {
        self.inner.leave(worker_id).await
    }
    async fn lease_holder(&self, name: &str) -> Result<Option<LeaseHolder>, StorageError> {
        self.inner.lease_holder(name).await
    }
    async fn live_workers(&self) -> Result<Vec<LiveWorker>, StorageError> {
        self.inner.live_workers().await
    }
    async fn wake(&self, wake_up: &WakeUp) -> Result<(), StorageError> {
        self.inner.wake(wake_up).await
    }
    async fn wake_ups(&self) -> Result<WakeUps, StorageError> {
        self.inner.wake_ups().await
    }
}

const LEASE: &str = "conversation:http:alice/s1";

async fn joined(coordination: &Arc<Stalling>) -> Worker {
    Worker::join(coordination.clone(), Arc::new(Readiness::default()))
        .await
        .unwrap()
}

/// Whether `lease.lost()` has resolved (polled once, without waiting).
async fn lost(lease: &TurnLease) -> bool {
    tokio::time::timeout(Duration::ZERO, lease.lost())
        .await
        .is_ok()
}

#[tokio::test(start_paused = true)]
async fn a_worker_whose_heartbeats_hang_stops_its_turns_before_another_can_take_its_leases() {
    let _clock = follow_tokio_clock();
    let coordination = Arc::new(Stalling::default());
    let worker = joined(&coordination).await;
    let joined_at = Instant::now();
    let generation = worker.take(LEASE, None).await.unwrap().unwrap();
    let term = worker.tenure().borrow().term;
    let lease = TurnLease::new(
        Fence {
            lease: LEASE.into(),
            generation,
        },
        worker.tenure(),
        term,
    );
    // From now on the database does not answer this worker's heartbeats.
    coordination.hang.store(true, Ordering::SeqCst);
    advance(LEASE_TIME - LEASE_MARGIN - Duration::from_millis(100)).await;
    assert!(
        lease.trusted(),
        "trusted until the margin before it runs out"
    );
    assert!(!lost(&lease).await);

    advance(Duration::from_millis(200)).await;
    tokio::task::yield_now().await;
    assert!(
        !lease.trusted(),
        "no heartbeat for the lease time minus the margin"
    );
    assert!(lost(&lease).await, "a turn waiting on the model stops");
    let tenure = *worker.tenure().borrow();
    assert_eq!((tenure.trusted_until, tenure.term), (None, term + 1));
    // It stopped before the lease ran out on the database: nobody could take it yet.
    assert_eq!(
        coordination
            .take_lease(LEASE, "other", None, 10_000)
            .await
            .unwrap(),
        None
    );
    assert!(Instant::now() < joined_at + LEASE_TIME);

    // Once it ran out, another worker takes it at a new generation, which fences the
    // stalled worker's writes.
    advance(LEASE_MARGIN).await;
    let taken = coordination
        .take_lease(LEASE, "other", None, 10_000)
        .await
        .unwrap()
        .expect("the lease ran out");
    assert!(taken > generation);
    assert!(matches!(
        coordination.inner.check(Some(&lease.fence)),
        Err(StorageError::Fenced { .. })
    ));

    // The database answers again: trusted again, in the new term only.
    coordination.hang.store(false, Ordering::SeqCst);
    advance(super::HEARTBEAT_EVERY + LEASE_TIME).await;
    tokio::task::yield_now().await;
    let tenure = *worker.tenure().borrow();
    assert!(tenure.trusted(), "{tenure:?}");
    assert_eq!(tenure.term, term + 1);
    assert!(!lease.trusted(), "what it held before is not trusted again");
}

#[tokio::test(start_paused = true)]
async fn heartbeats_in_time_keep_the_leases_trusted() {
    let _clock = follow_tokio_clock();
    let coordination = Arc::new(Stalling::default());
    let worker = joined(&coordination).await;
    let generation = worker.take(LEASE, None).await.unwrap().unwrap();
    let tenure = worker.tenure();
    let term = tenure.borrow().term;
    let lease = TurnLease::new(
        Fence {
            lease: LEASE.into(),
            generation,
        },
        tenure,
        term,
    );
    for _ in 0..30 {
        advance(Duration::from_secs(1)).await;
        tokio::task::yield_now().await;
        assert!(lease.trusted());
    }
    assert!(!lost(&lease).await);
    // The heartbeats kept the lease on the database too.
    assert_eq!(
        coordination
            .take_lease(LEASE, "other", None, 10_000)
            .await
            .unwrap(),
        None
    );
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_answered_after_the_leases_could_run_out_starts_a_new_term() {
    let start = Instant::now();
    let tenure = tokio::sync::watch::Sender::new(Tenure {
        trusted_until: Some(start + LEASE_TIME - LEASE_MARGIN),
        term: 4,
    });
    // Sent in time, answered in time: trusted for longer, same term.
    renewed(
        &tenure,
        start + Duration::from_secs(2),
        start + Duration::from_secs(3),
    );
    assert_eq!(
        *tenure.borrow(),
        Tenure {
            trusted_until: Some(start + Duration::from_secs(2) + LEASE_TIME - LEASE_MARGIN),
            term: 4,
        }
    );
    // Sent in time but answered after the leases it renews could have run out (the
    // database may have seen it late): nothing held before is trusted.
    let sent = start + Duration::from_secs(4);
    renewed(&tenure, sent, start + Duration::from_secs(2) + LEASE_TIME);
    assert_eq!(
        *tenure.borrow(),
        Tenure {
            trusted_until: Some(sent + LEASE_TIME - LEASE_MARGIN),
            term: 5,
        }
    );
}
