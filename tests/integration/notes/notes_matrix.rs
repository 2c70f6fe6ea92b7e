//! The family's notes on Matrix, against a real Synapse, in encrypted rooms: Alice's
//! private note reaches neither Bob's tools nor the titles his model is given, in his own
//! room with hearth, while the family's note does.

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::test_config::{ProfileParts, names, profile};
use crate::support::tool_lists::NOTE_TOOLS;

#[actix::test]
async fn a_private_note_never_reaches_another_member_on_matrix() {
    let Some(server) = homeserver("matrix_notes").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let notes = profile("notes")
        .command("/notes")
        .processing(&[("include_notes_in_prompt", true.into())])
        .local_tools(&names(NOTE_TOOLS));
    let path = write_matrix_config(folder.path(), &llm, &server, &[notes]);
    let app = Hearth::start_from(folder, &path, &matrix_env()).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let bob = MatrixMember::login(&server.synapse, &server.bob).await;
    let alices_room = room_with_hearth(&alice, &server, true, &[]).await;
    let bobs_room = room_with_hearth(&bob, &server, true, &[]).await;

    llm.push_many([
        Step::ToolCalls(vec![
            (
                "add_or_update_note".into(),
                json!({"title": "Alarm code", "content": "4711 then enter", "visibility": "private"}),
            ),
            (
                "add_or_update_note".into(),
                json!({"title": "Wifi", "content": "hearth-rocks"}),
            ),
        ]),
        Step::Reply("Noted both.".into()),
    ]);
    alice
        .send_text(
            &alices_room,
            "!notes alarm code 4711 (private), wifi hearth-rocks",
        )
        .await;
    reply_from_hearth(&alice, &server, |message| message.body == "Noted both.").await;

    let bobs_turn = llm.request_count();
    llm.push_many([
        Step::ToolCalls(vec![
            ("get_note".into(), json!({"title": "Alarm code"})),
            ("search_notes".into(), json!({"query": "alarm 4711"})),
            ("list_notes".into(), json!({})),
        ]),
        Step::Reply("Nothing like that.".into()),
    ]);
    bob.send_text(&bobs_room, "!notes what is the alarm code?")
        .await;
    let reply = reply_from_hearth(&bob, &server, |message| {
        message.body == "Nothing like that."
    })
    .await;
    assert_eq!(reply.room_id, bobs_room);
    let results = llm.tool_results_seen(bobs_turn + 1);
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert!(
            !result.contains("then enter") && !result.contains("Alarm code\" (private)"),
            "{result}"
        );
    }
    assert!(
        results[2].contains("\"Wifi\" (family) by Alice"),
        "{}",
        results[2]
    );
    let prompt = llm.requests()[bobs_turn].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        prompt.contains("\"Wifi\"") && !prompt.contains("Alarm"),
        "{prompt}"
    );
    app.stop().await;
}
