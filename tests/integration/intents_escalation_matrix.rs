//! Escalation on Matrix, against a real Synapse: a child's request over a policy limit is
//! shown to the parent in the parent's own room with hearth (found as hearth syncs), the
//! parent's ✅ reaction approves it, and the result reaches the child's room.

use crate::intents_escalation::{LIMITS, refund};
use crate::support::hearth_app::TestApp;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::matrix_family::{
    homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;

#[actix::test]
async fn a_parent_on_matrix_approves_a_child_s_request_by_reacting_in_their_own_room() {
    let Some(server) = homeserver("matrix_escalation").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let orders = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/orders.json");
    let intents = folder.path().join("intents.yaml");
    std::fs::write(
        &intents,
        LIMITS.replace("ORDERS", &orders.display().to_string()),
    )
    .unwrap();
    let profile = format!(
        "  - id: orders\n    slash_commands: [\"/orders\"]\n    processing_config: {{ engine: intents, intents_file: \"{}\" }}\n    tools_config: {{ enable_local_tools: [check_order_status], confirm_tools: [] }}\n",
        intents.display()
    );
    let path = write_matrix_config(folder.path(), &llm, &server, &profile);
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "{ id: bob, name: Bob,",
        "{ id: bob, name: Bob, role: child,",
    );
    assert!(text.contains("role: child"), "{text}");
    std::fs::write(&path, text).unwrap();
    let app = TestApp::start_from(folder, &path, &matrix_env()).await;

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
    app.stop().await;
}
