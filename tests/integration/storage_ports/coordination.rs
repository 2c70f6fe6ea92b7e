//! The `Coordination` port: workers listed while they beat, a lease held by one worker at
//! a time, renewed by its holder's heartbeat, free again when that runs out or is handed
//! back, and every lease of a worker that leaves handed back at once; a wake-up heard by
//! every worker listening.

use futures::StreamExt;
use hearth::ports::{WakeTopic, WakeUp, WorkerPresence};
use hearth::storage::Stores;

adapter_suite!(
    coordination_a_lease_has_one_holder_until_it_runs_out,
    coordination_heartbeats_keep_leases_and_leaving_hands_them_back,
    coordination_racing_workers_get_one_lease,
    coordination_a_wake_up_reaches_every_listener_once,
);

const TTL: i64 = 10_000;

fn worker(id: &str, started_at_ms: i64) -> WorkerPresence {
    WorkerPresence {
        worker_id: id.into(),
        pid: 7,
        host: "host-a".into(),
        http_address: Some("127.0.0.1:8080".into()),
        started_at_ms,
    }
}

async fn coordination_a_lease_has_one_holder_until_it_runs_out(stores: &Stores) {
    let leases = &stores.coordination;
    assert!(
        leases
            .take_lease("telegram", "w1", 1_000, TTL)
            .await
            .unwrap()
    );
    // Its own lease is extended; another worker is refused until it runs out.
    assert!(
        leases
            .take_lease("telegram", "w1", 2_000, TTL)
            .await
            .unwrap()
    );
    assert!(
        !leases
            .take_lease("telegram", "w2", 11_999, TTL)
            .await
            .unwrap()
    );
    assert_eq!(
        leases.lease_holder("telegram", 11_999).await.unwrap(),
        Some("w1".to_string())
    );
    assert_eq!(leases.lease_holder("telegram", 12_000).await.unwrap(), None);
    assert!(
        leases
            .take_lease("telegram", "w2", 12_000, TTL)
            .await
            .unwrap()
    );
    assert!(
        !leases
            .take_lease("telegram", "w1", 12_001, TTL)
            .await
            .unwrap()
    );
    // Only the holder hands it back.
    leases.release_lease("telegram", "w1").await.unwrap();
    assert_eq!(
        leases.lease_holder("telegram", 12_001).await.unwrap(),
        Some("w2".to_string())
    );
    leases.release_lease("telegram", "w2").await.unwrap();
    assert_eq!(leases.lease_holder("telegram", 12_001).await.unwrap(), None);
    assert!(
        leases
            .take_lease("telegram", "w1", 12_002, TTL)
            .await
            .unwrap()
    );
    assert_eq!(leases.lease_holder("other", 12_002).await.unwrap(), None);
}

async fn coordination_heartbeats_keep_leases_and_leaving_hands_them_back(stores: &Stores) {
    let leases = &stores.coordination;
    let (first, second) = (worker("w1", 100), worker("w2", 200));
    leases.heartbeat(&second, 1_000, TTL).await.unwrap();
    leases.heartbeat(&first, 1_000, TTL).await.unwrap();
    assert!(
        leases
            .take_lease("telegram", "w1", 1_000, TTL)
            .await
            .unwrap()
    );
    assert!(
        leases
            .take_lease("conversation:http:a", "w1", 1_000, TTL)
            .await
            .unwrap()
    );
    assert!(leases.take_lease("matrix", "w2", 1_000, TTL).await.unwrap());
    // w1 beats on, w2 falls silent: w2's worker and lease run out, w1's do not.
    leases.heartbeat(&first, 9_000, TTL).await.unwrap();
    let live = leases.live_workers(15_000).await.unwrap();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].presence, first);
    assert_eq!(live[0].seen_at_ms, 9_000);
    assert_eq!(live[0].leases, vec!["conversation:http:a", "telegram"]);
    assert!(
        !leases
            .take_lease("telegram", "w3", 15_000, TTL)
            .await
            .unwrap()
    );
    assert!(
        leases
            .take_lease("matrix", "w3", 15_000, TTL)
            .await
            .unwrap()
    );
    // Listed oldest first while both beat.
    leases.heartbeat(&second, 15_000, TTL).await.unwrap();
    let live = leases.live_workers(15_000).await.unwrap();
    let ids: Vec<&str> = live.iter().map(|w| w.presence.worker_id.as_str()).collect();
    assert_eq!(ids, ["w1", "w2"]);
    assert!(live[1].leases.is_empty(), "w2's lease went to w3: {live:?}");
    // A worker that leaves hands every lease back at once and is no longer listed.
    leases.leave("w1").await.unwrap();
    assert_eq!(leases.lease_holder("telegram", 15_001).await.unwrap(), None);
    assert!(
        leases
            .take_lease("conversation:http:a", "w2", 15_001, TTL)
            .await
            .unwrap()
    );
    let live = leases.live_workers(15_001).await.unwrap();
    let ids: Vec<&str> = live.iter().map(|w| w.presence.worker_id.as_str()).collect();
    assert_eq!(ids, ["w2"]);
}

async fn coordination_racing_workers_get_one_lease(stores: &Stores) {
    let mut racers = Vec::new();
    for round in 0..20 {
        for worker in 0..4 {
            let coordination = stores.coordination.clone();
            racers.push(tokio::spawn(async move {
                let name = format!("conversation:race-{round}");
                let taken = coordination
                    .take_lease(&name, &format!("w{worker}"), 1_000, TTL)
                    .await
                    .unwrap();
                (round, taken)
            }));
        }
    }
    let mut winners = [0; 20];
    for racer in racers {
        let (round, taken) = racer.await.unwrap();
        winners[round] += usize::from(taken);
    }
    assert_eq!(winners, [1; 20]);
}

async fn coordination_a_wake_up_reaches_every_listener_once(stores: &Stores) {
    let mut first = stores.coordination.wake_ups().await.unwrap();
    let mut second = stores.coordination.wake_ups().await.unwrap();
    let said = [
        WakeUp::new(WakeTopic::Conversation, "telegram:42"),
        WakeUp::new(WakeTopic::Answered, "0190f1a2-3b4c"),
        WakeUp::new(WakeTopic::Outbox, "matrix:!room:example.org"),
    ];
    for wake_up in &said {
        stores.coordination.wake(wake_up).await.unwrap();
    }
    for listener in [&mut first, &mut second] {
        for wake_up in &said {
            let heard = tokio::time::timeout(std::time::Duration::from_secs(10), listener.next())
                .await
                .expect("a wake-up within 10 s")
                .expect("listening goes on");
            assert_eq!(&heard, wake_up);
        }
        let more =
            tokio::time::timeout(std::time::Duration::from_millis(200), listener.next()).await;
        assert!(more.is_err(), "heard more than was said: {more:?}");
    }
}
