//! `Coordination` on PostgreSQL: tables `workers` and `leases`, every time read from the
//! database's clock (`hearth_now_ms()`, migration 0025), never a worker's. Taking a lease
//! is one upsert that only overwrites a lease that is the taker's own or has run out, so
//! of workers racing for it exactly one gets a row back; a new tenure takes the next
//! generation of the sequence `lease_generations`.
//!
//! A fenced write (`hold_fence`, or the same condition inside one statement) locks its lease's row `FOR SHARE` while it
//! checks the generation, in the statement or transaction that writes: a take by another
//! worker (an `UPDATE` of that row) waits for the write to commit, so the new holder's
//! reads, which come after its take, see it; and a write after the take finds the new
//! generation and writes nothing.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{PostgresStore, database_error};
use crate::ports::{
    Coordination, Fence, LeaseHolder, LiveWorker, StorageError, WakeUp, WakeUps, WorkerPresence,
};
use crate::storage::sql::{SqlBackend, SqlConnection, SqlRow, sql};

/// The one `LISTEN`/`NOTIFY` channel of hearth's wake-ups.
pub(crate) const WAKE_CHANNEL: &str = "hearth_wake";

/// In the caller's transaction: `Ok` when `fence` (if any) is its lease's current
/// generation, its row locked until the transaction ends; else `StorageError::Fenced`.
pub(super) async fn hold_fence(
    connection: &mut PgConnection,
    fence: Option<&Fence>,
) -> Result<(), StorageError> {
    let Some(fence) = fence else {
        return Ok(());
    };
    let held = sql("SELECT 1 FROM leases WHERE name = $1 AND generation = $2 FOR SHARE");
    match connection
        .fetch_optional(held.bind(&fence.lease).bind(fence.generation))
        .await?
    {
        Some(_) => Ok(()),
        None => Err(fence.refused()),
    }
}

/// The lease name and generation to bind for a fenced statement (`NULL`s: unfenced).
pub(super) fn fence_binds(fence: Option<&Fence>) -> (Option<&str>, Option<i64>) {
    (
        fence.map(|fence| fence.lease.as_str()),
        fence.map(|fence| fence.generation),
    )
}

#[async_trait]
impl Coordination for PostgresStore {
    async fn heartbeat(&self, worker: &WorkerPresence, ttl_ms: i64) -> Result<(), StorageError> {
        // One statement: the worker listed and its leases that have not run out kept.
        let seen = sql(
            "WITH seen AS (INSERT INTO workers (id, pid, host, http_address, started_at_ms, \
             seen_at_ms, expires_at_ms) \
             VALUES ($1, $2, $3, $4, $5, hearth_now_ms(), hearth_now_ms() + $6) \
             ON CONFLICT (id) DO UPDATE SET http_address = excluded.http_address, \
             seen_at_ms = excluded.seen_at_ms, expires_at_ms = excluded.expires_at_ms \
             RETURNING expires_at_ms) \
             UPDATE leases SET expires_at_ms = (SELECT expires_at_ms FROM seen) \
             WHERE worker_id = $1 AND expires_at_ms > hearth_now_ms()",
        )
        .bind(&worker.worker_id)
        .bind(i64::from(worker.pid))
        .bind(&worker.host)
        .bind(&worker.http_address)
        .bind(worker.started_at_ms)
        .bind(ttl_ms);
        self.write_count(seen).await.map(drop)
    }

    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        held: Option<i64>,
        ttl_ms: i64,
    ) -> Result<Option<i64>, StorageError> {
        let take = sql(
            "INSERT INTO leases AS lease (name, worker_id, generation, taken_at_ms, \
             expires_at_ms) \
             VALUES ($1, $2, nextval('lease_generations'), hearth_now_ms(), \
             hearth_now_ms() + $4) \
             ON CONFLICT (name) DO UPDATE SET worker_id = excluded.worker_id, \
             generation = CASE WHEN lease.worker_id = excluded.worker_id \
             AND lease.generation = $3 THEN lease.generation ELSE excluded.generation END, \
             taken_at_ms = CASE WHEN lease.worker_id = excluded.worker_id \
             AND lease.generation = $3 THEN lease.taken_at_ms ELSE excluded.taken_at_ms END, \
             expires_at_ms = excluded.expires_at_ms \
             WHERE lease.worker_id = excluded.worker_id OR lease.expires_at_ms <= hearth_now_ms() \
             RETURNING generation",
        );
        let taken = take.bind(name).bind(worker_id).bind(held).bind(ttl_ms);
        let row = self.write_optional(taken).await?;
        row.map(|row| row.integer("generation")).transpose()
    }

    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError> {
        let release = sql("DELETE FROM leases WHERE name = $1 AND worker_id = $2");
        self.write_count(release.bind(name).bind(worker_id))
            .await
            .map(drop)
    }

    async fn leave(&self, worker_id: &str) -> Result<(), StorageError> {
        let leave = sql(
            "WITH released AS (DELETE FROM leases WHERE worker_id = $1) \
             DELETE FROM workers WHERE id = $1",
        );
        self.write_count(leave.bind(worker_id)).await.map(drop)
    }

    async fn lease_holder(&self, name: &str) -> Result<Option<LeaseHolder>, StorageError> {
        let holder = sql("SELECT worker_id, generation FROM leases \
             WHERE name = $1 AND expires_at_ms > hearth_now_ms()");
        let row = self.read_optional(holder.bind(name)).await?;
        let holder = |row: PgRow| -> Result<LeaseHolder, StorageError> {
            Ok(LeaseHolder {
                worker_id: row.text("worker_id")?,
                generation: row.integer("generation")?,
            })
        };
        row.map(holder).transpose()
    }

    async fn live_workers(&self) -> Result<Vec<LiveWorker>, StorageError> {
        let rows = sqlx::query(
            "WITH now AS (SELECT hearth_now_ms() AS ms) \
             SELECT workers.id, workers.pid, workers.host, workers.http_address, \
             workers.started_at_ms, workers.seen_at_ms, \
             COALESCE(array_agg(leases.name ORDER BY leases.name) \
             FILTER (WHERE leases.name IS NOT NULL), '{}') AS leases \
             FROM now, workers LEFT JOIN leases ON leases.worker_id = workers.id \
             AND leases.expires_at_ms > (SELECT ms FROM now) \
             WHERE workers.expires_at_ms > now.ms GROUP BY workers.id \
             ORDER BY workers.started_at_ms, workers.id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(rows
            .iter()
            .map(|row| LiveWorker {
                presence: WorkerPresence {
                    worker_id: row.get("id"),
                    pid: u32::try_from(row.get::<i64, _>("pid")).unwrap_or(0),
                    host: row.get("host"),
                    http_address: row.get("http_address"),
                    started_at_ms: row.get("started_at_ms"),
                },
                seen_at_ms: row.get("seen_at_ms"),
                leases: row.get("leases"),
            })
            .collect())
    }

    async fn wake(&self, wake_up: &WakeUp) -> Result<(), StorageError> {
        let wake = sql("SELECT pg_notify($1, $2)").bind(WAKE_CHANNEL);
        self.write_count(wake.bind(wake_up.to_payload()))
            .await
            .map(drop)
    }

    async fn wake_all(&self, wake_ups: &[WakeUp]) -> Result<(), StorageError> {
        if wake_ups.is_empty() {
            return Ok(());
        }
        let payloads: Vec<String> = wake_ups.iter().map(WakeUp::to_payload).collect();
        // One statement for all: `NOTIFY` sends them on commit, in order.
        let wake = sql(
            "SELECT pg_notify($1, payload) FROM jsonb_array_elements_text($2::jsonb) AS payload",
        );
        let payloads = serde_json::json!(payloads).to_string();
        self.write_count(wake.bind(WAKE_CHANNEL).bind(payloads))
            .await
            .map(drop)
    }

    async fn wake_ups(&self) -> Result<WakeUps, StorageError> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool)
            .await
            .map_err(database_error)?;
        listener
            .listen(WAKE_CHANNEL)
            .await
            .map_err(database_error)?;
        Ok(Box::pin(futures::stream::unfold(
            listener,
            |mut listener| async move {
                loop {
                    match listener.recv().await {
                        Ok(notification) => {
                            if let Some(wake_up) = WakeUp::from_payload(notification.payload()) {
                                return Some((wake_up, listener));
                            }
                        }
                        Err(sqlx::Error::PoolClosed) => return None,
                        // The listener connects again at its next call; what was said
                        // meanwhile is found by the workers' periodic looks.
                        Err(error) => {
                            tracing::warn!(%error, "listening for wake-ups failed; trying again");
                            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        }
                    }
                }
            },
        )))
    }
}
