//! Checks of the storage ports' suite (`storage_ports.rs` runs each against every adapter)
//! for approvals: a suspension is stored with every message asking it, or with none; a
//! message's waiting confirmation is found by the message.

use hearth::ports::{AnswerPlace, Decision};
use hearth::storage::Stores;

use crate::storage_ports::{T0, confirmation, expect_new, inbound, outgoing, record_of};

/// Every undelivered row of `channel` as (id, conversation, text).
async fn queued(stores: &Stores, channel: &str) -> Vec<(i64, String, String)> {
    stores
        .outbox
        .undelivered(channel)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| (entry.id, entry.message.conversation_id, entry.message.text))
        .collect()
}

/// A child's request escalated to two parents is stored with the child's notice and each
/// parent's prompt, in one write: all of them, in the order given, or (refused) none.
pub(crate) async fn pending_suspend_stores_every_prompt_with_it(stores: &Stores) {
    expect_new(stores, &inbound("e-1", "telegram", None)).await;
    let mut escalated = confirmation("c-e-1", "e-1", T0);
    escalated.approvers = vec!["carol".into(), "dave".into()];
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
pub(crate) async fn pending_waiting_for_finds_the_message_s_unanswered_confirmation(
    stores: &Stores,
) {
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
            "c-w-1",
            "alice",
            &AnswerPlace::new("telegram", None),
            true,
            T0 + 5,
        )
        .await
        .unwrap();
    assert!(answered.is_ok(), "{answered:?}");
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), None, "answered");
    assert_eq!(
        pending.consume("c-w-1").await.unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), None, "consumed");
    // Its turn resumed and asks again: the new question is the one waited for.
    let again = confirmation("c-w-1b", "w-1", T0 + 10);
    pending.suspend(&again, &[]).await.unwrap();
    assert_eq!(pending.waiting_for("w-1").await.unwrap(), Some(again));
}
