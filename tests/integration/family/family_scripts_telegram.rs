//! Family scripts on Telegram (the fake Bot API) with the scripted LLM: a member says
//! "back up the photos", is shown the script and its parameters, changes one, taps ✅ and
//! gets the result; nothing runs before the tap; `/cancel` forgets the workflow.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::family_scripts::{SCRIPT_TOOLS, write_scripts};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{StoredMessage, TelegramServer};
use crate::support::telegram_family::{TOKEN, alice, bot_says, start_on_telegram};

const WAIT: Duration = Duration::from_secs(10);

fn call(name: &str, arguments: Value) -> Step {
    Step::ToolCalls(vec![(name.to_string(), arguments)])
}

/// The confirmation with buttons the bot shows in `chat`, once it is there.
async fn prompt_in(telegram: &TelegramServer, chat: i64) -> StoredMessage {
    telegram
        .wait_for_message(chat, |message| !message.button_data().is_empty(), WAIT)
        .await
        .expect("a confirmation with buttons")
}

#[actix::test]
async fn a_member_backs_up_the_photos_after_tapping_confirm() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let scripts = write_scripts(folder.path());
    let scripts_dir = scripts.display().to_string();
    let app = start_on_telegram(
        &llm,
        &telegram,
        &[],
        Some(folder),
        &[
            ("HEARTH__SCRIPTS_DIR", scripts_dir.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                SCRIPT_TOOLS,
            ),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__MAX_TOOL_ITERATIONS",
                "10",
            ),
        ],
    )
    .await;

    llm.push_many([
        call(
            "list_available_scripts",
            json!({"query": "back up the photos"}),
        ),
        call("select_script", json!({"name": "backup_photos"})),
        call("get_script_parameters", json!({})),
        Step::Reply("backup_photos will copy album all to usb_drive. Change anything?".into()),
    ]);
    telegram.push_private_text(&alice(), "back up the photos");
    bot_says(&telegram, 1001, "Change anything?").await;

    llm.push_many([
        call(
            "set_script_parameters",
            json!({"changes": {"destination": "nas"}}),
        ),
        call("run_script", json!({})),
    ]);
    telegram.push_private_text(&alice(), "to the nas please");
    let prompt = prompt_in(&telegram, 1001).await;
    let text = prompt.text.clone().unwrap_or_default();
    assert!(
        text.contains("Run the family script backup_photos?"),
        "{text}"
    );
    assert!(text.contains("destination: nas"), "{text}");
    assert!(text.contains("album: all"), "{text}");
    assert!(
        !scripts.join("runs.jsonl").exists(),
        "nothing runs without the tap"
    );

    llm.push(Step::Reply("Your photos are backed up on the nas.".into()));
    let data = &prompt.button_data()[0];
    telegram.push_callback(&alice(), prompt.chat_id, prompt.message_id, data);
    bot_says(&telegram, 1001, "Your photos are backed up on the nas.").await;
    let result = llm.tool_result_seen(llm.requests().len() - 1);
    assert!(result.contains("backed up album all to nas"), "{result}");
    let runs = std::fs::read_to_string(scripts.join("runs.jsonl")).unwrap();
    assert_eq!(runs.lines().count(), 1, "{runs}");

    // `/cancel` forgets where the workflow stood.
    let workflows = &app.app().stores.script_workflows;
    assert!(
        workflows
            .get(
                &"telegram:1001".parse().unwrap(),
                &"alice".parse().unwrap(),
                0
            )
            .await
            .unwrap()
            .is_some()
    );
    telegram.push_private_text(&alice(), "/cancel");
    bot_says(
        &telegram,
        1001,
        "Cancelled: the family script we were preparing is forgotten.",
    )
    .await;
    assert_eq!(
        workflows
            .get(
                &"telegram:1001".parse().unwrap(),
                &"alice".parse().unwrap(),
                0
            )
            .await
            .unwrap(),
        None
    );
    llm.push(Step::Reply("Hello again.".into()));
    telegram.push_private_text(&alice(), "hi");
    bot_says(&telegram, 1001, "Hello again.").await;
    let system = llm.requests().last().unwrap().body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains("Family script workflow"), "{system}");
    app.stop().await;
}
