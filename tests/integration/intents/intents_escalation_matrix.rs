//! Escalation on Matrix, against a real Synapse: a child's request over a policy limit is
//! shown to the parent in the parent's own room with hearth (found as hearth syncs), the
//! parent's ✅ reaction approves it, and the result reaches the child's room.

use hearth::config::FamilyMember;
use serde_yaml::Value;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{limits_profile, refund};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::matrix_family::{
    Homeserver, homeserver, matrix_env, matrix_family, reply_from_hearth, room_with_hearth,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::test_config::{TestConfig, member};

/// hearth on Matrix with the `/orders` intents profile of the Telegram escalation tests,
/// bob a child; `processing` adds keys to its `processing_config`.
async fn start(
    llm: &ScriptedLlmServer,
    server: &Homeserver,
    processing: &[(&str, Value)],
) -> Hearth {
    start_with(llm, server, processing, |config| config).await
}

/// `start`, the family changed by `family`.
async fn start_with(
    llm: &ScriptedLlmServer,
    server: &Homeserver,
    processing: &[(&str, Value)],
    family: impl FnOnce(TestConfig) -> TestConfig,
) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let config = matrix_family(folder.path(), llm, server)
        .profile(limits_profile(folder.path(), processing))
        .child("bob");
    let path = family(config).write(folder.path());
    Hearth::start_from(folder, &path, &matrix_env()).await
}

#[actix::test]
async fn a_parent_on_matrix_approves_a_child_s_request_by_reacting_in_their_own_room() {
    let Some(server) = homeserver("matrix_escalation").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &server, &[]).await;

    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let alice_room = room_with_hearth(&alice, &server, true, &[]).await;
    let bob = MatrixMember::login(&server.synapse, &server.bob).await;
    let bob_room = room_with_hearth(&bob, &server, true, &[]).await;

    llm.push(refund("25"));
    bob.send_text(&bob_room, "/orders refund 25 on O-12345")
        .await;
    // The child is told a parent was asked; the parent gets the exact call in their room.
    reply_from_hearth(&bob, &server, |message| {
        message.body.contains("I've asked a parent to approve this")
    })
    .await;
    let prompt = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("asks a parent to approve")
    })
    .await;
    assert_eq!(prompt.room_id, alice_room);
    assert!(prompt.body.contains("• amount: 25"), "{}", prompt.body);
    alice.wait_for_reactions(&prompt.event_id, 2).await;
    assert!(
        !bob.messages()
            .iter()
            .any(|message| message.body.contains("Refund of 25")),
        "nothing runs before the parent answers"
    );

    alice
        .send_reaction(&alice_room, &prompt.event_id, "✅")
        .await;
    reply_from_hearth(&bob, &server, |message| {
        message.body == "Refund of 25 for O-12345 noted (shipped)."
    })
    .await;
    // What the call does was said on its own as it started, once, before the outcome.
    let said: Vec<String> = bob
        .messages()
        .into_iter()
        .filter(|message| message.room_id == bob_room && message.body.contains("25"))
        .map(|message| format!("{} {}", message.msgtype, message.body))
        .collect();
    assert_eq!(
        said[said.len() - 2..],
        [
            "m.notice Refunding 25 on O-12345.",
            "m.notice Refund of 25 for O-12345 noted (shipped)."
        ]
    );
    app.stop().await;
}

#[actix::test]
async fn an_escalation_that_expires_is_closed_in_the_parent_s_room_and_told_to_the_child() {
    let Some(server) = homeserver("matrix_escalation_expiry").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &server, &[("confirmation_timeout_seconds", 2.into())]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let alice_room = room_with_hearth(&alice, &server, true, &[]).await;
    let bob = MatrixMember::login(&server.synapse, &server.bob).await;
    let bob_room = room_with_hearth(&bob, &server, true, &[]).await;

    llm.push(refund("40"));
    bob.send_text(&bob_room, "/orders refund 40 on O-12345")
        .await;
    let prompt = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("asks a parent to approve")
    })
    .await;
    // Nobody answers: the child is told, and the parent's prompt says it expired, in the
    // parent's room; nothing about it is sent into the child's room.
    reply_from_hearth(&bob, &server, |message| {
        message.body.starts_with("No parent answered in time")
    })
    .await;
    let closed = alice
        .wait_for_message(&server.bot.user_id, |message| {
            message.relates_to.as_ref() == Some(&prompt.event_id)
                && message
                    .new_body()
                    .is_some_and(|body| body.contains("Expired"))
        })
        .await;
    assert_eq!(closed.room_id, alice_room);
    assert!(
        bob.messages()
            .iter()
            .all(|message| message.rel_type.as_deref() != Some("m.replace")),
        "{:?}",
        bob.messages()
    );
    let _ = bob_room;
    app.stop().await;
}

#[actix::test]
async fn with_two_parents_on_matrix_one_approves_and_both_prompts_are_closed() {
    let Some(server) = homeserver("matrix_escalation_two_parents").await else {
        return;
    };
    let carol_account = server.register("carol", "carol-password").await;
    let llm = ScriptedLlmServer::start();
    // Carol first in the family, a second parent.
    let carol = FamilyMember {
        matrix_user_id: Some(carol_account.user_id.clone()),
        ..member("carol", "Carol")
    };
    let app = start_with(&llm, &server, &[], |config| {
        config.with(|config| config.family.insert(0, carol))
    })
    .await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let alice_room = room_with_hearth(&alice, &server, true, &[]).await;
    let carol = MatrixMember::login(&server.synapse, &carol_account).await;
    let carol_room = room_with_hearth(&carol, &server, true, &[]).await;
    let bob = MatrixMember::login(&server.synapse, &server.bob).await;
    let bob_room = room_with_hearth(&bob, &server, true, &[]).await;

    llm.push(refund("25"));
    bob.send_text(&bob_room, "/orders refund 25 on O-12345")
        .await;
    let asks = |message: &crate::support::matrix_member::ReceivedMessage| {
        message.body.contains("asks a parent to approve")
    };
    let alices = reply_from_hearth(&alice, &server, asks).await;
    let carols = reply_from_hearth(&carol, &server, asks).await;
    carol.wait_for_reactions(&carols.event_id, 2).await;
    carol
        .send_reaction(&carol_room, &carols.event_id, "✅")
        .await;
    reply_from_hearth(&bob, &server, |message| {
        message.body == "Refund of 25 for O-12345 noted (shipped)."
    })
    .await;
    // The prompt nobody pressed is closed too, in its own room.
    let closed = alice
        .wait_for_message(&server.bot.user_id, |message| {
            message.relates_to.as_ref() == Some(&alices.event_id) && message.new_body().is_some()
        })
        .await;
    assert_eq!(closed.room_id, alice_room);
    app.stop().await;
}
