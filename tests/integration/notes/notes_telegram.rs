//! The family's notes on Telegram, through the real teloxide client and the fake Bot API:
//! Alice's private note never reaches Bob, not by get, search, list or delete, nor in the
//! titles his model is given each turn, while the family's note does.

use serde_json::json;

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says, start_on_telegram};
use crate::support::test_config::{ProfileParts, names, profile};
use crate::support::tool_lists::NOTE_TOOLS;

#[actix::test]
async fn a_private_note_never_reaches_another_member_on_telegram() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let notes = profile("notes")
        .description("The family's notes.")
        .command("/notes")
        .processing(&[("include_notes_in_prompt", true.into())])
        .local_tools(&names(NOTE_TOOLS));
    let app = start_on_telegram(&llm, &telegram, &[notes], None, &[]).await;
    for (member, chat) in [(alice(), 1001), (bob(), 1002)] {
        telegram.push_private_text(&member, "/help");
        bot_says(&telegram, chat, "/notes").await;
    }

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
    telegram.push_private_text(
        &alice(),
        "/notes alarm code 4711 (private), wifi hearth-rocks",
    );
    bot_says(&telegram, 1001, "Noted both.").await;
    assert_eq!(
        llm.tool_results_seen(llm.request_count() - 1),
        [
            "Saved the private note \"Alarm code\" (added). It is note #1.",
            "Saved the family note \"Wifi\" (added). It is note #2."
        ]
    );

    let bobs_turn = llm.request_count();
    llm.push_many([
        Step::ToolCalls(vec![
            ("get_note".into(), json!({"title": "Alarm code"})),
            ("search_notes".into(), json!({"query": "4711 alarm"})),
            ("list_notes".into(), json!({})),
            ("delete_note".into(), json!({"id": 1})),
        ]),
        Step::Reply("I found nothing like that.".into()),
    ]);
    telegram.push_private_text(&bob(), "/notes what is the alarm code?");
    bot_says(&telegram, 1002, "I found nothing like that.").await;
    let results = llm.tool_results_seen(bobs_turn + 1);
    assert_eq!(results.len(), 4, "{results:?}");
    for result in &results {
        assert!(!result.contains("then enter"), "{result}");
    }
    assert!(
        results[0].contains("there is no note \"Alarm code\" you can read"),
        "{}",
        results[0]
    );
    assert_eq!(results[1], "No note you can read matches \"4711 alarm\".");
    assert_eq!(
        results[2],
        "You can read 1 note, last written first:\n#2 \"Wifi\" (family) by Alice"
    );
    assert!(
        results[3].contains("there is no note #1 you can read"),
        "{}",
        results[3]
    );
    let prompt = llm.requests()[bobs_turn].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        prompt.contains("\"Wifi\"") && !prompt.contains("Alarm"),
        "{prompt}"
    );

    // Still there for Alice: her next turn's titles name it.
    let alices_turn = llm.request_count();
    llm.push(Step::Reply("Still noted, Alice.".into()));
    telegram.push_private_text(&alice(), "/notes is my alarm code still noted?");
    bot_says(&telegram, 1001, "Still noted, Alice.").await;
    let prompt = llm.requests()[alices_turn].body["messages"][0]["content"].to_string();
    assert!(prompt.contains("Alarm code"), "{prompt}");
    app.stop().await;
}
