//! The family's notes over HTTP, the scripted model calling the real tools through the real
//! OpenAI provider: Alice's private note is as if it did not exist for Bob (get, search, list,
//! delete) while the family's note is his to read and update; the titles given to the model
//! each turn (`include_notes_in_prompt`) are the asking member's only; and a child may not
//! delete a parent's family note.

use serde_json::{Value, json};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;
use crate::support::tool_lists::NOTE_TOOLS;

/// hearth with the note tools, the titles in the prompt, and Bob a child.
async fn start(llm: &ScriptedLlmServer) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .child("bob")
        .default_processing("include_notes_in_prompt", true.into())
        .default_tools(&format!("profile_get, {NOTE_TOOLS}"))
        .write(folder.path());
    Hearth::start_from(folder, &path, &[]).await
}

/// `member` asks, the model calls `tool` with `arguments` and then answers: what the tool
/// told the model.
async fn call(
    app: &Hearth,
    llm: &ScriptedLlmServer,
    member: &str,
    tool: &str,
    arguments: Value,
) -> String {
    llm.push_many([
        Step::ToolCalls(vec![(tool.into(), arguments)]),
        Step::Reply("Done.".into()),
    ]);
    assert_eq!(app.ask(member, &format!("please {tool}")).await, "Done.");
    llm.tool_result_seen(llm.request_count() - 1)
}

/// The system prompt of request `index`.
fn system_prompt(llm: &ScriptedLlmServer, index: usize) -> String {
    llm.requests()[index].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[actix::test]
async fn a_private_note_is_its_author_s_alone_and_the_family_s_note_everyone_s() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    let saved = call(
        &app,
        &llm,
        "alice",
        "add_or_update_note",
        json!({"title": "Alarm code", "content": "4711 then enter", "visibility": "private"}),
    )
    .await;
    assert_eq!(
        saved,
        "Saved the private note \"Alarm code\" (added). It is note #1."
    );
    let saved = call(
        &app,
        &llm,
        "alice",
        "add_or_update_note",
        json!({"title": "Wifi", "content": "the password is hearth-rocks"}),
    )
    .await;
    assert_eq!(
        saved,
        "Saved the family note \"Wifi\" (added). It is note #2."
    );

    // Bob's first request: the titles he may read, not Alice's private one.
    let bobs_turn = llm.request_count();
    for (tool, arguments) in [
        ("get_note", json!({"title": "alarm code"})),
        ("get_note", json!({"id": 1})),
        ("delete_note", json!({"title": "Alarm code"})),
        ("delete_note", json!({"id": "#1"})),
    ] {
        let refused = call(&app, &llm, "bob", tool, arguments.clone()).await;
        assert!(
            refused.contains("there is no note") && refused.contains("you can read"),
            "{tool} {arguments}: {refused}"
        );
    }
    let prompt = system_prompt(&llm, bobs_turn);
    assert!(prompt.contains("\"Wifi\""), "{prompt}");
    assert!(!prompt.contains("Alarm"), "{prompt}");
    for query in ["4711", "alarm", "enter"] {
        let found = call(&app, &llm, "bob", "search_notes", json!({"query": query})).await;
        assert_eq!(found, format!("No note you can read matches \"{query}\"."));
    }
    let found = call(
        &app,
        &llm,
        "bob",
        "search_notes",
        json!({"query": "password"}),
    )
    .await;
    assert!(
        found.contains("#2 \"Wifi\" (family): the password is hearth-rocks"),
        "{found}"
    );
    let listed = call(&app, &llm, "bob", "list_notes", json!({})).await;
    assert_eq!(
        listed,
        "You can read 1 note, last written first:\n#2 \"Wifi\" (family) by Alice"
    );
    let read = call(&app, &llm, "bob", "get_note", json!({"title": "WIFI"})).await;
    assert_eq!(
        read,
        "Note #2 \"Wifi\" (family), written by Alice:\nthe password is hearth-rocks"
    );

    // Alice's note is still there, whole, and her prompt names both.
    let alices_turn = llm.request_count();
    let read = call(&app, &llm, "alice", "get_note", json!({"id": 1})).await;
    assert!(read.ends_with("4711 then enter"), "{read}");
    let prompt = system_prompt(&llm, alices_turn);
    assert!(
        prompt.contains("\"Alarm code\"") && prompt.contains("\"Wifi\""),
        "{prompt}"
    );
    app.stop().await;
}

#[actix::test]
async fn a_child_updates_a_parent_s_family_note_but_may_not_delete_it() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    call(
        &app,
        &llm,
        "alice",
        "add_or_update_note",
        json!({"title": "Wifi", "content": "hearth-rocks"}),
    )
    .await;
    let updated = call(
        &app,
        &llm,
        "bob",
        "add_or_update_note",
        json!({"title": "wifi", "content": "hearth-rocks-2"}),
    )
    .await;
    assert_eq!(
        updated,
        "Saved the family note \"wifi\" (updated). It is note #1."
    );
    let refused = call(&app, &llm, "bob", "delete_note", json!({"title": "Wifi"})).await;
    assert!(
        refused.contains("only its author (Alice) or a parent may delete the family note"),
        "{refused}"
    );
    let read = call(&app, &llm, "alice", "get_note", json!({"title": "Wifi"})).await;
    assert_eq!(
        read,
        "Note #1 \"wifi\" (family), written by Alice, last changed by Bob:\nhearth-rocks-2"
    );
    // Bob deletes his own family note; Alice, a parent, hers.
    call(
        &app,
        &llm,
        "bob",
        "add_or_update_note",
        json!({"title": "Lego", "content": "the big box"}),
    )
    .await;
    let deleted = call(&app, &llm, "bob", "delete_note", json!({"title": "lego"})).await;
    assert_eq!(deleted, "Deleted the family note \"Lego\" (#2).");
    let deleted = call(&app, &llm, "alice", "delete_note", json!({"id": 1})).await;
    assert_eq!(deleted, "Deleted the family note \"wifi\" (#1).");
    let listed = call(&app, &llm, "bob", "list_notes", json!({})).await;
    assert_eq!(listed, "There are no notes you can read yet.");
    app.stop().await;
}
