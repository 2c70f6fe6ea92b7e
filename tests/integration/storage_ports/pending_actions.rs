//! The `PendingActions` port, asking: a turn suspended on a confirmation (refused for a
//! message that is unknown or finished, or an id used before), answered only by its member,
//! only where it was asked and only before its expiry, once; the open ones listed oldest
//! first. The fixtures of confirmations live here.

use hearth::ids::ConversationKey;
use hearth::ports::{
    Acceptance, AnswerPlace, AnswerRefused, Decision, InboxStatus, OpenConfirmation,
    PendingConfirmation,
};
use hearth::storage::Stores;
use serde_json::json;

use super::{T0, expect_new, ids, inbound, key, member, record_of, turn_for};

adapter_suite!(
    pending_suspend_marks_the_message_suspended,
    pending_suspend_refuses_unknown_or_finished_messages,
    pending_suspend_refuses_a_used_confirmation_id,
    pending_answer_by_the_member_before_expiry,
    pending_answer_by_another_member_is_refused,
    pending_answer_from_elsewhere_is_as_if_it_did_not_exist,
    pending_answer_twice_unknown_and_expired,
    pending_open_lists_oldest_first_by_creation_time,
);

/// How long a confirmation waits in these checks.
pub(super) const WAIT_MS: i64 = 60_000;

/// A confirmation for `alice`'s message `inbox_id`, with arguments and a turn state
/// awkward enough that only an exact round trip keeps them equal.
pub(super) fn confirmation(id: &str, inbox_id: &str, created_at_ms: i64) -> PendingConfirmation {
    PendingConfirmation {
        id: id.parse().unwrap(),
        inbox_id: inbox_id.to_string(),
        member_id: member("alice"),
        conversation: key("telegram:family-chat"),
        profile_id: "family".to_string(),
        tool_name: "calendar_delete".to_string(),
        arguments: json!({
            "event_id": format!("ev-{id}"),
            "notify": true,
            "attendees": ["bob", "carol"],
            "note": "Ça va? \"quotes\", 'apostrophes', 🏠 and\nnewlines",
            "count": 9_007_199_254_740_993_u64,
            "ratio": 0.125,
            "nothing": null,
            "nested": {"empty": {}, "list": []},
        }),
        prompt: format!("Delete the event ev-{id} and tell Bob and Carol?"),
        turn_state: json!({
            "round": 2,
            "messages": [
                {"role": "user", "content": format!("please cancel ev-{id}")},
                {"role": "assistant", "tool_calls": [
                    {"id": "call-7", "name": "calendar_delete", "arguments": {"event_id": id}}
                ]},
            ],
            "pending_call": "call-7",
        }),
        expires_at_ms: created_at_ms + WAIT_MS,
        created_at_ms,
        approvers: Vec::new(),
    }
}

/// Accept `alice`'s message `inbox_id` and suspend its turn on the confirmation `id`.
pub(super) async fn suspended(
    stores: &Stores,
    inbox_id: &str,
    id: &str,
    created_at_ms: i64,
) -> PendingConfirmation {
    expect_new(stores, &inbound(inbox_id, "telegram", None)).await;
    let confirmation = confirmation(id, inbox_id, created_at_ms);
    stores.pending.suspend(&confirmation, &[]).await.unwrap();
    confirmation
}

/// `answer`, with the storage error unwrapped.
pub(super) async fn answer(
    stores: &Stores,
    id: &str,
    member_id: &str,
    approve: bool,
    now_ms: i64,
) -> Result<PendingConfirmation, AnswerRefused> {
    stores
        .pending
        .answer(
            &id.parse().unwrap(),
            &member(member_id),
            &AnswerPlace::Channel("telegram".into()),
            approve,
            now_ms,
        )
        .await
        .unwrap_or_else(|error| panic!("answer({id:?}, {member_id:?}): {error}"))
}

pub(super) async fn open_confirmations(stores: &Stores) -> Vec<OpenConfirmation> {
    stores.pending.open().await.unwrap()
}

/// The open confirmations as (id, decision), oldest first.
pub(super) async fn open_decisions(stores: &Stores) -> Vec<(String, Option<Decision>)> {
    open_confirmations(stores)
        .await
        .into_iter()
        .map(|open| (open.confirmation.id.to_string(), open.decision))
        .collect()
}

pub(super) fn decisions(pairs: &[(&str, Option<Decision>)]) -> Vec<(String, Option<Decision>)> {
    pairs
        .iter()
        .map(|(id, decision)| (id.to_string(), *decision))
        .collect()
}

pub(super) fn open_one(
    confirmation: &PendingConfirmation,
    decision: Option<Decision>,
) -> OpenConfirmation {
    OpenConfirmation {
        confirmation: confirmation.clone(),
        decision,
    }
}

async fn pending_suspend_marks_the_message_suspended(stores: &Stores) {
    let waiting = inbound("s-2", "telegram", None);
    expect_new(stores, &inbound("s-1", "telegram", None)).await;
    expect_new(stores, &waiting).await;
    assert!(open_confirmations(stores).await.is_empty());

    let asked = confirmation("c-s-1", "s-1", T0);
    stores.pending.suspend(&asked, &[]).await.unwrap();

    let record = record_of(stores, "s-1").await;
    assert_eq!(record.status, InboxStatus::Suspended);
    assert_eq!(record.inbound, inbound("s-1", "telegram", None));
    assert_eq!(record.attempts, 0);
    assert_eq!(record.reply, None);
    assert_eq!(record.error, None);
    // A suspended turn is resumed by its answer, not by the queue.
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["s-2"]);
    assert_eq!(record_of(stores, "s-2").await.status, InboxStatus::Accepted);

    // Stored exactly as given, waiting for alice.
    assert_eq!(open_confirmations(stores).await, [open_one(&asked, None)]);

    // A redelivery of the suspended message is a duplicate reporting its status.
    match stores
        .inbox
        .accept(&inbound("s-1", "telegram", None))
        .await
        .unwrap()
    {
        Acceptance::Duplicate(original) => assert_eq!(original.status, InboxStatus::Suspended),
        Acceptance::New => panic!("a suspended message was accepted again"),
    }
}

async fn pending_suspend_refuses_unknown_or_finished_messages(stores: &Stores) {
    // Never accepted.
    let result = stores
        .pending
        .suspend(&confirmation("c-ghost", "u-ghost", T0), &[])
        .await;
    assert!(result.is_err(), "suspending an unknown message: {result:?}");
    assert_eq!(stores.inbox.get("u-ghost").await.unwrap(), None);

    // Answered already.
    let done = inbound("u-1", "telegram", None);
    expect_new(stores, &done).await;
    stores
        .inbox
        .complete("u-1", &turn_for(&done, "all done"))
        .await
        .unwrap();
    let result = stores
        .pending
        .suspend(&confirmation("c-answered", "u-1", T0 + 1), &[])
        .await;
    assert!(
        result.is_err(),
        "suspending an answered message: {result:?}"
    );
    let record = record_of(stores, "u-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("all done"));

    // Given up on.
    expect_new(stores, &inbound("u-2", "telegram", None)).await;
    stores
        .inbox
        .give_up("u-2", "broken", "sorry", None)
        .await
        .unwrap();
    let result = stores
        .pending
        .suspend(&confirmation("c-failed", "u-2", T0 + 2), &[])
        .await;
    assert!(result.is_err(), "suspending a failed message: {result:?}");
    assert_eq!(record_of(stores, "u-2").await.status, InboxStatus::Failed);

    // Nothing of the refused confirmations was stored.
    assert!(open_confirmations(stores).await.is_empty());
    for id in ["c-ghost", "c-answered", "c-failed"] {
        assert_eq!(
            answer(stores, id, "alice", true, T0 + 10).await,
            Err(AnswerRefused::Unknown),
            "{id}"
        );
        assert_eq!(
            stores.pending.consume(&id.parse().unwrap()).await.unwrap(),
            None,
            "{id}"
        );
    }
    assert!(
        stores
            .pending
            .expire_due(i64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(open_confirmations(stores).await.is_empty());
}

/// A confirmation id names one confirmation: suspending under an id already stored is
/// refused, and the refused suspension leaves its message accepted (on SQLite the
/// primary key refuses it and the savepoint rolls the inbox update back).
async fn pending_suspend_refuses_a_used_confirmation_id(stores: &Stores) {
    let first = suspended(stores, "x-1", "c-x", T0).await;
    expect_new(stores, &inbound("x-2", "telegram", None)).await;

    let result = stores
        .pending
        .suspend(&confirmation("c-x", "x-2", T0 + 1), &[])
        .await;
    assert!(result.is_err(), "suspending under a used id: {result:?}");
    assert_eq!(record_of(stores, "x-2").await.status, InboxStatus::Accepted);
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["x-2"]);
    assert_eq!(open_confirmations(stores).await, [open_one(&first, None)]);
    assert_eq!(
        answer(stores, "c-x", "alice", true, T0 + 10).await,
        Ok(first.clone())
    );
}

async fn pending_answer_by_the_member_before_expiry(stores: &Stores) {
    let approved = suspended(stores, "a-1", "c-a-1", T0).await;
    let denied = suspended(stores, "a-2", "c-a-2", T0 + 1).await;

    assert_eq!(
        answer(stores, "c-a-1", "alice", true, T0 + 1_000).await,
        Ok(approved.clone()),
        "the approved confirmation comes back exactly as stored"
    );
    // The last millisecond before expiry still counts.
    assert_eq!(
        answer(stores, "c-a-2", "alice", false, denied.expires_at_ms - 1).await,
        Ok(denied.clone())
    );

    assert_eq!(
        open_confirmations(stores).await,
        [
            open_one(&approved, Some(Decision::Approved)),
            open_one(&denied, Some(Decision::Denied)),
        ]
    );
    // Answering does not resume the turn by itself: the messages stay suspended.
    for id in ["a-1", "a-2"] {
        assert_eq!(record_of(stores, id).await.status, InboxStatus::Suspended);
    }
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());
}

async fn pending_answer_by_another_member_is_refused(stores: &Stores) {
    let asked = suspended(stores, "n-1", "c-n-1", T0).await;

    for approve in [true, false] {
        assert_eq!(
            answer(stores, "c-n-1", "bob", approve, T0 + 1_000).await,
            Err(AnswerRefused::NotYours)
        );
    }
    // Member ids are compared exactly.
    assert_eq!(
        answer(stores, "c-n-1", "Alice", true, T0 + 1_000).await,
        Err(AnswerRefused::NotYours)
    );
    assert_eq!(open_confirmations(stores).await, [open_one(&asked, None)]);
    assert_eq!(
        stores
            .pending
            .consume(&"c-n-1".parse().unwrap())
            .await
            .unwrap(),
        None
    );

    // The right member still can.
    assert_eq!(
        answer(stores, "c-n-1", "alice", false, T0 + 2_000).await,
        Ok(asked.clone())
    );
    assert_eq!(
        answer(stores, "c-n-1", "bob", true, T0 + 3_000).await,
        Err(AnswerRefused::NotYours),
        "still not bob's once answered"
    );
    assert_eq!(
        open_confirmations(stores).await,
        [open_one(&asked, Some(Decision::Denied))]
    );
}

async fn pending_answer_from_elsewhere_is_as_if_it_did_not_exist(stores: &Stores) {
    // Asked in telegram chat "family-chat".
    let asked = suspended(stores, "w-1", "c-w-1", T0).await;
    let from = |channel: &str, conversation: Option<&str>| match conversation {
        Some(conversation) => {
            AnswerPlace::Conversation(ConversationKey::new(channel, conversation).unwrap())
        }
        None => AnswerPlace::Channel(channel.to_string()),
    };
    for place in [
        from("http", None),
        from("matrix", Some("family-chat")),
        from("telegram", Some("other-chat")),
        from("telegram", Some("family")),
        from("telegram", Some("family-chat-2")),
    ] {
        let refused = stores
            .pending
            .answer(
                &"c-w-1".parse().unwrap(),
                &member("alice"),
                &place,
                true,
                T0 + 1_000,
            )
            .await
            .unwrap();
        assert_eq!(refused, Err(AnswerRefused::Unknown), "{place:?}");
    }
    assert_eq!(open_confirmations(stores).await, [open_one(&asked, None)]);
    // Where it was asked, it is answered.
    let here = stores
        .pending
        .answer(
            &"c-w-1".parse().unwrap(),
            &member("alice"),
            &from("telegram", Some("family-chat")),
            true,
            T0 + 1_000,
        )
        .await
        .unwrap();
    assert_eq!(here, Ok(asked.clone()));
    // A topic or thread within the chat counts as the chat.
    let mut in_topic = confirmation("c-w-2", "w-2", T0);
    in_topic.conversation = key("telegram:family-chat/7");
    expect_new(stores, &inbound("w-2", "telegram", None)).await;
    stores.pending.suspend(&in_topic, &[]).await.unwrap();
    let here = stores
        .pending
        .answer(
            &"c-w-2".parse().unwrap(),
            &member("alice"),
            &from("telegram", Some("family-chat")),
            false,
            T0 + 1_000,
        )
        .await
        .unwrap();
    assert!(here.is_ok(), "{here:?}");
}

async fn pending_answer_twice_unknown_and_expired(stores: &Stores) {
    let twice = suspended(stores, "t-1", "c-t-1", T0).await;
    assert_eq!(
        answer(stores, "c-t-1", "alice", true, T0 + 1_000).await,
        Ok(twice.clone())
    );
    assert_eq!(
        answer(stores, "c-t-1", "alice", true, T0 + 2_000).await,
        Err(AnswerRefused::InProgress)
    );
    assert_eq!(
        answer(stores, "c-t-1", "alice", false, T0 + 3_000).await,
        Err(AnswerRefused::InProgress),
        "a denial cannot overturn an approval"
    );
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[("c-t-1", Some(Decision::Approved))])
    );

    // A denial cannot be turned into an approval either.
    suspended(stores, "t-2", "c-t-2", T0 + 1).await;
    assert!(
        answer(stores, "c-t-2", "alice", false, T0 + 1_000)
            .await
            .is_ok()
    );
    assert_eq!(
        answer(stores, "c-t-2", "alice", true, T0 + 2_000).await,
        Err(AnswerRefused::InProgress)
    );

    // (An empty id never reaches a store: it is no `ConfirmationId`.)
    for id in ["no-such-confirmation", "C-T-1"] {
        assert_eq!(
            answer(stores, id, "alice", true, T0 + 1_000).await,
            Err(AnswerRefused::Unknown),
            "{id:?}"
        );
    }

    // Too late: at its expiry and after it.
    let late = suspended(stores, "t-3", "c-t-3", T0 + 2).await;
    for now_ms in [late.expires_at_ms, late.expires_at_ms + 1, i64::MAX] {
        for approve in [true, false] {
            assert_eq!(
                answer(stores, "c-t-3", "alice", approve, now_ms).await,
                Err(AnswerRefused::Expired),
                "answered at {now_ms}"
            );
        }
    }
    assert_eq!(
        open_decisions(stores).await[..2],
        decisions(&[
            ("c-t-1", Some(Decision::Approved)),
            ("c-t-2", Some(Decision::Denied)),
        ])
    );
    let late_decision = open_decisions(stores).await[2].clone();
    assert_eq!(late_decision.0, "c-t-3");
    assert!(
        matches!(late_decision.1, None | Some(Decision::Expired)),
        "a late answer decides nothing: {late_decision:?}"
    );
    // Once its turn went on with it, it is simply answered.
    stores
        .pending
        .consume(&"c-t-1".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(
        answer(stores, "c-t-1", "alice", true, T0 + 3_000).await,
        Err(AnswerRefused::AlreadyAnswered)
    );
}

/// `open` lists confirmations oldest first by `created_at_ms`, even when concurrent
/// turns suspended them in another order.
async fn pending_open_lists_oldest_first_by_creation_time(stores: &Stores) {
    suspended(stores, "o-1", "c-o-newer", T0 + 500).await;
    suspended(stores, "o-2", "c-o-older", T0 + 100).await;
    suspended(stores, "o-3", "c-o-newest", T0 + 900).await;
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[
            ("c-o-older", None),
            ("c-o-newer", None),
            ("c-o-newest", None),
        ])
    );
}
