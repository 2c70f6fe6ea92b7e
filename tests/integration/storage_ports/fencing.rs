//! Writes fenced by a conversation's lease (`ports::Fence`): the turn journal's save (the
//! start of every tool call among them), a turn's end (answered, suspended, given up) are
//! made only while the lease is still at the generation the writer holds; a worker whose
//! lease passed to another (it stalled past it, its clock ran ahead) is refused with
//! `StorageError::Fenced` and writes nothing, and the new holder's writes go on.

use futures::StreamExt;
use hearth::llm::Role;
use hearth::ports::{
    Fence, Inbound, InboxStatus, OutgoingKind, OutgoingMessage, StorageError, TurnRecord,
    WakeTopic, WakeUp,
};
use hearth::storage::Stores;
use serde_json::json;

use super::pending_actions::confirmation;
use super::{T0, entry, expect_new, inbound};

adapter_suite!(
    fencing_a_stale_generation_neither_journals_nor_starts_a_call,
    fencing_a_turn_ends_only_under_the_current_generation,
    fencing_a_lease_handed_back_fences_its_writes,
    fencing_a_turn_end_wakes_the_workers_only_when_it_ends,
);

const KEPT: i64 = 60_000;
const LEASE: &str = "conversation:telegram:family-chat";

/// `w1` held the conversation at a generation that ran out, then `w2` took it: both fences.
async fn taken_over(stores: &Stores) -> (Fence, Fence) {
    let leases = &stores.coordination;
    let old = leases
        .take_lease(LEASE, "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    // w1 stalls: its lease runs out (taken for no time at all), and w2 takes it over.
    leases
        .take_lease(LEASE, "w1", Some(old), 0)
        .await
        .unwrap()
        .unwrap();
    let new = leases
        .take_lease(LEASE, "w2", None, KEPT)
        .await
        .unwrap()
        .expect("a lease that ran out is taken over");
    let fence = |generation| Fence {
        lease: LEASE.to_string(),
        generation,
    };
    (fence(old), fence(new))
}

/// `message` answered with `reply`: its history (the member's text and the reply) and the
/// reply's outbox row.
fn answer(message: &Inbound, reply: &str) -> TurnRecord {
    let with_inbox = |mut entry: hearth::ports::HistoryEntry| {
        entry.inbox_id = Some(message.id.clone());
        entry
    };
    TurnRecord {
        conversation_key: message.conversation.clone(),
        messages: vec![
            with_inbox(entry(Role::User, &message.text, 10)),
            with_inbox(entry(Role::Assistant, reply, 11)),
        ],
        reply: reply.to_string(),
        outgoing: Some(OutgoingMessage {
            conversation: message.conversation.clone(),
            inbox_id: Some(message.id.clone()),
            text: reply.to_string(),
            kind: OutgoingKind::Reply,
            reply_to_event: None,
        }),
    }
}

fn refused(result: Result<impl std::fmt::Debug, StorageError>, fence: &Fence) {
    match result {
        Err(StorageError::Fenced { lease, generation }) => {
            assert_eq!((lease.as_str(), generation), (LEASE, fence.generation));
        }
        other => panic!("a write under a stale generation: {other:?}"),
    }
}

async fn fencing_a_stale_generation_neither_journals_nor_starts_a_call(stores: &Stores) {
    let journal = &stores.turn_journal;
    expect_new(stores, &inbound("f-1", "telegram", None)).await;
    let leases = &stores.coordination;
    let first = leases
        .take_lease(LEASE, "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    let held = Fence {
        lease: LEASE.to_string(),
        generation: first,
    };
    journal
        .save_turn_fenced("f-1", &json!({"rounds": 1}), Some(&held))
        .await
        .unwrap();
    let (old, new) = taken_over(stores).await;
    // The stalled worker wakes and marks a call in flight: refused, nothing written, so
    // the call never starts.
    refused(
        journal
            .save_turn_fenced(
                "f-1",
                &json!({"rounds": 1, "in_flight": "call-1"}),
                Some(&old),
            )
            .await,
        &old,
    );
    assert_eq!(
        journal.load_turn("f-1").await.unwrap(),
        Some(json!({"rounds": 1}))
    );
    // The worker holding it now goes on.
    journal
        .save_turn_fenced("f-1", &json!({"rounds": 2}), Some(&new))
        .await
        .unwrap();
    assert_eq!(
        journal.load_turn("f-1").await.unwrap(),
        Some(json!({"rounds": 2}))
    );
    // Without a lease at all (alone on the database) nothing is checked.
    journal
        .save_turn_fenced("f-1", &json!({"rounds": 3}), None)
        .await
        .unwrap();
}

async fn fencing_a_turn_ends_only_under_the_current_generation(stores: &Stores) {
    for id in ["f-answered", "f-suspended", "f-failed"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
    }
    let (old, new) = taken_over(stores).await;
    let message = inbound("f-answered", "telegram", None);
    let turn = answer(&message, "from the stalled worker");
    refused(
        stores
            .inbox
            .complete_fenced("f-answered", &turn, Some(&old))
            .await,
        &old,
    );
    refused(
        stores
            .pending
            .suspend_fenced(&confirmation("c-f", "f-suspended", T0), &[], Some(&old))
            .await,
        &old,
    );
    refused(
        stores
            .inbox
            .give_up_fenced("f-failed", "broken", "sorry", None, Some(&old))
            .await,
        &old,
    );
    // Nothing of the refused writes: the messages still wait, no history, no outbox row.
    let waiting = stores.inbox.unanswered().await.unwrap();
    assert_eq!(waiting.len(), 3, "{waiting:?}");
    assert!(
        stores
            .memory
            .recent(&message.conversation, 50, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        stores
            .outbox
            .undelivered("telegram")
            .await
            .unwrap()
            .is_empty()
    );
    // Under the current generation each ends once.
    let reply = answer(&message, "from the holder");
    let outbox_id = stores
        .inbox
        .complete_fenced("f-answered", &reply, Some(&new))
        .await
        .unwrap();
    assert!(outbox_id.is_some());
    stores
        .pending
        .suspend_fenced(&confirmation("c-f", "f-suspended", T0), &[], Some(&new))
        .await
        .unwrap();
    stores
        .inbox
        .give_up_fenced("f-failed", "broken", "sorry", None, Some(&new))
        .await
        .unwrap();
    let statuses: Vec<InboxStatus> = {
        let mut statuses = Vec::new();
        for id in ["f-answered", "f-suspended", "f-failed"] {
            statuses.push(stores.inbox.get(id).await.unwrap().unwrap().status);
        }
        statuses
    };
    assert_eq!(
        statuses,
        [
            InboxStatus::Answered,
            InboxStatus::Suspended,
            InboxStatus::Failed
        ]
    );
    let history = stores
        .memory
        .recent(&message.conversation, 50, 0)
        .await
        .unwrap();
    assert_eq!(
        super::contents(&history),
        ["text of f-answered", "from the holder"]
    );
    let outbox = stores.outbox.undelivered("telegram").await.unwrap();
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    assert_eq!(outbox[0].message.text, "from the holder");
    // Ended: a second end under the current generation is refused as ended, not fenced.
    match stores
        .inbox
        .complete_fenced("f-answered", &reply, Some(&new))
        .await
    {
        Err(StorageError::Corrupt(_)) => {}
        other => panic!("an ended turn ended again: {other:?}"),
    }
}

async fn fencing_a_lease_handed_back_fences_its_writes(stores: &Stores) {
    expect_new(stores, &inbound("f-2", "telegram", None)).await;
    let leases = &stores.coordination;
    let generation = leases
        .take_lease(LEASE, "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    let fence = Fence {
        lease: LEASE.to_string(),
        generation,
    };
    leases.release_lease(LEASE, "w1").await.unwrap();
    refused(
        stores
            .turn_journal
            .save_turn_fenced("f-2", &json!({"rounds": 1}), Some(&fence))
            .await,
        &fence,
    );
    // Taken again by the same worker: a new generation, and the old one stays refused.
    let again = leases
        .take_lease(LEASE, "w1", None, KEPT)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(again, generation);
    refused(
        stores
            .turn_journal
            .save_turn_fenced("f-2", &json!({"rounds": 1}), Some(&fence))
            .await,
        &fence,
    );
}

/// A turn's end sent with its wake-ups (`Inbox::complete_waking`): where the store sends
/// them (PostgreSQL, in the statement that ends the turn) every worker hears them once the
/// end is stored, and a refused end sends nothing; where it does not, nothing is sent and
/// the caller sends them after.
async fn fencing_a_turn_end_wakes_the_workers_only_when_it_ends(stores: &Stores) {
    let mut heard = stores.coordination.wake_ups().await.unwrap();
    expect_new(stores, &inbound("f-woken", "http", None)).await;
    let (old, new) = taken_over(stores).await;
    let message = inbound("f-woken", "http", None);
    let stale = WakeUp::new(WakeTopic::Answered, "from the stalled worker");
    refused(
        stores
            .inbox
            .complete_waking("f-woken", &answer(&message, "stale"), Some(&old), &[stale])
            .await,
        &old,
    );
    let wake_ups = [
        WakeUp::new(WakeTopic::Answered, "f-woken"),
        WakeUp::new(WakeTopic::Outbox, "http:family-chat"),
    ];
    let (_, sent) = stores
        .inbox
        .complete_waking("f-woken", &answer(&message, "held"), Some(&new), &wake_ups)
        .await
        .unwrap();
    assert_eq!(
        record_status(stores, "f-woken").await,
        InboxStatus::Answered,
        "the end is stored whether or not the store sends the wake-ups"
    );
    let within = std::time::Duration::from_millis(if sent { 5_000 } else { 300 });
    let mut got = Vec::new();
    while let Ok(Some(wake_up)) = tokio::time::timeout(within, heard.next()).await {
        got.push(wake_up);
        if got.len() == wake_ups.len() {
            break;
        }
    }
    if sent {
        assert_eq!(
            got, wake_ups,
            "sent in order, and the refused end sent nothing"
        );
    } else {
        assert!(
            got.is_empty(),
            "a store that does not send them sends none: {got:?}"
        );
    }
    // Refused afterwards too (ended already): nothing more is sent.
    let again = stores
        .inbox
        .complete_waking("f-woken", &answer(&message, "again"), Some(&new), &wake_ups)
        .await;
    assert!(again.is_err(), "{again:?}");
    let more = tokio::time::timeout(std::time::Duration::from_millis(300), heard.next()).await;
    assert!(more.is_err(), "a refused end woke the workers: {more:?}");
}

async fn record_status(stores: &Stores, id: &str) -> InboxStatus {
    stores.inbox.get(id).await.unwrap().unwrap().status
}
