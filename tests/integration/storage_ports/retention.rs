//! The `Retention` port: what is old enough pruned in batches, nothing younger; of
//! reminders, settled occurrences and then the schedules that ended with none left, never
//! an open occurrence, and never so that an occurrence could fire again.

use hearth::ids::FiringId;
use hearth::ports::{
    Claimed, FiringClaim, FiringState, FiringTiming, Prunable, Settled, Settlement, now_ms,
};
use hearth::storage::Stores;

use super::outbox::outgoing;
use super::schedules::{MINUTE, claim, occurrence, pending_texts, reminder};
use super::{T0, expect_new, inbound, key, member, turn_for};

adapter_suite!(
    retention_prunes_in_batches_only_what_is_old_enough,
    retention_prunes_settled_occurrences_and_ended_schedules_never_open_ones,
);

async fn retention_prunes_in_batches_only_what_is_old_enough(stores: &Stores) {
    let now = now_ms();
    for id in ["r-1", "r-2", "r-3", "r-waiting"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
    }
    let mut entries = 0;
    for id in ["r-1", "r-2", "r-3"] {
        let message = inbound(id, "telegram", None);
        let mut turn = turn_for(&message, "done");
        entries += turn.messages.len();
        for entry in &mut turn.messages {
            entry.created_at_ms = now - 10_000;
        }
        turn.outgoing = Some(outgoing("telegram", "family-chat", id));
        let queued = stores.inbox.complete(id, &turn).await.unwrap().unwrap();
        stores.outbox.delivered(queued, None).await.unwrap();
    }
    let retention = &stores.retention;
    // Nothing is that old yet.
    for what in Prunable::ALL {
        assert_eq!(retention.prune(what, now - 60_000, 100).await.unwrap(), 0);
    }
    // Everything finished is old by a cut-off in the future, taken two at a time.
    let later = now + 60_000;
    assert_eq!(
        retention
            .prune(Prunable::FinishedInbox, later, 2)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        retention
            .prune(Prunable::FinishedInbox, later, 2)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        retention
            .prune(Prunable::FinishedInbox, later, 2)
            .await
            .unwrap(),
        0
    );
    for id in ["r-1", "r-2", "r-3"] {
        assert_eq!(stores.inbox.get(id).await.unwrap(), None, "{id}");
    }
    // A message still waiting is never pruned.
    assert!(stores.inbox.get("r-waiting").await.unwrap().is_some());
    assert_eq!(
        retention
            .prune(Prunable::DeliveredOutbox, later, 10)
            .await
            .unwrap(),
        3
    );
    let history = retention
        .prune(Prunable::History, now - 5_000, 100)
        .await
        .unwrap();
    assert_eq!(history, entries, "every entry of the three turns");
    assert!(
        stores
            .memory
            .recent(&key("telegram:family-chat"), 10, 0)
            .await
            .unwrap()
            .is_empty()
    );
}

const DAY: i64 = 1_440 * MINUTE;

/// Fire `claim` (it must fire) and, with `state`, settle it at `at_ms`.
async fn fire(stores: &Stores, claim: FiringClaim, settled: Option<(FiringState, i64)>) {
    let fired = stores.schedules.claim(&claim).await.unwrap();
    assert!(matches!(fired, Claimed::Fired { .. }), "{fired:?}");
    let Some((state, at_ms)) = settled else {
        return;
    };
    let mut snooze = None;
    if state == FiringState::Snoozed {
        let mut again = reminder("alice", "alice", at_ms + 10 * MINUTE, None);
        again.recurrence = None;
        again.start_local = None;
        again.snoozed_from = Some(claim.id);
        snooze = Some(again);
    }
    let settlement = Settlement {
        id: claim.id,
        state,
        settled_at_ms: at_ms,
        messages: vec![],
        snooze,
    };
    let settled = stores.schedules.settle(&settlement).await.unwrap();
    assert!(matches!(settled, Settled::Now { .. }), "{settled:?}");
}

async fn prune(stores: &Stores, what: Prunable, before_ms: i64, batch: usize) -> usize {
    stores
        .retention
        .prune(what, before_ms, batch)
        .await
        .unwrap()
}

async fn fired(stores: &Stores, id: FiringId) -> bool {
    stores.schedules.firing(id).await.unwrap().is_some()
}

async fn kept(stores: &Stores, schedule_id: i64) -> bool {
    stores
        .schedules
        .schedule(schedule_id)
        .await
        .unwrap()
        .is_some()
}

/// Settled occurrences (done, snoozed, closed when they fired) go by when they were
/// settled, then the schedules that ended with none left, by when they ended. An open
/// occurrence, whose escalation may still be due, stays however old, and so does its
/// schedule. A claim of an occurrence whose firing went finds it taken: nothing fires twice.
async fn retention_prunes_settled_occurrences_and_ended_schedules_never_open_ones(stores: &Stores) {
    let add = |due_ms| async move {
        let mut once = reminder("alice", "alice", due_ms, None);
        once.recurrence = None;
        once.start_local = None;
        stores.schedules.add(&once).await.unwrap()
    };
    // A daily reminder: its first occurrence answered Done, the second still open.
    let daily = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    let (first, second) = (occurrence(daily.id, T0), occurrence(daily.id, T0 + DAY));
    let done = Some((FiringState::Done, T0 + 2 * MINUTE));
    fire(stores, claim(first, Some(T0 + DAY), vec![]), done).await;
    fire(stores, claim(second, Some(T0 + 2 * DAY), vec![]), None).await;
    // One-offs: snoozed (its snooze a schedule of its own), told as missed, left open.
    let snoozed = add(T0).await;
    let snoozed_at = occurrence(snoozed.id, T0);
    let snooze = Some((FiringState::Snoozed, T0 + 3 * MINUTE));
    fire(stores, claim(snoozed_at, None, vec![]), snooze).await;
    let missed = add(T0).await;
    let missed_at = occurrence(missed.id, T0);
    let told = FiringClaim {
        timing: FiringTiming::Missed,
        state: FiringState::Closed,
        escalate_at_ms: None,
        ..claim(missed_at, None, vec![])
    };
    fire(stores, told, None).await;
    let ignored = add(T0).await;
    let ignored_at = occurrence(ignored.id, T0);
    fire(stores, claim(ignored_at, None, vec![]), None).await;
    // Cancelled now, before it ever fired.
    let cancelled = add(T0 + DAY).await;
    assert!(stores.schedules.cancel(cancelled.id).await.unwrap());

    // Nothing was settled or ended before T0.
    assert_eq!(prune(stores, Prunable::SettledFirings, T0, 10).await, 0);
    assert_eq!(prune(stores, Prunable::EndedSchedules, T0, 10).await, 0);
    // Settled by a day later: the three settled occurrences, two at a time.
    let cut = T0 + DAY;
    assert_eq!(prune(stores, Prunable::SettledFirings, cut, 2).await, 2);
    assert_eq!(prune(stores, Prunable::SettledFirings, cut, 2).await, 1);
    assert_eq!(prune(stores, Prunable::SettledFirings, cut, 2).await, 0);
    for gone in [first, snoozed_at, missed_at] {
        assert!(!fired(stores, gone).await, "{gone} is still there");
    }
    assert!(fired(stores, second).await && fired(stores, ignored_at).await);
    // The one-offs that ended with nothing left; not the one whose occurrence is open,
    // not the one cancelled just now, not the active ones (the daily, the snooze).
    assert_eq!(prune(stores, Prunable::EndedSchedules, cut, 10).await, 2);
    assert!(!kept(stores, snoozed.id).await && !kept(stores, missed.id).await);
    assert!(kept(stores, ignored.id).await && kept(stores, daily.id).await);
    assert!(kept(stores, cancelled.id).await);
    let active = stores
        .schedules
        .schedules_of(&member("alice"))
        .await
        .unwrap();
    assert_eq!(active.len(), 2, "the daily and the snooze: {active:?}");
    let later = now_ms() + MINUTE;
    assert_eq!(prune(stores, Prunable::EndedSchedules, later, 10).await, 1);
    assert!(!kept(stores, cancelled.id).await);
    // Open occurrences stay whatever the cut-off, their escalations still due.
    assert_eq!(
        prune(stores, Prunable::SettledFirings, i64::MAX, 10).await,
        0
    );
    assert_eq!(
        prune(stores, Prunable::EndedSchedules, i64::MAX, 10).await,
        0
    );
    let escalations: Vec<FiringId> = stores
        .schedules
        .due_escalations(i64::MAX, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|firing| firing.id)
        .collect();
    assert_eq!(escalations, [ignored_at, second]);
    assert!(kept(stores, ignored.id).await);

    // Claimed again, an occurrence whose firing went is taken, its schedule gone or not.
    let twice = || vec![outgoing("telegram", "alice-chat", "⏰ twice")];
    for again in [
        claim(first, Some(T0 + DAY), twice()),
        claim(snoozed_at, None, twice()),
        claim(missed_at, None, twice()),
    ] {
        assert_eq!(
            stores.schedules.claim(&again).await.unwrap(),
            Claimed::Taken
        );
    }
    assert!(pending_texts(stores).await.is_empty());
    // A schedule's id is never given again.
    let newer = add(T0).await;
    assert!(
        newer.id > cancelled.id,
        "{} after {}",
        newer.id,
        cancelled.id
    );
}
