//! The `Outbox` port: rows delivered in order per channel and forgotten once delivered, written
//! with what caused them, and a message stored once under its once key.

use hearth::ports::{OutgoingKind, OutgoingMessage, TurnRecord};
use hearth::storage::Stores;

use super::pending_actions::confirmation;
use super::{T0, expect_new, inbound, member, turn_for};

adapter_suite!(
    outbox_delivers_in_order_and_forgets_what_was_delivered,
    outbox_stores_a_message_once_under_its_key,
    outbox_rows_are_written_with_what_caused_them,
);

pub(super) fn outgoing(channel: &str, conversation: &str, text: &str) -> OutgoingMessage {
    OutgoingMessage {
        conversation: hearth::ids::ConversationKey::new(channel, conversation).unwrap(),
        inbox_id: Some("m-x".into()),
        text: text.into(),
        kind: OutgoingKind::Reply,
        reply_to_event: Some("1001:7".into()),
    }
}

async fn outbox_delivers_in_order_and_forgets_what_was_delivered(stores: &Stores) {
    let outbox = &stores.outbox;
    let first = outbox
        .enqueue(&outgoing("telegram", "1001", "one"))
        .await
        .unwrap();
    let prompt = OutgoingMessage {
        kind: OutgoingKind::Prompt {
            prompt: "c-1".parse().unwrap(),
            member_id: member("alice"),
        },
        ..outgoing("telegram", "1001", "Run it? Ça va 🏠")
    };
    let second = outbox.enqueue(&prompt).await.unwrap();
    let other = outbox
        .enqueue(&outgoing("matrix", "!room", "elsewhere"))
        .await
        .unwrap();
    let third = outbox
        .enqueue(&outgoing("telegram", "1002", "three"))
        .await
        .unwrap();
    assert!(first < second && second < other && other < third);
    let pending = outbox.undelivered("telegram").await.unwrap();
    let ids: Vec<i64> = pending.iter().map(|entry| entry.id).collect();
    assert_eq!(ids, [first, second, third]);
    assert_eq!(pending[1].message, prompt);
    assert_eq!((pending[0].attempts, pending[0].parts_delivered), (0, 0));

    outbox.part_delivered(first, 2).await.unwrap();
    assert_eq!(
        outbox
            .attempt_failed(first, "502 bad gateway")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        outbox
            .attempt_failed(first, "502 bad gateway")
            .await
            .unwrap(),
        2
    );
    let again = &outbox.undelivered("telegram").await.unwrap()[0];
    assert_eq!(
        (again.id, again.attempts, again.parts_delivered),
        (first, 2, 2)
    );

    outbox.delivered(first, Some("1001:55")).await.unwrap();
    outbox.abandon(third, "chat not found").await.unwrap();
    let left: Vec<i64> = outbox
        .undelivered("telegram")
        .await
        .unwrap()
        .iter()
        .map(|entry| entry.id)
        .collect();
    assert_eq!(left, [second]);
    assert_eq!(outbox.undelivered("matrix").await.unwrap().len(), 1);
}

async fn outbox_stores_a_message_once_under_its_key(stores: &Stores) {
    let outbox = &stores.outbox;
    let said = outgoing("telegram", "1001", "I'll check order O-1.");
    let first = outbox.enqueue_once("plan-1.1", &said).await.unwrap();
    assert!(first.is_some());
    // Said again by a retry, pending or delivered: not stored twice.
    assert_eq!(outbox.enqueue_once("plan-1.1", &said).await.unwrap(), None);
    outbox.delivered(first.unwrap(), None).await.unwrap();
    assert_eq!(outbox.enqueue_once("plan-1.1", &said).await.unwrap(), None);
    assert!(outbox.undelivered("telegram").await.unwrap().is_empty());
    // Another key, or no key, is another message, in order after it.
    let other = outbox
        .enqueue_once("plan-2.1", &said)
        .await
        .unwrap()
        .unwrap();
    let plain = outbox.enqueue(&said).await.unwrap();
    assert!(first.unwrap() < other && other < plain);
    assert_eq!(outbox.undelivered("telegram").await.unwrap().len(), 2);
}

async fn outbox_rows_are_written_with_what_caused_them(stores: &Stores) {
    for id in ["o-1", "o-2", "o-3"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
    }
    let message = inbound("o-1", "telegram", None);
    let turn = TurnRecord {
        outgoing: Some(outgoing("telegram", "family-chat", "the answer")),
        ..turn_for(&message, "the answer")
    };
    let answer = stores.inbox.complete("o-1", &turn).await.unwrap();
    // Answered twice: refused, and nothing more is queued.
    assert!(stores.inbox.complete("o-1", &turn).await.is_err());
    let failed = outgoing("telegram", "family-chat", "sorry");
    let notice = stores
        .inbox
        .give_up("o-2", "broken", "sorry", Some(&failed))
        .await
        .unwrap();
    let prompt = outgoing("telegram", "family-chat", "Run it?");
    let asked = stores
        .pending
        .suspend(&confirmation("c-o-3", "o-3", T0), &[prompt])
        .await
        .unwrap();
    let asked = asked.first().copied();
    let queued: Vec<(Option<i64>, String)> = stores
        .outbox
        .undelivered("telegram")
        .await
        .unwrap()
        .into_iter()
        .map(|entry| (Some(entry.id), entry.message.text))
        .collect();
    assert_eq!(
        queued,
        [
            (answer, "the answer".to_string()),
            (notice, "sorry".to_string()),
            (asked, "Run it?".to_string()),
        ]
    );
    // Nothing to deliver: nothing queued.
    expect_new(stores, &inbound("o-4", "http", None)).await;
    let none = stores
        .inbox
        .complete("o-4", &turn_for(&inbound("o-4", "http", None), "x"))
        .await
        .unwrap();
    assert_eq!(none, None);
}
