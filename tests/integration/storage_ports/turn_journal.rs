//! The `TurnJournal` port: a running turn's latest saved state, kept until the turn ends.

use hearth::storage::Stores;
use serde_json::json;

use super::pending_actions::confirmation;
use super::{T0, expect_new, inbound, turn_for};

adapter_suite!(journal_keeps_the_latest_state_until_the_turn_ends,);

async fn journal_keeps_the_latest_state_until_the_turn_ends(stores: &Stores) {
    let journal = &stores.turn_journal;
    // Only a stored message has a turn.
    assert!(journal.save_turn("j-unknown", &json!({})).await.is_err());
    for id in ["j-1", "j-2", "j-3"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
        assert_eq!(journal.load_turn(id).await.unwrap(), None);
        journal.save_turn(id, &json!({"rounds": 1})).await.unwrap();
        journal
            .save_turn(
                id,
                &json!({"rounds": 2, "in_flight": "call-1", "text": "Ça va 🏠"}),
            )
            .await
            .unwrap();
        assert_eq!(
            journal.load_turn(id).await.unwrap(),
            Some(json!({"rounds": 2, "in_flight": "call-1", "text": "Ça va 🏠"}))
        );
    }
    // A failed attempt keeps it: the retry goes on from there.
    stores
        .inbox
        .record_failure("j-1", "llm down", 1)
        .await
        .unwrap();
    assert!(journal.load_turn("j-1").await.unwrap().is_some());
    // Answered, given up or suspended: the turn is over, so is its entry.
    let message = inbound("j-1", "telegram", None);
    stores
        .inbox
        .complete("j-1", &turn_for(&message, "done"))
        .await
        .unwrap();
    stores
        .inbox
        .give_up("j-2", "broken", "sorry", None)
        .await
        .unwrap();
    stores
        .pending
        .suspend(&confirmation("c-j-3", "j-3", T0), &[])
        .await
        .unwrap();
    for id in ["j-1", "j-2", "j-3"] {
        assert_eq!(journal.load_turn(id).await.unwrap(), None, "{id}");
    }
}
