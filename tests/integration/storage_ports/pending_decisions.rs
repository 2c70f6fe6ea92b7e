//! The `PendingActions` port, deciding: confirmations expired when due (oldest first), a
//! decision handed out once to the resumed turn even when answers and consumes race, the
//! suspended message completed after it, a resumed turn asking again, and the turns that
//! stopped after using their decision found at start-up.

use hearth::ports::{Acceptance, AnswerPlace, AnswerRefused, Decision, InboxStatus, TurnRecord};
use hearth::storage::Stores;

use super::pending_actions::{
    WAIT_MS, answer, confirmation, decisions, open_confirmations, open_decisions, open_one,
    suspended,
};
use super::{T0, expect_new, inbound, member, record_of, turn_for};

adapter_suite!(
    pending_expire_due_answers_only_the_due_pending_ones,
    pending_expire_due_lists_oldest_first_by_creation_time,
    pending_consume_returns_the_decision_once,
    pending_racing_answers_and_consumes_have_one_winner,
    pending_complete_after_consume_answers_the_suspended_message,
    pending_a_resumed_turn_can_ask_again,
    pending_interrupted_lists_latest_consumed_of_suspended_messages,
);

async fn pending_expire_due_answers_only_the_due_pending_ones(stores: &Stores) {
    // Created in this order; due at T0 + 60_000, T0 + 60_004 and T0 + 65_000.
    let due_first = suspended(stores, "e-1", "c-e-1", T0).await;
    let answered = suspended(stores, "e-2", "c-e-2", T0 + 2).await;
    let mut future = confirmation("c-e-3", "e-3", T0 + 3);
    future.expires_at_ms = T0 + 65_000;
    expect_new(stores, &inbound("e-3", "telegram", None)).await;
    stores.pending.suspend(&future, &[]).await.unwrap();
    let due_last = suspended(stores, "e-4", "c-e-4", T0 + 4).await;
    assert!(
        answer(stores, "c-e-2", "alice", true, T0 + 100)
            .await
            .is_ok()
    );

    assert!(
        stores
            .pending
            .expire_due(T0 + WAIT_MS - 1)
            .await
            .unwrap()
            .is_empty(),
        "nothing is due a millisecond early"
    );
    // Due exactly at its expiry, like `answer`'s refusal.
    let now_ms = due_last.expires_at_ms;
    assert_eq!(
        stores.pending.expire_due(now_ms).await.unwrap(),
        [due_first.clone(), due_last.clone()]
    );
    assert_eq!(
        open_confirmations(stores).await,
        [
            open_one(&due_first, Some(Decision::Expired)),
            open_one(&answered, Some(Decision::Approved)),
            open_one(&future, None),
            open_one(&due_last, Some(Decision::Expired)),
        ]
    );

    // Expired is final, whatever the clock says.
    for at_ms in [T0 + 1, now_ms + 1] {
        assert_eq!(
            answer(stores, "c-e-1", "alice", true, at_ms).await,
            Err(AnswerRefused::Expired),
            "answered at {at_ms}"
        );
    }
    assert!(stores.pending.expire_due(now_ms).await.unwrap().is_empty());
    assert!(
        stores
            .pending
            .expire_due(future.expires_at_ms - 1)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        stores
            .pending
            .expire_due(future.expires_at_ms)
            .await
            .unwrap(),
        [future.clone()]
    );
    assert!(
        stores
            .pending
            .expire_due(i64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // The expired turns resume with `Expired`; the answered one keeps its decision.
    assert_eq!(
        stores
            .pending
            .consume(&"c-e-1".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Expired)
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-e-2".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[
            ("c-e-3", Some(Decision::Expired)),
            ("c-e-4", Some(Decision::Expired)),
        ])
    );
    // Expiring never touches the inbox.
    for id in ["e-1", "e-2", "e-3", "e-4"] {
        assert_eq!(record_of(stores, id).await.status, InboxStatus::Suspended);
    }
}

/// `expire_due` returns the confirmations it expired oldest first by `created_at_ms`,
/// as SQLite sorts them, even when concurrent turns suspended them in another order.
async fn pending_expire_due_lists_oldest_first_by_creation_time(stores: &Stores) {
    suspended(stores, "o-1", "c-o-newer", T0 + 500).await;
    suspended(stores, "o-2", "c-o-older", T0 + 100).await;
    let expired = stores.pending.expire_due(i64::MAX).await.unwrap();
    let expired: Vec<&str> = expired.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(expired, ["c-o-older", "c-o-newer"]);
}

async fn pending_consume_returns_the_decision_once(stores: &Stores) {
    suspended(stores, "k-1", "c-k-1", T0).await;
    suspended(stores, "k-2", "c-k-2", T0 + 1).await;
    let waiting = suspended(stores, "k-3", "c-k-3", T0 + 2).await;
    assert!(
        answer(stores, "c-k-1", "alice", true, T0 + 10)
            .await
            .is_ok()
    );
    assert!(
        answer(stores, "c-k-2", "alice", false, T0 + 10)
            .await
            .is_ok()
    );

    // Nothing to resume with while it waits.
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-3".parse().unwrap())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .pending
            .consume(&"no-such-id".parse().unwrap())
            .await
            .unwrap(),
        None
    );

    assert_eq!(
        stores
            .pending
            .consume(&"c-k-1".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-1".parse().unwrap())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-2".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Denied)
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-2".parse().unwrap())
            .await
            .unwrap(),
        None
    );
    assert_eq!(open_confirmations(stores).await, [open_one(&waiting, None)]);

    // A consumed confirmation stays answered: it cannot be answered again.
    assert_eq!(
        answer(stores, "c-k-1", "alice", false, T0 + 20).await,
        Err(AnswerRefused::AlreadyAnswered)
    );
    assert_eq!(
        answer(stores, "c-k-1", "bob", false, T0 + 20).await,
        Err(AnswerRefused::NotYours)
    );
    assert_eq!(
        stores.pending.expire_due(i64::MAX - 1).await.unwrap(),
        [waiting]
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-1".parse().unwrap())
            .await
            .unwrap(),
        None
    );

    // The one that waited expired meanwhile, and is consumed like the others.
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-3".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Expired)
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-k-3".parse().unwrap())
            .await
            .unwrap(),
        None
    );
    assert!(open_confirmations(stores).await.is_empty());
}

async fn pending_racing_answers_and_consumes_have_one_winner(stores: &Stores) {
    suspended(stores, "r-1", "c-r-1", T0).await;

    let mut answers = Vec::new();
    for n in 0..40 {
        let pending = stores.pending.clone();
        let approve = n % 2 == 0;
        answers.push(tokio::spawn(async move {
            let outcome = pending
                .answer(
                    &"c-r-1".parse().unwrap(),
                    &member("alice"),
                    &AnswerPlace::Channel("telegram".into()),
                    approve,
                    T0 + 1_000,
                )
                .await
                .unwrap();
            (approve, outcome)
        }));
    }
    let mut winners = Vec::new();
    for answer in answers {
        match answer.await.unwrap() {
            (approve, Ok(_)) => winners.push(approve),
            // Answered and not yet taken by its turn: being worked on.
            (_, Err(refused)) => assert_eq!(refused, AnswerRefused::InProgress),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one answer wins");
    let decision = if winners[0] {
        Decision::Approved
    } else {
        Decision::Denied
    };
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[("c-r-1", Some(decision))])
    );

    let mut consumes = Vec::new();
    for _ in 0..40 {
        let pending = stores.pending.clone();
        consumes.push(tokio::spawn(async move {
            pending.consume(&"c-r-1".parse().unwrap()).await.unwrap()
        }));
    }
    let mut resumed = Vec::new();
    for consume in consumes {
        if let Some(decision) = consume.await.unwrap() {
            resumed.push(decision);
        }
    }
    assert_eq!(resumed, [decision], "the turn resumes exactly once");
    assert!(open_confirmations(stores).await.is_empty());
}

async fn pending_complete_after_consume_answers_the_suspended_message(stores: &Stores) {
    let message = inbound("d-1", "telegram", None);
    expect_new(stores, &message).await;
    stores
        .pending
        .suspend(&confirmation("c-d-1", "d-1", T0), &[])
        .await
        .unwrap();
    assert!(answer(stores, "c-d-1", "alice", true, T0 + 5).await.is_ok());
    assert_eq!(
        stores
            .pending
            .consume(&"c-d-1".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Approved)
    );

    let turn = turn_for(&message, "Deleted, and Bob and Carol know.");
    stores.inbox.complete("d-1", &turn).await.unwrap();

    let record = record_of(stores, "d-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(
        record.reply.as_deref(),
        Some("Deleted, and Bob and Carol know.")
    );
    assert_eq!(record.error, None);
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());
    let history = stores
        .memory
        .recent(&message.conversation, 50, 0)
        .await
        .unwrap();
    assert_eq!(
        history,
        [turn.messages[0].clone(), turn.messages[3].clone()],
        "user question and final answer, in order"
    );

    // Finished: neither completed again nor suspended again.
    let again = stores
        .inbox
        .complete("d-1", &turn_for(&message, "again"))
        .await;
    assert!(again.is_err(), "completing an answered message: {again:?}");
    let result = stores
        .pending
        .suspend(&confirmation("c-d-2", "d-1", T0 + 10), &[])
        .await;
    assert!(
        result.is_err(),
        "suspending an answered message: {result:?}"
    );
    assert!(open_confirmations(stores).await.is_empty());
    assert_eq!(record_of(stores, "d-1").await.status, InboxStatus::Answered);
}

/// A turn resumed after one confirmation may need another before it finishes.
async fn pending_a_resumed_turn_can_ask_again(stores: &Stores) {
    let message = inbound("g-1", "telegram", None);
    expect_new(stores, &message).await;
    let first = confirmation("c-g-1", "g-1", T0);
    stores.pending.suspend(&first, &[]).await.unwrap();
    assert!(answer(stores, "c-g-1", "alice", true, T0 + 5).await.is_ok());
    assert_eq!(
        stores
            .pending
            .consume(&"c-g-1".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Approved)
    );

    let second = confirmation("c-g-2", "g-1", T0 + 10);
    stores.pending.suspend(&second, &[]).await.unwrap();
    assert_eq!(
        record_of(stores, "g-1").await.status,
        InboxStatus::Suspended
    );
    assert_eq!(open_confirmations(stores).await, [open_one(&second, None)]);
    assert!(
        answer(stores, "c-g-2", "alice", false, T0 + 15)
            .await
            .is_ok()
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-g-2".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Denied)
    );
    stores
        .inbox
        .complete("g-1", &turn_for(&message, "Done, but I kept the event."))
        .await
        .unwrap();
    assert_eq!(record_of(stores, "g-1").await.status, InboxStatus::Answered);
}

async fn pending_interrupted_lists_latest_consumed_of_suspended_messages(stores: &Stores) {
    let message = inbound("int-1", "http", None);
    assert_eq!(
        stores.inbox.accept(&message).await.unwrap(),
        Acceptance::New
    );
    let first = confirmation("c-int-1", "int-1", T0);
    stores.pending.suspend(&first, &[]).await.unwrap();
    assert!(
        stores.pending.interrupted().await.unwrap().is_empty(),
        "pending is not interrupted"
    );
    stores
        .pending
        .answer(
            &"c-int-1".parse().unwrap(),
            &member("alice"),
            &AnswerPlace::Channel("telegram".into()),
            true,
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    assert!(
        stores.pending.interrupted().await.unwrap().is_empty(),
        "answered is not interrupted"
    );
    assert_eq!(
        stores
            .pending
            .consume(&"c-int-1".parse().unwrap())
            .await
            .unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(
        stores.pending.interrupted().await.unwrap(),
        vec![first.clone()]
    );

    // The resumed turn asked again: the newer confirmation is the one that counts.
    let second = confirmation("c-int-2", "int-1", T0 + 500);
    stores.pending.suspend(&second, &[]).await.unwrap();
    assert!(stores.pending.interrupted().await.unwrap().is_empty());

    // A finished turn is not interrupted, whatever its confirmations.
    stores
        .pending
        .answer(
            &"c-int-2".parse().unwrap(),
            &member("alice"),
            &AnswerPlace::Channel("telegram".into()),
            false,
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    stores
        .pending
        .consume(&"c-int-2".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(
        stores.pending.interrupted().await.unwrap(),
        vec![second.clone()]
    );
    let done = TurnRecord {
        conversation_key: message.conversation.clone(),
        messages: Vec::new(),
        reply: "done".into(),
        outgoing: None,
    };
    stores.inbox.complete("int-1", &done).await.unwrap();
    assert!(stores.pending.interrupted().await.unwrap().is_empty());
}
