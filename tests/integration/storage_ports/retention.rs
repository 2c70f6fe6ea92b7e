//! The `Retention` port: what is old enough pruned in batches, nothing younger.

use hearth::storage::Stores;

use super::outbox::outgoing;
use super::{expect_new, inbound, key, turn_for};

adapter_suite!(retention_prunes_in_batches_only_what_is_old_enough,);

async fn retention_prunes_in_batches_only_what_is_old_enough(stores: &Stores) {
    use hearth::ports::Prunable;
    let now = hearth::ports::now_ms();
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
