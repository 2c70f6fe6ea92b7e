//! `Coordination` on PostgreSQL: tables `workers` and `leases`. Taking a lease is one
//! upsert that only overwrites a lease that is the taker's own or has run out, so of
//! workers racing for it exactly one gets a row back.

use async_trait::async_trait;
use sqlx::Row;

use super::{PostgresStore, database_error};
use crate::ports::{Coordination, LiveWorker, StorageError, WakeUp, WakeUps, WorkerPresence};

/// The one `LISTEN`/`NOTIFY` channel of hearth's wake-ups.
const WAKE_CHANNEL: &str = "hearth_wake";

#[async_trait]
impl Coordination for PostgresStore {
    async fn heartbeat(
        &self,
        worker: &WorkerPresence,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<(), StorageError> {
        let until = now_ms.saturating_add(ttl_ms);
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        sqlx::query(
            "INSERT INTO workers (id, pid, host, http_address, started_at_ms, seen_at_ms, \
             expires_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (id) DO UPDATE SET http_address = excluded.http_address, \
             seen_at_ms = excluded.seen_at_ms, expires_at_ms = excluded.expires_at_ms",
        )
        .bind(&worker.worker_id)
        .bind(i64::from(worker.pid))
        .bind(&worker.host)
        .bind(&worker.http_address)
        .bind(worker.started_at_ms)
        .bind(now_ms)
        .bind(until)
        .execute(&mut *transaction)
        .await
        .map_err(database_error)?;
        sqlx::query("UPDATE leases SET expires_at_ms = $1 WHERE worker_id = $2")
            .bind(until)
            .bind(&worker.worker_id)
            .execute(&mut *transaction)
            .await
            .map_err(database_error)?;
        transaction.commit().await.map_err(database_error)
    }

    async fn take_lease(
        &self,
        name: &str,
        worker_id: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool, StorageError> {
        let taken = sqlx::query(
            "INSERT INTO leases (name, worker_id, taken_at_ms, expires_at_ms) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO UPDATE SET worker_id = excluded.worker_id, \
             taken_at_ms = CASE WHEN leases.worker_id = excluded.worker_id \
             THEN leases.taken_at_ms ELSE excluded.taken_at_ms END, \
             expires_at_ms = excluded.expires_at_ms \
             WHERE leases.worker_id = excluded.worker_id OR leases.expires_at_ms <= $3 \
             RETURNING worker_id",
        )
        .bind(name)
        .bind(worker_id)
        .bind(now_ms)
        .bind(now_ms.saturating_add(ttl_ms))
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(taken.is_some())
    }

    async fn release_lease(&self, name: &str, worker_id: &str) -> Result<(), StorageError> {
        sqlx::query("DELETE FROM leases WHERE name = $1 AND worker_id = $2")
            .bind(name)
            .bind(worker_id)
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(database_error)
    }

    async fn leave(&self, worker_id: &str) -> Result<(), StorageError> {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        sqlx::query("DELETE FROM leases WHERE worker_id = $1")
            .bind(worker_id)
            .execute(&mut *transaction)
            .await
            .map_err(database_error)?;
        sqlx::query("DELETE FROM workers WHERE id = $1")
            .bind(worker_id)
            .execute(&mut *transaction)
            .await
            .map_err(database_error)?;
        transaction.commit().await.map_err(database_error)
    }

    async fn lease_holder(&self, name: &str, now_ms: i64) -> Result<Option<String>, StorageError> {
        sqlx::query_scalar("SELECT worker_id FROM leases WHERE name = $1 AND expires_at_ms > $2")
            .bind(name)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)
    }

    async fn live_workers(&self, now_ms: i64) -> Result<Vec<LiveWorker>, StorageError> {
        let rows = sqlx::query(
            "SELECT workers.id, workers.pid, workers.host, workers.http_address, \
             workers.started_at_ms, workers.seen_at_ms, \
             COALESCE(array_agg(leases.name ORDER BY leases.name) \
             FILTER (WHERE leases.name IS NOT NULL), '{}') AS leases \
             FROM workers LEFT JOIN leases ON leases.worker_id = workers.id \
             AND leases.expires_at_ms > $1 \
             WHERE workers.expires_at_ms > $1 GROUP BY workers.id \
             ORDER BY workers.started_at_ms, workers.id",
        )
        .bind(now_ms)
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
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(WAKE_CHANNEL)
            .bind(wake_up.to_payload())
            .execute(&self.pool)
            .await
            .map_err(database_error)?;
        Ok(())
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
