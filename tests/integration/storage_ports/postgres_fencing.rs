//! PostgreSQL only: a fenced write racing another worker's take of its lease, on two stores
//! of one database (two workers). Either the write lands before the take, and the new
//! holder's read after its take sees it, or it is refused and nothing of it is there: never
//! a write the new holder missed. The write locks the lease's row while it checks the
//! generation, which the take has to wait for. The take is sent while the write runs on
//! the server (seen in `pg_stat_activity`), a large state making it run long enough.

use hearth::ports::{Fence, StorageError};
use serde_json::json;

use super::{expect_new, inbound, open_or_panic};
use crate::support::postgres::PostgresServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_fenced_write_racing_a_take_lands_before_it_or_not_at_all() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let url = server.fresh_database().await;
    let (stalled, taker) = (open_or_panic(&url).await, open_or_panic(&url).await);
    // A state large enough that storing it takes a while: the take comes while it is
    // being written.
    let pad: String = (0..400_000u32)
        .map(|n| format!("{:x}", n.wrapping_mul(2_654_435_761)))
        .collect();
    let state = json!({"in_flight": "call-1", "pad": pad});
    let watcher = sqlx::PgPool::connect(&url).await.unwrap();
    let (mut landed, mut refused) = (0, 0);
    for round in 0..30 {
        let id = format!("race-{round}");
        expect_new(&stalled, &inbound(&id, "telegram", None)).await;
        let lease = format!("conversation:telegram:race-{round}");
        let generation = stalled
            .coordination
            .take_lease(&lease, "w1", None, 60_000)
            .await
            .unwrap()
            .unwrap();
        // Run out at once: free for the taker, while w1 still believes it holds it.
        stalled
            .coordination
            .take_lease(&lease, "w1", Some(generation), 0)
            .await
            .unwrap();
        let fence = Fence {
            lease: lease.clone(),
            generation,
        };
        let journal = stalled.turn_journal.clone();
        let (write_id, written_state) = (id.clone(), state.clone());
        let write = tokio::spawn(async move {
            journal
                .save_turn_fenced(&write_id, &written_state, Some(&fence))
                .await
        });
        // The take comes while the write runs on the server.
        while !write.is_finished() && !writing(&watcher).await {
            tokio::task::yield_now().await;
        }
        let (coordination, reader) = (taker.coordination.clone(), taker.turn_journal.clone());
        let read_id = id.clone();
        let take = tokio::spawn(async move {
            coordination
                .take_lease(&lease, "w2", None, 60_000)
                .await
                .unwrap()
                .expect("the lease ran out");
            reader.load_turn(&read_id).await.unwrap()
        });
        let (written, seen) = (write.await.unwrap(), take.await.unwrap());
        let seen = seen.map(|state| state["in_flight"].clone());
        match written {
            Ok(()) => {
                assert_eq!(
                    seen,
                    Some(json!("call-1")),
                    "round {round}: the new holder missed a write that landed"
                );
                landed += 1;
            }
            Err(StorageError::Fenced { .. }) => {
                assert_eq!(seen, None, "round {round}");
                refused += 1;
            }
            Err(other) => panic!("round {round}: {other}"),
        }
    }
    assert_eq!(landed + refused, 30);
    assert!(
        landed > 0,
        "no write ran while the lease was taken: nothing raced"
    );
    watcher.close().await;
}

/// Whether a write to the turn journal is running on the server now.
async fn writing(watcher: &sqlx::PgPool) -> bool {
    let running: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' \
         AND query LIKE 'INSERT INTO turn_journal%'",
    )
    .fetch_one(watcher)
    .await
    .unwrap();
    running > 0
}
