//! The `Schedules` port (reminders and scheduled tasks): a schedule is stored once per tool
//! call, an occurrence fires once with what it sends, an open occurrence is settled once (a
//! snooze stored with it) and escalated once.

use hearth::ids::FiringId;
use hearth::ports::{
    Claimed, FiringClaim, FiringState, FiringTiming, InboxStatus, NewSchedule, OutgoingMessage,
    ScheduleKind, ScheduleStatus, Settled, Settlement, StorageError,
};
use hearth::storage::Stores;

use super::outbox::outgoing;
use super::{T0, inbound, key, member};

adapter_suite!(
    schedules_are_stored_once_per_key,
    schedules_fire_each_occurrence_once,
    schedules_fire_an_occurrence_claimed_by_two_workers_at_once_once,
    schedules_finish_with_their_last_occurrence,
    schedules_are_listed_soonest_first,
    schedules_store_a_task_s_turn_with_its_firing,
    schedules_settle_an_open_occurrence_once,
    schedules_escalate_an_open_occurrence_once,
    schedules_refuse_a_claim_that_does_not_move_forward,
);

pub(super) const MINUTE: i64 = 60_000;

/// A daily reminder for `for_member`, first due at `due_ms`.
pub(super) fn reminder(
    for_member: &str,
    set_by: &str,
    due_ms: i64,
    once_key: Option<&str>,
) -> NewSchedule {
    NewSchedule {
        kind: ScheduleKind::Reminder,
        member_id: member(for_member),
        set_by: member(set_by),
        text: format!("give Max his medicine ({for_member}, {due_ms})"),
        profile_id: None,
        conversation: key(&format!("telegram:{for_member}-chat")),
        zone: "Europe/Berlin".into(),
        recurrence: Some("daily".into()),
        start_local: Some("2023-11-14T23:13".into()),
        first_due_ms: due_ms,
        escalate_after_minutes: Some(30),
        snoozed_from: None,
        once_key: once_key.map(str::to_string),
    }
}

/// Occurrence `id` fired on time a second after it was due, open, its escalation due
/// half an hour after it.
pub(super) fn claim(
    id: FiringId,
    next_due_ms: Option<i64>,
    messages: Vec<OutgoingMessage>,
) -> FiringClaim {
    FiringClaim {
        id,
        next_due_ms,
        fired_at_ms: id.due_ms + 1_000,
        timing: FiringTiming::OnTime,
        state: FiringState::Open,
        escalate_at_ms: Some(id.due_ms + 30 * MINUTE),
        messages,
        turn: None,
    }
}

pub(super) fn occurrence(schedule_id: i64, due_ms: i64) -> FiringId {
    FiringId {
        schedule_id,
        due_ms,
    }
}

pub(super) async fn pending_texts(stores: &Stores) -> Vec<String> {
    stores
        .outbox
        .undelivered("telegram")
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.message.text)
        .collect()
}

/// The same tool call stored twice (a turn replayed after a stop) is one schedule.
async fn schedules_are_stored_once_per_key(stores: &Stores) {
    let first = stores
        .schedules
        .add(&reminder("alice", "alice", T0, Some("turn-1.call-1")))
        .await
        .unwrap();
    let again = stores
        .schedules
        .add(&reminder(
            "alice",
            "alice",
            T0 + MINUTE,
            Some("turn-1.call-1"),
        ))
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(first.next_due_ms, Some(T0));
    assert_eq!(first.status, ScheduleStatus::Active);
    assert_eq!(first.zone, "Europe/Berlin");
    assert_eq!(first.recurrence.as_deref(), Some("daily"));
    assert_eq!(first.escalate_after_minutes, Some(30));
    let other = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    assert_ne!(other.id, first.id);
    assert_eq!(
        stores
            .schedules
            .count_active_for(&member("alice"))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        stores.schedules.schedule(first.id).await.unwrap(),
        Some(first)
    );
    assert_eq!(stores.schedules.schedule(999_999).await.unwrap(), None);
}

/// An occurrence fires once: the first claim moves the schedule on and stores the firing
/// with its message; the same claim again, or one read before the move, stores nothing.
/// Two workers' schedulers claim one occurrence at the same moment (two connections of
/// one database): one fires it, the other finds it taken, and it is sent once.
async fn schedules_fire_an_occurrence_claimed_by_two_workers_at_once_once(stores: &Stores) {
    let schedule = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    let first = occurrence(schedule.id, T0);
    let by = |worker: &str| {
        claim(
            first,
            Some(T0 + 1_440 * MINUTE),
            vec![outgoing(
                "telegram",
                "alice-chat",
                &format!("⏰ medicine ({worker})"),
            )],
        )
    };
    let (one, other) = (by("one"), by("other"));
    let (one, other) = tokio::join!(stores.schedules.claim(&one), stores.schedules.claim(&other));
    let outcomes = [one.unwrap(), other.unwrap()];
    let fired = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Claimed::Fired { .. }))
        .count();
    assert_eq!(fired, 1, "{outcomes:?}");
    assert!(outcomes.contains(&Claimed::Taken), "{outcomes:?}");
    assert_eq!(pending_texts(stores).await.len(), 1);
}

async fn schedules_fire_each_occurrence_once(stores: &Stores) {
    let schedule = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    let first = occurrence(schedule.id, T0);
    let fired = stores
        .schedules
        .claim(&claim(
            first,
            Some(T0 + 1_440 * MINUTE),
            vec![outgoing("telegram", "alice-chat", "⏰ medicine")],
        ))
        .await
        .unwrap();
    let Claimed::Fired { outbox_ids } = fired else {
        panic!("the first claim did not fire: {fired:?}");
    };
    assert_eq!(outbox_ids.len(), 1);
    assert_eq!(pending_texts(stores).await, ["⏰ medicine"]);
    let again = stores
        .schedules
        .claim(&claim(
            first,
            Some(T0 + 1_440 * MINUTE),
            vec![outgoing("telegram", "alice-chat", "⏰ medicine twice")],
        ))
        .await
        .unwrap();
    assert_eq!(again, Claimed::Taken);
    assert_eq!(pending_texts(stores).await, ["⏰ medicine"]);
    let moved = stores
        .schedules
        .schedule(schedule.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(moved.next_due_ms, Some(T0 + 1_440 * MINUTE));
    let firing = stores.schedules.firing(first).await.unwrap().unwrap();
    assert_eq!(firing.state, FiringState::Open);
    assert_eq!(firing.timing, FiringTiming::OnTime);
    assert_eq!(firing.fired_at_ms, T0 + 1_000);
    assert_eq!(firing.escalate_at_ms, Some(T0 + 30 * MINUTE));
    // A cancelled schedule fires no more.
    assert!(stores.schedules.cancel(schedule.id).await.unwrap());
    assert!(!stores.schedules.cancel(schedule.id).await.unwrap());
    let next = occurrence(schedule.id, T0 + 1_440 * MINUTE);
    assert_eq!(
        stores
            .schedules
            .claim(&claim(next, None, vec![]))
            .await
            .unwrap(),
        Claimed::Taken
    );
    let cancelled = stores
        .schedules
        .schedule(schedule.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.status, ScheduleStatus::Cancelled);
    assert_eq!(cancelled.next_due_ms, None);
    assert_eq!(stores.schedules.firing(next).await.unwrap(), None);
}

/// A claim without a next occurrence finishes the schedule: it is neither due nor listed.
async fn schedules_finish_with_their_last_occurrence(stores: &Stores) {
    let schedule = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    let fired = stores
        .schedules
        .claim(&claim(occurrence(schedule.id, T0), None, vec![]))
        .await
        .unwrap();
    assert_eq!(fired, Claimed::Fired { outbox_ids: vec![] });
    let finished = stores
        .schedules
        .schedule(schedule.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, ScheduleStatus::Finished);
    assert_eq!(finished.next_due_ms, None);
    assert!(stores.schedules.due(i64::MAX, 10).await.unwrap().is_empty());
    assert!(
        stores
            .schedules
            .schedules_of(&member("alice"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!stores.schedules.cancel(schedule.id).await.unwrap());
}

/// `due` lists active schedules up to an instant, soonest first, within its limit; a member
/// lists theirs and those they set, a parent the family's.
async fn schedules_are_listed_soonest_first(stores: &Stores) {
    let later = stores
        .schedules
        .add(&reminder("alice", "alice", T0 + 3 * MINUTE, None))
        .await
        .unwrap();
    let sooner = stores
        .schedules
        .add(&reminder("max", "alice", T0 + MINUTE, None))
        .await
        .unwrap();
    let bobs = stores
        .schedules
        .add(&reminder("bob", "bob", T0 + 2 * MINUTE, None))
        .await
        .unwrap();
    let far = stores
        .schedules
        .add(&reminder("bob", "bob", T0 + 600 * MINUTE, None))
        .await
        .unwrap();
    let ids = |schedules: Vec<hearth::ports::Schedule>| {
        schedules
            .into_iter()
            .map(|schedule| schedule.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(stores.schedules.due(T0 + 3 * MINUTE, 10).await.unwrap()),
        [sooner.id, bobs.id, later.id]
    );
    assert_eq!(
        ids(stores.schedules.due(T0 + 3 * MINUTE, 2).await.unwrap()),
        [sooner.id, bobs.id]
    );
    assert!(stores.schedules.due(T0, 10).await.unwrap().is_empty());
    assert_eq!(
        ids(stores
            .schedules
            .schedules_of(&member("alice"))
            .await
            .unwrap()),
        [sooner.id, later.id]
    );
    assert_eq!(
        ids(stores.schedules.schedules_of(&member("max")).await.unwrap()),
        [sooner.id]
    );
    assert_eq!(
        ids(stores.schedules.active_schedules().await.unwrap()),
        [sooner.id, bobs.id, later.id, far.id]
    );
    assert_eq!(
        stores
            .schedules
            .count_active_for(&member("bob"))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        stores
            .schedules
            .count_active_for(&member("max"))
            .await
            .unwrap(),
        1
    );
}

/// A task's occurrence stores its turn as an accepted inbox message in the claim, once.
async fn schedules_store_a_task_s_turn_with_its_firing(stores: &Stores) {
    let mut task = reminder("alice", "alice", T0, None);
    task.kind = ScheduleKind::Task;
    task.profile_id = Some("weather".into());
    let schedule = stores.schedules.add(&task).await.unwrap();
    let id = occurrence(schedule.id, T0);
    let mut turn = inbound("task-turn-1", "telegram", Some("schedule:1"));
    turn.text = "tell me the weather".into();
    let with_turn = FiringClaim {
        state: FiringState::Closed,
        escalate_at_ms: None,
        turn: Some(turn.clone()),
        ..claim(id, Some(T0 + 1_440 * MINUTE), vec![])
    };
    assert!(matches!(
        stores.schedules.claim(&with_turn).await.unwrap(),
        Claimed::Fired { .. }
    ));
    assert_eq!(
        stores.schedules.claim(&with_turn).await.unwrap(),
        Claimed::Taken
    );
    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(unanswered.len(), 1, "{unanswered:?}");
    assert_eq!(unanswered[0].inbound, turn);
    assert_eq!(unanswered[0].status, InboxStatus::Accepted);
    let firing = stores.schedules.firing(id).await.unwrap().unwrap();
    assert_eq!(firing.inbox_id.as_deref(), Some("task-turn-1"));
    assert_eq!(firing.state, FiringState::Closed);
}

/// Done or Snooze settles an open occurrence once, with its close message and, for a
/// snooze, its one-off schedule; a second answer finds it settled.
async fn schedules_settle_an_open_occurrence_once(stores: &Stores) {
    let schedule = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    let id = occurrence(schedule.id, T0);
    stores
        .schedules
        .claim(&claim(id, None, vec![]))
        .await
        .unwrap();
    assert_eq!(
        stores
            .schedules
            .open_firings_of(&member("alice"))
            .await
            .unwrap()
            .into_iter()
            .map(|firing| firing.id)
            .collect::<Vec<_>>(),
        [id]
    );
    let mut snooze = reminder("alice", "alice", T0 + 11 * MINUTE, None);
    snooze.recurrence = None;
    snooze.start_local = None;
    snooze.snoozed_from = Some(id);
    let snoozing = Settlement {
        id,
        state: FiringState::Snoozed,
        settled_at_ms: T0 + MINUTE,
        messages: vec![outgoing("telegram", "alice-chat", "⏰ Snoozed until 09:11")],
        snooze: Some(snooze),
    };
    let Settled::Now { outbox_ids, snooze } = stores.schedules.settle(&snoozing).await.unwrap()
    else {
        panic!("the open occurrence was not settled");
    };
    assert_eq!(outbox_ids.len(), 1);
    let snooze = snooze.expect("the snooze's schedule");
    assert_eq!(snooze.snoozed_from, Some(id));
    assert_eq!(snooze.next_due_ms, Some(T0 + 11 * MINUTE));
    assert_eq!(snooze.recurrence, None);
    assert_eq!(
        stores.schedules.settle(&snoozing).await.unwrap(),
        Settled::NotOpen(Some(FiringState::Snoozed))
    );
    let done = Settlement {
        state: FiringState::Done,
        snooze: None,
        ..snoozing.clone()
    };
    assert_eq!(
        stores.schedules.settle(&done).await.unwrap(),
        Settled::NotOpen(Some(FiringState::Snoozed))
    );
    let never = Settlement {
        id: occurrence(schedule.id, T0 + 5),
        ..done
    };
    assert_eq!(
        stores.schedules.settle(&never).await.unwrap(),
        Settled::NotOpen(None)
    );
    assert_eq!(pending_texts(stores).await, ["⏰ Snoozed until 09:11"]);
    assert!(
        stores
            .schedules
            .open_firings_of(&member("alice"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        stores.schedules.due(T0 + 11 * MINUTE, 10).await.unwrap()[0].id,
        snooze.id
    );
}

/// An unacknowledged occurrence is escalated once, when due; a settled one never.
async fn schedules_escalate_an_open_occurrence_once(stores: &Stores) {
    let first = stores
        .schedules
        .add(&reminder("max", "alice", T0, None))
        .await
        .unwrap();
    let second = stores
        .schedules
        .add(&reminder("max", "alice", T0 + MINUTE, None))
        .await
        .unwrap();
    let (a, b) = (occurrence(first.id, T0), occurrence(second.id, T0 + MINUTE));
    for id in [a, b] {
        stores
            .schedules
            .claim(&claim(id, None, vec![]))
            .await
            .unwrap();
    }
    let due = |until| async move {
        stores
            .schedules
            .due_escalations(until, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|firing| firing.id)
            .collect::<Vec<_>>()
    };
    assert!(due(T0 + 29 * MINUTE).await.is_empty());
    assert_eq!(due(T0 + 31 * MINUTE).await, [a, b]);
    let told = [outgoing(
        "telegram",
        "alice-chat",
        "Max's reminder was not acknowledged",
    )];
    let ids = stores
        .schedules
        .escalate(a, T0 + 30 * MINUTE, &told)
        .await
        .unwrap();
    assert_eq!(ids.map(|ids| ids.len()), Some(1));
    assert_eq!(
        stores
            .schedules
            .escalate(a, T0 + 31 * MINUTE, &told)
            .await
            .unwrap(),
        None
    );
    let done = Settlement {
        id: b,
        state: FiringState::Done,
        settled_at_ms: T0 + 2 * MINUTE,
        messages: vec![],
        snooze: None,
    };
    assert!(matches!(
        stores.schedules.settle(&done).await.unwrap(),
        Settled::Now { .. }
    ));
    assert!(due(T0 + 60 * MINUTE).await.is_empty());
    assert_eq!(
        stores
            .schedules
            .escalate(b, T0 + 60 * MINUTE, &told)
            .await
            .unwrap(),
        None
    );
    let escalated = stores.schedules.firing(a).await.unwrap().unwrap();
    assert_eq!(escalated.escalated_at_ms, Some(T0 + 30 * MINUTE));
    assert_eq!(
        pending_texts(stores).await,
        ["Max's reminder was not acknowledged"]
    );
}

/// A claim whose next occurrence is not after the one it fires is refused with nothing
/// stored: a schedule only moves forward, so an occurrence is never due a second time,
/// whatever became of its firing's row.
async fn schedules_refuse_a_claim_that_does_not_move_forward(stores: &Stores) {
    let schedule = stores
        .schedules
        .add(&reminder("alice", "alice", T0, None))
        .await
        .unwrap();
    let id = occurrence(schedule.id, T0);
    for next in [T0, T0 - MINUTE] {
        let refused = stores
            .schedules
            .claim(&claim(
                id,
                Some(next),
                vec![outgoing("telegram", "alice-chat", "⏰ again")],
            ))
            .await;
        let Err(StorageError::Invalid(reason)) = refused else {
            panic!("a claim back to {next} was not refused: {refused:?}");
        };
        assert!(reason.contains(&next.to_string()), "{reason}");
    }
    assert_eq!(stores.schedules.firing(id).await.unwrap(), None);
    assert!(pending_texts(stores).await.is_empty());
    let unchanged = stores.schedules.schedule(schedule.id).await.unwrap();
    assert_eq!(unchanged.unwrap().next_due_ms, Some(T0));
    let fired = stores
        .schedules
        .claim(&claim(id, Some(T0 + MINUTE), vec![]))
        .await
        .unwrap();
    assert_eq!(fired, Claimed::Fired { outbox_ids: vec![] });
}
