//! The `Coordination` port: workers listed while they beat, a lease held by one worker at
//! a time, renewed by its holder's heartbeat, free again when that runs out or is handed
//! back, and every lease of a worker that leaves handed back at once; a lease's generation
//! kept while its holder extends it and new (never given before) whenever it passes to a
//! holder; wake-ups heard by every worker listening, one by one or in a batch.
//!
//! Expiry is the database's clock's to judge, so a lease is made to run out by taking it
//! for no time at all (`RUNS_OUT`), and kept by taking it for a minute.

use futures::StreamExt;
use hearth::ports::{LeaseHolder, WakeTopic, WakeUp, WorkerPresence};
use hearth::storage::Stores;

adapter_suite!(
    coordination_a_lease_has_one_holder_until_it_runs_out,
    coordination_a_generation_is_kept_by_its_holder_and_new_for_every_tenure,
    coordination_heartbeats_keep_leases_and_leaving_hands_them_back,
    coordination_racing_workers_get_one_lease,
    coordination_a_wake_up_reaches_every_listener_once,
    coordination_a_batch_of_wake_ups_reaches_every_listener_in_order,
);

/// Long enough for any check to end before it runs out.
const KEPT: i64 = 60_000;
/// Run out at once.
const RUNS_OUT: i64 = 0;

fn worker(id: &str, started_at_ms: i64) -> WorkerPresence {
    WorkerPresence {
        worker_id: id.into(),
        pid: 7,
        host: "host-a".into(),
        http_address: Some("127.0.0.1:8080".into()),
        started_at_ms,
    }
}

fn holder(worker_id: &str, generation: i64) -> Option<LeaseHolder> {
    Some(LeaseHolder {
        worker_id: worker_id.into(),
        generation,
    })
}

async fn coordination_a_lease_has_one_holder_until_it_runs_out(stores: &Stores) {
    let leases = &stores.coordination;
    let first = leases
        .take_lease("telegram", "w1", None, KEPT)
        .await
        .unwrap()
        .expect("a free lease is taken");
    // Its holder extends it; another worker is refused while it lasts.
    assert_eq!(
        leases
            .take_lease("telegram", "w1", Some(first), KEPT)
            .await
            .unwrap(),
        Some(first)
    );
    assert_eq!(
        leases
            .take_lease("telegram", "w2", None, KEPT)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        leases.lease_holder("telegram").await.unwrap(),
        holder("w1", first)
    );
    // Extended for no time: run out, and free for the next worker, at a new generation.
    leases
        .take_lease("telegram", "w1", Some(first), RUNS_OUT)
        .await
        .unwrap();
    assert_eq!(leases.lease_holder("telegram").await.unwrap(), None);
    let second = leases
        .take_lease("telegram", "w2", None, KEPT)
        .await
        .unwrap()
        .expect("a lease that ran out is taken");
    assert!(second > first, "{second} after {first}");
    assert_eq!(
        leases
            .take_lease("telegram", "w1", Some(first), KEPT)
            .await
            .unwrap(),
        None,
        "its old holder is refused"
    );
    // Only the holder hands it back.
    leases.release_lease("telegram", "w1").await.unwrap();
    assert_eq!(
        leases.lease_holder("telegram").await.unwrap(),
        holder("w2", second)
    );
    leases.release_lease("telegram", "w2").await.unwrap();
    assert_eq!(leases.lease_holder("telegram").await.unwrap(), None);
    // Taken again after it was handed back: a generation never given before.
    let third = leases
        .take_lease("telegram", "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    assert!(third > second, "{third} after {second}");
    assert_eq!(leases.lease_holder("other").await.unwrap(), None);
}

async fn coordination_a_generation_is_kept_by_its_holder_and_new_for_every_tenure(stores: &Stores) {
    let leases = &stores.coordination;
    let name = "conversation:http:alice/s1";
    let first = leases
        .take_lease(name, "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    // The same worker taking it without saying it holds it (it lost track of it): a new
    // tenure, so whatever it did under the old generation is fenced off.
    let second = leases
        .take_lease(name, "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    assert!(second > first, "{second} after {first}");
    // Saying an old generation is the same as saying none.
    let third = leases
        .take_lease(name, "w1", Some(first), KEPT)
        .await
        .unwrap()
        .unwrap();
    assert!(third > second, "{third} after {second}");
    assert_eq!(
        leases
            .take_lease(name, "w1", Some(third), KEPT)
            .await
            .unwrap(),
        Some(third)
    );
    // Generations are never shared between leases either.
    let other = leases
        .take_lease("conversation:http:alice/s2", "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    assert!(other > third, "{other} after {third}");
}

async fn coordination_heartbeats_keep_leases_and_leaving_hands_them_back(stores: &Stores) {
    let leases = &stores.coordination;
    let (first, second) = (worker("w1", 100), worker("w2", 200));
    leases.heartbeat(&second, KEPT).await.unwrap();
    leases.heartbeat(&first, KEPT).await.unwrap();
    for name in ["telegram", "conversation:http:a"] {
        leases
            .take_lease(name, "w1", None, KEPT)
            .await
            .unwrap()
            .unwrap();
    }
    let matrix = leases
        .take_lease("matrix", "w2", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    // w2's lease runs out: its next heartbeat does not bring it back.
    leases
        .take_lease("matrix", "w2", Some(matrix), RUNS_OUT)
        .await
        .unwrap();
    leases.heartbeat(&second, KEPT).await.unwrap();
    assert_eq!(leases.lease_holder("matrix").await.unwrap(), None);
    // w1 beats on; w2 falls silent (its listing runs out).
    leases.heartbeat(&first, KEPT).await.unwrap();
    leases.heartbeat(&second, RUNS_OUT).await.unwrap();
    let live = leases.live_workers().await.unwrap();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].presence, first);
    assert_eq!(live[0].leases, vec!["conversation:http:a", "telegram"]);
    assert_eq!(
        leases
            .take_lease("telegram", "w3", None, KEPT)
            .await
            .unwrap(),
        None
    );
    assert!(
        leases
            .take_lease("matrix", "w3", None, KEPT)
            .await
            .unwrap()
            .is_some()
    );
    // Listed oldest first while both beat.
    leases.heartbeat(&second, KEPT).await.unwrap();
    let live = leases.live_workers().await.unwrap();
    let ids: Vec<&str> = live.iter().map(|w| w.presence.worker_id.as_str()).collect();
    assert_eq!(ids, ["w1", "w2"]);
    assert!(live[1].leases.is_empty(), "w2's lease went to w3: {live:?}");
    // A worker that leaves hands every lease back at once and is no longer listed.
    leases.leave("w1").await.unwrap();
    assert_eq!(leases.lease_holder("telegram").await.unwrap(), None);
    assert!(
        leases
            .take_lease("conversation:http:a", "w2", None, KEPT)
            .await
            .unwrap()
            .is_some()
    );
    let live = leases.live_workers().await.unwrap();
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
                    .take_lease(&name, &format!("w{worker}"), None, KEPT)
                    .await
                    .unwrap();
                (round, taken)
            }));
        }
    }
    let mut winners = [0; 20];
    let mut generations = Vec::new();
    for racer in racers {
        let (round, taken) = racer.await.unwrap();
        winners[round] += usize::from(taken.is_some());
        generations.extend(taken);
    }
    assert_eq!(winners, [1; 20]);
    generations.sort();
    generations.dedup();
    assert_eq!(generations.len(), 20, "one generation per tenure");
}

/// `count` wake-ups heard by `listener`, each within 10 s; then nothing more.
async fn heard(listener: &mut hearth::ports::WakeUps, count: usize) -> Vec<WakeUp> {
    let mut heard = Vec::new();
    for _ in 0..count {
        let wake_up = tokio::time::timeout(std::time::Duration::from_secs(10), listener.next())
            .await
            .expect("a wake-up within 10 s")
            .expect("listening goes on");
        heard.push(wake_up);
    }
    let more = tokio::time::timeout(std::time::Duration::from_millis(200), listener.next()).await;
    assert!(more.is_err(), "heard more than was said: {more:?}");
    heard
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
        assert_eq!(heard(listener, said.len()).await, said);
    }
}

async fn coordination_a_batch_of_wake_ups_reaches_every_listener_in_order(stores: &Stores) {
    let mut first = stores.coordination.wake_ups().await.unwrap();
    let mut second = stores.coordination.wake_ups().await.unwrap();
    let said: Vec<WakeUp> = (0..40)
        .map(|n| match n % 3 {
            0 => WakeUp::new(WakeTopic::Conversation, format!("http:alice/s{n}")),
            1 => WakeUp::new(WakeTopic::Answered, format!("inbox-{n}")),
            _ => WakeUp::new(WakeTopic::Schedules, format!("worker-{n}")),
        })
        .collect();
    stores.coordination.wake_all(&said[..25]).await.unwrap();
    stores.coordination.wake_all(&[]).await.unwrap();
    stores.coordination.wake_all(&said[25..]).await.unwrap();
    for listener in [&mut first, &mut second] {
        assert_eq!(heard(listener, said.len()).await, said);
    }
}
