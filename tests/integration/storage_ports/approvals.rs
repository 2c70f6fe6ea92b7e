//! The storage ports' checks for approvals and intents plans, across `PendingActions`,
//! `Outbox` and `PlanExecutions`: a suspension is stored with every message asking it,
//! or with none; a message's waiting confirmation is found by the message; a plan is
//! written only over the version it was read at. On SQLite alone: cancelling a member's
//! open plans changes all of them or none.

use hearth::ports::{AnswerPlace, Decision, PlanExecution, StepStatus, StorageError};
use hearth::storage::{self, Stores};

use super::outbox::outgoing;
use super::pending_actions::confirmation;
use super::plans::plan;
use super::{T0, expect_new, inbound, key, member, record_of};

adapter_suite!(
    pending_suspend_stores_every_prompt_with_it,
    pending_waiting_for_finds_the_message_s_unanswered_confirmation,
    plans_are_written_only_over_the_version_they_were_read_at,
);

/// Every undelivered row of `channel` as (id, conversation, text).
async fn queued(stores: &Stores, channel: &str) -> Vec<(i64, String, String)> {
    stores
        .outbox
        .undelivered(channel)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| {
            let conversation = entry.message.conversation.conversation_id().to_string();
            (entry.id, conversation, entry.message.text)
        })
        .collect()
}

/// A child's request escalated to two parents is stored with the child's notice and each
/// parent's prompt, in one write: all of them, in the order given, or (refused) none.
async fn pending_suspend_stores_every_prompt_with_it(stores: &Stores) {
    expect_new(stores, &inbound("e-1", "telegram", None)).await;
    let mut escalated = confirmation("c-e-1", "e-1", T0);
    escalated.approvers = vec![member("carol"), member("dave")];
    let prompts = [
        outgoing("telegram", "family-chat", "I've asked a parent"),
        outgoing(
            "telegram",
            "carol-chat",
            "alice asks a parent to approve this",
        ),
        outgoing(
            "matrix",
            "!dave-room",
            "alice asks a parent to approve this",
        ),
    ];
    let ids = stores.pending.suspend(&escalated, &prompts).await.unwrap();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    assert_eq!(
        queued(stores, "telegram").await,
        [
            (ids[0], "family-chat".into(), "I've asked a parent".into()),
            (
                ids[1],
                "carol-chat".into(),
                "alice asks a parent to approve this".into()
            ),
        ]
    );
    assert_eq!(
        queued(stores, "matrix").await,
        [(
            ids[2],
            "!dave-room".into(),
            "alice asks a parent to approve this".into()
        )]
    );
    assert_eq!(
        record_of(stores, "e-1").await.status,
        hearth::ports::InboxStatus::Suspended
    );

    // Refused (an unknown message; a confirmation id used before): no prompt is stored.
    let ghost = stores
        .pending
        .suspend(&confirmation("c-ghost", "e-ghost", T0), &prompts)
        .await;
    assert!(ghost.is_err(), "{ghost:?}");
    let again = stores
        .pending
        .suspend(&confirmation("c-e-1", "e-1", T0 + 1), &prompts)
        .await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(queued(stores, "telegram").await.len(), 2);
    assert_eq!(queued(stores, "matrix").await.len(), 1);
    // No prompt at all is a suspension too (a reply read from the inbox, over HTTP).
    expect_new(stores, &inbound("e-2", "http", None)).await;
    let none = stores
        .pending
        .suspend(&confirmation("c-e-2", "e-2", T0 + 2), &[])
        .await
        .unwrap();
    assert!(none.is_empty());
}

/// What `GET /inbound/{id}` shows of a suspended message: the confirmation it waits for,
/// found by the message alone; none once it was answered, the new one once it asks again.
async fn pending_waiting_for_finds_the_message_s_unanswered_confirmation(stores: &Stores) {
    let pending = &stores.pending;
    for id in ["w-1", "w-2"] {
        expect_new(stores, &inbound(id, "http", None)).await;
    }
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), None);
    let first = confirmation("c-w-1", "w-1", T0);
    let other = confirmation("c-w-2", "w-2", T0 + 1);
    pending.suspend(&first, &[]).await.unwrap();
    pending.suspend(&other, &[]).await.unwrap();
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), Some(first));
    assert_eq!(pending.waiting_for("w-2").await.unwrap(), Some(other));
    assert_eq!(pending.waiting_for("w-unknown").await.unwrap(), None);

    let answered = pending
        .answer(
            &"c-w-1".parse().unwrap(),
            &member("alice"),
            &AnswerPlace::Channel("telegram".into()),
            true,
            T0 + 5,
        )
        .await
        .unwrap();
    assert!(answered.is_ok(), "{answered:?}");
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), None, "answered");
    assert_eq!(
        pending.consume(&"c-w-1".parse().unwrap()).await.unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), None, "consumed");
    // Its turn resumed and asks again: the new question is the one waited for.
    let again = confirmation("c-w-1b", "w-1", T0 + 10);
    pending.suspend(&again, &[]).await.unwrap();
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), Some(again));
}

fn is_stale(result: Result<(), StorageError>) -> bool {
    matches!(result, Err(StorageError::Stale(_)))
}

/// A plan is written only over the version it was read at: a write based on a version
/// another write (a `/cancel`) has replaced fails and leaves the stored plan as it is.
async fn plans_are_written_only_over_the_version_they_were_read_at(stores: &Stores) {
    let plans = &stores.plans;
    let mut stored = plan("v1", "alice", StepStatus::WaitingUser, 1_000);
    plans.save_plan(&mut stored).await.unwrap();
    assert_eq!(stored.version, 1);
    // A new plan under an id in use is refused too.
    let mut twin = plan("v1", "alice", StepStatus::Completed, 1_500);
    assert!(is_stale(plans.save_plan(&mut twin).await));
    assert_eq!(
        twin.version, 0,
        "a refused write leaves the version as it was"
    );

    // A turn reads the plan; meanwhile it is cancelled.
    let mut read_by_the_turn = plans.plan("v1").await.unwrap().unwrap();
    assert_eq!(read_by_the_turn, stored);
    assert_eq!(
        plans
            .cancel_open_plans(&key("http:alice"), &member("alice"), 2_000)
            .await
            .unwrap(),
        1
    );
    let cancelled = plans.plan("v1").await.unwrap().unwrap();
    assert_eq!(cancelled.status(), StepStatus::Canceled);
    assert_eq!(cancelled.version, 2, "a cancel is a new version");

    // The turn's write, based on the version before the cancel, fails: the cancel stays.
    read_by_the_turn.steps[0].status = StepStatus::Completed;
    read_by_the_turn.current_index = 1;
    read_by_the_turn.steps[1].status = StepStatus::InProgress;
    assert!(is_stale(plans.save_plan(&mut read_by_the_turn).await));
    assert_eq!(read_by_the_turn.version, 1);
    assert_eq!(plans.plan("v1").await.unwrap().unwrap(), cancelled);

    // Written at the current version, a plan moves on, one version per write.
    let mut current = cancelled.clone();
    current.answer = Some("That request was cancelled.".into());
    plans.save_plan(&mut current).await.unwrap();
    assert_eq!(current.version, 3);
    plans.save_plan(&mut current).await.unwrap();
    assert_eq!(current.version, 4);
    assert_eq!(plans.plan("v1").await.unwrap().unwrap(), current);
    let mut behind = PlanExecution {
        version: 3,
        ..current.clone()
    };
    assert!(is_stale(plans.save_plan(&mut behind).await));
}

/// Cancelling a member's open plans changes all of them or none: when one of them cannot
/// be read, the others are not cancelled either (nothing is half done while `/cancel`
/// reports a failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_cancel_open_plans_cancels_all_or_none() {
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", folder.path().join("t.db").display());
    let stores = storage::open(&url, 2).await.unwrap();
    let plans = &stores.plans;
    for id in ["plan-a", "plan-b", "plan-c"] {
        let mut open = plan(id, "alice", StepStatus::WaitingUser, 1_000);
        plans.save_plan(&mut open).await.unwrap();
    }
    // The middle one becomes unreadable (its JSON damaged behind hearth's back).
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("UPDATE plan_executions SET plan = '{not json' WHERE plan_id = 'plan-b'")
        .execute(&pool)
        .await
        .unwrap();
    let refused = plans
        .cancel_open_plans(&key("http:alice"), &member("alice"), 5_000)
        .await;
    assert!(
        matches!(refused, Err(StorageError::Corrupt(_))),
        "{refused:?}"
    );
    // A write in the same commit as the failed cancel still lands.
    let mut other = plan("plan-d", "bob", StepStatus::WaitingUser, 1_000);
    plans.save_plan(&mut other).await.unwrap();
    for id in ["plan-a", "plan-c"] {
        let stored = plans.plan(id).await.unwrap().unwrap();
        assert_eq!(
            stored.status(),
            StepStatus::WaitingUser,
            "{id} was cancelled by a cancel that failed"
        );
        assert_eq!(stored.version, 1);
    }
    let open: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM plan_executions WHERE status = 'waiting_user' \
         AND member_id = 'alice'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(open, 3);
    assert!(plans.plan("plan-d").await.unwrap().is_some());
}
