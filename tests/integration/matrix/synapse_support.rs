//! The Matrix test support against a REAL Synapse (installed by
//! `scripts/install-test-synapse.sh`): two members talk in an end-to-end encrypted room, and
//! keep talking after the homeserver restarts. Proves the harness the Matrix channel tests
//! stand on: registration, login, encryption, sync, and `stop` / `start_again`. Skipped (with
//! a note) when Synapse is not installed, unless `HEARTH_REQUIRE_REAL_SERVERS=1`.

use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::events::receipt::ReceiptThread;

use crate::support::matrix_member::{MatrixMember, NewRoom};
use crate::support::synapse::{Synapse, registration_mac};

#[test]
fn registration_mac_matches_synapse_documentation() {
    // Computed with Python's hmac.new(b"secret", digestmod=hashlib.sha1), as Synapse does.
    assert_eq!(
        registration_mac("secret", "abc", "alice", "pw", false),
        "42e32623fe124933c326f9d2d67ff7c617915a10"
    );
    assert_ne!(
        registration_mac("secret", "abc", "alice", "pw", true),
        registration_mac("secret", "abc", "alice", "pw", false)
    );
}

#[tokio::test]
async fn synapse_members_talk_encrypted_and_survive_a_restart() {
    let Some(mut synapse) =
        Synapse::start_or_skip("synapse_members_talk_encrypted_and_survive_a_restart")
    else {
        return;
    };
    let pid = synapse.pid().expect("a running server has a pid");
    let alice = synapse.register("alice", "alice-password", false).await;
    let bob = synapse.register("bob", "bob-password", true).await;
    assert_eq!(alice.user_id, "@alice:localhost");
    assert_eq!(synapse.server_name(), "localhost");

    let alice = MatrixMember::login(&synapse, &alice).await;
    let bob = MatrixMember::login(&synapse, &bob).await;
    let room = alice
        .create_room(NewRoom::encrypted_with(bob.user_id()).direct())
        .await;
    bob.join(&room).await;
    alice.wait_until_joined(&room, bob.user_id()).await;

    let sent = alice.send_text(&room, "dinner at seven").await;
    let received = bob
        .wait_for_message(alice.user_id(), |message| message.event_id == sent)
        .await;
    assert_eq!(received.body, "dinner at seven");
    assert_eq!(received.msgtype, "m.text");
    assert!(received.encrypted, "the room is encrypted: {received:?}");

    let reply = bob.send_reply(&room, &sent, "I'll be there").await;
    let reaction = bob.send_reaction(&room, &sent, "👍").await;
    let got_reply = alice
        .wait_for_message(bob.user_id(), |message| message.event_id == reply)
        .await;
    assert_eq!(got_reply.in_reply_to.as_deref(), Some(&*sent));
    assert!(got_reply.encrypted);
    let reactions = alice.wait_for_reactions(&sent, 1).await;
    assert_eq!(reactions[0].event_id, reaction);
    assert_eq!(reactions[0].key, "👍");

    // Typing notices and read receipts reach the other member too (the bot sends both).
    let alice_room = alice.room(&room);
    alice_room.typing_notice(true).await.expect("typing notice");
    bob.wait_for_typing(&room, alice.user_id(), true).await;
    bob.room(&room)
        .send_single_receipt(ReceiptType::Read, ReceiptThread::Unthreaded, sent.clone())
        .await
        .expect("read receipt");
    alice
        .wait_for_read_receipt(&room, bob.user_id(), &sent)
        .await;

    synapse.stop().await;
    assert_eq!(synapse.pid(), None);
    synapse.start_again().await;
    assert_ne!(synapse.pid(), Some(pid), "a new server process");

    let after = alice.send_text(&room, "still there?").await;
    let received = bob
        .wait_for_message(alice.user_id(), |message| message.event_id == after)
        .await;
    assert_eq!(received.body, "still there?");
    assert!(received.encrypted);
    assert!(
        bob.undecryptable().is_empty(),
        "bob could not decrypt {:?}",
        bob.undecryptable()
    );
}
