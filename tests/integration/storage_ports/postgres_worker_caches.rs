//! PostgreSQL only: what one worker keeps of what it read, checked against a second worker
//! on the same database. A conversation's history is kept by the holder of its lease for
//! that generation only: under a new generation (another worker held it meanwhile) it is
//! read afresh, and a turn still believing in the old one is refused at its end. A member's
//! facts are kept under the family's version: a fact changed on one worker moves that
//! version and wakes every worker, and the other worker reads the fact anew once it has
//! read the version (as it does before every request).

use std::time::Duration;

use futures::StreamExt;
use hearth::ports::{Fence, StorageError, WakeTopic};

use super::{contents, expect_new, inbound, member, open_or_panic, turn_for};
use crate::support::postgres::PostgresServer;

const LEASE: &str = "conversation:telegram:family-chat";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_holders_history_is_kept_for_its_generation_and_read_afresh_under_another() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let url = server.fresh_database().await;
    let (first, second) = (open_or_panic(&url).await, open_or_panic(&url).await);
    let watcher = sqlx::PgPool::connect(&url).await.unwrap();
    let conversation = inbound("m1", "telegram", None).conversation;
    let fence_of = |generation| Fence {
        lease: LEASE.to_string(),
        generation,
    };

    let held = first
        .coordination
        .take_lease(LEASE, "w1", None, 60_000)
        .await
        .unwrap()
        .unwrap();
    let read_held = |stores: &hearth::storage::Stores, generation| {
        let (memory, conversation) = (stores.memory.clone(), conversation.clone());
        async move {
            memory
                .recent_held(&conversation, 10, 0, Some(&fence_of(generation)))
                .await
                .unwrap()
        }
    };
    assert!(read_held(&first, held).await.is_empty());
    let m1 = inbound("m1", "telegram", None);
    expect_new(&first, &m1).await;
    first
        .inbox
        .complete_fenced("m1", &turn_for(&m1, "first answer"), Some(&fence_of(held)))
        .await
        .unwrap();
    assert_eq!(
        contents(&read_held(&first, held).await),
        ["text of m1", "first answer"]
    );
    // Kept: the rows gone behind its back are still what the holder reads under its
    // generation, while a read without one goes to the database.
    sqlx::query("DELETE FROM messages")
        .execute(&watcher)
        .await
        .unwrap();
    assert_eq!(
        contents(&read_held(&first, held).await),
        ["text of m1", "first answer"]
    );
    assert!(
        first
            .memory
            .recent(&conversation, 10, 0)
            .await
            .unwrap()
            .is_empty()
    );

    // The first worker stalls past its lease; the second takes the conversation over and
    // answers in it.
    first
        .coordination
        .take_lease(LEASE, "w1", Some(held), 0)
        .await
        .unwrap();
    let taken = second
        .coordination
        .take_lease(LEASE, "w2", None, 60_000)
        .await
        .unwrap()
        .expect("the lease ran out");
    let m2 = inbound("m2", "telegram", None);
    expect_new(&second, &m2).await;
    assert!(read_held(&second, taken).await.is_empty());
    second
        .inbox
        .complete_fenced(
            "m2",
            &turn_for(&m2, "second answer"),
            Some(&fence_of(taken)),
        )
        .await
        .unwrap();

    // The stalled worker's turn under its old generation cannot end.
    let m3 = inbound("m3", "telegram", None);
    expect_new(&first, &m3).await;
    let refused = first
        .inbox
        .complete_fenced("m3", &turn_for(&m3, "stale answer"), Some(&fence_of(held)))
        .await;
    assert!(
        matches!(refused, Err(StorageError::Fenced { .. })),
        "{refused:?}"
    );

    // Taken back, under a new generation: what the other worker wrote is read.
    second
        .coordination
        .take_lease(LEASE, "w2", Some(taken), 0)
        .await
        .unwrap();
    let again = first
        .coordination
        .take_lease(LEASE, "w1", Some(held), 60_000)
        .await
        .unwrap()
        .expect("the lease ran out");
    assert_ne!(again, held);
    assert_eq!(
        contents(&read_held(&first, again).await),
        ["text of m2", "second answer"]
    );
    watcher.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_fact_changed_on_one_worker_is_read_on_another_once_it_reads_the_family() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let url = server.fresh_database().await;
    let (first, second) = (open_or_panic(&url).await, open_or_panic(&url).await);
    let alice = member("alice");
    let before = second.members.family_version().await.unwrap();
    assert!(second.profiles.get(&alice).await.unwrap().is_empty());
    let mut listening = second.coordination.wake_ups().await.unwrap();

    first
        .profiles
        .set(&alice, "name", Some("Alice"))
        .await
        .unwrap();
    assert_eq!(
        first.profiles.get(&alice).await.unwrap()["name"],
        "Alice",
        "the worker that changed it reads it at once"
    );
    let heard = tokio::time::timeout(Duration::from_secs(10), listening.next())
        .await
        .expect("a wake-up within 10 s")
        .expect("listening goes on");
    assert_eq!(heard.topic, WakeTopic::Members);
    let moved = second.members.family_version().await.unwrap();
    assert!(moved > before, "{moved} after {before}");
    assert_eq!(heard.subject, moved.to_string());
    assert_eq!(second.profiles.get(&alice).await.unwrap()["name"], "Alice");

    // A removal moves it too; a removal of nothing does not.
    first.profiles.set(&alice, "name", None).await.unwrap();
    first.profiles.set(&alice, "name", None).await.unwrap();
    let removed = second.members.family_version().await.unwrap();
    assert_eq!(removed, moved + 1);
    assert!(second.profiles.get(&alice).await.unwrap().is_empty());
}
