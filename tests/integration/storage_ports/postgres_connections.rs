//! PostgreSQL only: pooled connections the server cut. A connection lent out at once (used
//! within `PING_WHEN_IDLE_FOR`) is not pinged first, so a cut one fails its next statement
//! once and is dropped; one idle longer is pinged and replaced before it is lent, so after
//! a server restart or an idle timeout the stores answer at the first try.

use std::time::Duration;

use hearth::storage::postgres::PING_WHEN_IDLE_FOR;
use hearth::storage::{self, Stores};

use crate::support::postgres::PostgresServer;

/// Connections the stores keep in their pool (`storage::open`'s maximum).
const POOLED: u32 = 3;

/// Every connection of `url`'s database that hearth opened, closed by the server.
async fn cut_hearths_connections(url: &str) -> usize {
    let admin = sqlx::PgPool::connect(url).await.unwrap();
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = 'hearth'",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    admin.close().await;
    cut.into_iter().filter(|cut| *cut).count()
}

/// Every pooled connection opened and back in the pool: `POOLED` statements at once.
async fn fill_the_pool(stores: &Stores) {
    let pings: Vec<_> = (0..POOLED).map(|_| stores.inbox.ping()).collect();
    for answered in futures::future::join_all(pings).await {
        answered.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_cut_by_the_server_fail_once_when_fresh_and_never_when_idle() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let url = server.fresh_database().await;
    let stores = storage::open(&url, POOLED).await.unwrap();
    fill_the_pool(&stores).await;

    // Cut while lately used: each broken connection fails one statement, then the pool
    // opens new ones.
    assert!(cut_hearths_connections(&url).await >= 1);
    let mut failures = 0;
    while let Err(error) = stores.inbox.ping().await {
        failures += 1;
        assert!(
            failures <= POOLED,
            "still failing after every pooled connection failed once: {error}"
        );
    }

    // Cut, then idle past the ping threshold: tested and replaced before they are lent,
    // so no statement fails.
    fill_the_pool(&stores).await;
    assert!(cut_hearths_connections(&url).await >= 1);
    tokio::time::sleep(PING_WHEN_IDLE_FOR + Duration::from_millis(500)).await;
    for _ in 0..2 * POOLED {
        stores.inbox.ping().await.unwrap();
    }
    // Several at once take every pooled connection, each tested first.
    fill_the_pool(&stores).await;
    stores.close().await;
}
