//! Tool confirmation end to end over HTTP: a call to a tool in `confirm_tools`
//! suspends the turn; approve and deny each reach the model as a distinct tool result
//! (expiry, on the paused clock: `paused/confirmations.rs`); only the asking member may
//! answer, once; a restart between the question and the answer loses nothing.

use std::time::Duration;

use hearth::actors::processing::DECLINED_RESULT;
use hearth::config::ServiceProfileConfig;
use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::{ProfileParts, TestConfig, profile};

const CONFIRM_PROFILE_UPDATE: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
    "profile_update",
);

fn script_profile_update(llm: &ScriptedLlmServer, address: &str) {
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": address}),
        )]),
        Step::Reply("Done.".into()),
    ]);
}

async fn confirm(app: &Hearth, body: Value) -> (u16, Value) {
    let response = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header(
            "X-API-Key",
            app.member_token(body["user_id"].as_str().unwrap_or("alice"))
                .await,
        )
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn ask_for_address(app: &Hearth, llm: &ScriptedLlmServer, address: &str) -> Value {
    script_profile_update(llm, address);
    let (status, body) = app
        .send(json!({"user_id": "alice", "text": format!("I moved to {address}")}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "confirmation_required", "{body}");
    body
}

#[actix::test]
async fn an_approved_call_runs_exactly_the_arguments_shown() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[CONFIRM_PROFILE_UPDATE]).await;
    let asked = ask_for_address(&app, &llm, "2 Oak Road").await;
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert_eq!(
        prompt,
        "Run profile_update?\n• key: address\n• value: 2 Oak Road"
    );
    assert_eq!(llm.request_count(), 1, "nothing ran before the answer");

    let id = asked["confirmation"]["id"].clone();
    let (status, body) = confirm(
        &app,
        json!({"confirmation_id": id, "user_id": "alice", "approve": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "answered");
    assert_eq!(body["reply"], "Done.");
    assert_eq!(body["id"], asked["id"]);
    assert_eq!(llm.last_tool_result(), "saved address = 2 Oak Road");

    // The fact is stored: the next prompt carries it.
    app.ask("alice", "where do I live?").await;
    let system = llm.requests().last().unwrap().body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("- address: 2 Oak Road"), "{system}");

    // Used once: a second answer is refused.
    let (status, body) = confirm(
        &app,
        json!({"confirmation_id": id, "user_id": "alice", "approve": true}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "this confirmation was already answered");
}

#[actix::test]
async fn a_denied_call_is_not_run_and_the_model_is_told() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[CONFIRM_PROFILE_UPDATE]).await;
    let asked = ask_for_address(&app, &llm, "3 Pine Lane").await;
    let id = asked["confirmation"]["id"].clone();
    let (status, body) = confirm(
        &app,
        json!({"confirmation_id": id, "user_id": "alice", "approve": false}),
    )
    .await;
    assert_eq!(
        (status, body["reply"].clone()),
        (200, json!("Done.")),
        "{body}"
    );
    assert_eq!(llm.last_tool_result(), DECLINED_RESULT);
    app.ask("alice", "where do I live?").await;
    let system = llm.requests().last().unwrap().body["messages"][0]["content"].to_string();
    assert!(!system.contains("Pine"), "nothing was saved: {system}");
}

#[actix::test]
async fn only_the_asking_member_may_answer() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[CONFIRM_PROFILE_UPDATE]).await;
    let asked = ask_for_address(&app, &llm, "4 Elm Court").await;
    let id = asked["confirmation"]["id"].clone();

    let (status, body) = confirm(
        &app,
        json!({"confirmation_id": id, "user_id": "bob", "approve": true}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["error"],
        "this confirmation is for another family member"
    );
    let (status, _) = confirm(
        &app,
        json!({"confirmation_id": "made-up", "user_id": "alice", "approve": true}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(llm.request_count(), 1, "no refused answer resumed the turn");

    let (status, body) = confirm(
        &app,
        json!({"confirmation_id": id, "user_id": "alice", "approve": true}),
    )
    .await;
    assert_eq!(
        (status, body["reply"].clone()),
        (200, json!("Done.")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_between_question_and_answer_loses_nothing() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let env = test_env(&[CONFIRM_PROFILE_UPDATE]);
    script_profile_update(&llm, "6 Birch Row");

    let first = Hearth::spawn(&config, &env);
    let (status, asked) = first
        .post_json(
            "/inbound",
            json!({"user_id": "alice", "text": "new address"}),
        )
        .await;
    assert_eq!(
        (status, asked["status"].clone()),
        (200, json!("confirmation_required"))
    );
    let second = first.kill().start().await;
    let id = asked["confirmation"]["id"].clone();
    let (status, body) = second
        .confirm(json!({"confirmation_id": id, "user_id": "alice", "approve": true}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "Done.");
    assert_eq!(llm.last_tool_result(), "saved address = 6 Birch Row");
    assert_eq!(
        llm.request_count(),
        2,
        "the question was not asked again after the restart"
    );
}

/// `/secure`, whose every turn asks the member first.
fn secure_profile() -> ServiceProfileConfig {
    profile("secure")
        .description("Sensitive errands.")
        .command("/secure")
        .confirming_commands()
}

#[actix::test]
async fn a_confirmed_slash_command_starts_only_once_approved() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start_with_profiles(&llm.base_url(), &[secure_profile()], &[]).await;
    let (status, asked) = app
        .send(json!({"user_id": "alice", "text": "/secure pay the plumber"}))
        .await;
    assert_eq!(
        (status, asked["status"].clone()),
        (200, json!("confirmation_required")),
        "{asked}"
    );
    assert_eq!(
        asked["confirmation"]["prompt"],
        "Run /secure (Sensitive errands.)?\n• pay the plumber"
    );
    assert_eq!(llm.request_count(), 0, "nothing ran before the answer");
    let answered = confirm(
        &app,
        json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}),
    )
    .await;
    assert_eq!(answered.1["reply"], "echo: pay the plumber", "{answered:?}");

    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "/secure pay again"}))
        .await;
    let denied = confirm(
        &app,
        json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": false}),
    )
    .await;
    assert_eq!(denied.1["reply"], hearth::turn::SLASH_COMMAND_DECLINED);
    assert_eq!(
        llm.request_count(),
        1,
        "the denied command never reached the model"
    );
}

/// hearth stopped after an approved call began running: at start-up the turn goes on,
/// the call is not run again, and the model hears that its outcome is unknown.
#[actix::test]
async fn an_interrupted_approved_call_is_never_run_twice() {
    use hearth::ports::{Inbound, PendingConfirmation};

    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", folder.path().join("hearth.db").display());
    {
        let stores = hearth::storage::open(&database, 2).await.unwrap();
        let inbound = Inbound {
            id: "interrupted-1".into(),
            conversation: "http:alice".parse().unwrap(),
            member_id: "alice".parse().unwrap(),
            text: "I moved to 7 Cedar Close".into(),
            platform_event_id: None,
            received_at_ms: 1,
            extras: Default::default(),
        };
        stores.inbox.accept(&inbound).await.unwrap();
        let call = json!({"id": "call-1", "name": "profile_update",
                          "arguments": {"key": "address", "value": "7 Cedar Close"}});
        let turn_state = json!({
            "messages": [
                {"role": "system", "content": "You are a test assistant."},
                {"role": "user", "content": "I moved to 7 Cedar Close"},
                {"role": "assistant", "content": "", "tool_calls": [call]}
            ],
            "entries": [
                {"role": "user", "content": "I moved to 7 Cedar Close",
                 "profile_id": "default_assistant", "inbox_id": "interrupted-1", "created_at_ms": 1}
            ],
            "pending_calls": [call],
            "rounds": 1
        });
        let confirmation = PendingConfirmation {
            id: "c-interrupted".parse().unwrap(),
            inbox_id: "interrupted-1".into(),
            member_id: "alice".parse().unwrap(),
            conversation: "http:alice".parse().unwrap(),
            profile_id: "default_assistant".into(),
            tool_name: "profile_update".into(),
            arguments: json!({"key": "address", "value": "7 Cedar Close"}),
            prompt: "Run profile_update?".into(),
            turn_state,
            expires_at_ms: i64::MAX,
            created_at_ms: 2,
            approvers: Vec::new(),
        };
        stores.pending.suspend(&confirmation, &[]).await.unwrap();
        stores
            .pending
            .answer(
                &"c-interrupted".parse().unwrap(),
                &"alice".parse().unwrap(),
                &hearth::ports::AnswerPlace::Channel("http".into()),
                true,
                3,
            )
            .await
            .unwrap()
            .unwrap();
        // The decision was taken by the turn that then never finished.
        stores
            .pending
            .consume(&"c-interrupted".parse().unwrap())
            .await
            .unwrap();
        stores.telemetry.flush().await;
    }
    llm.push(Step::Reply(
        "I'm not sure it was saved; please check.".into(),
    ));
    let app = Hearth::start_in(folder, &llm.base_url(), &[CONFIRM_PROFILE_UPDATE]).await;
    let record = app
        .record_when(
            "interrupted-1",
            "alice",
            "answered",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(record["reply"], "I'm not sure it was saved; please check.");
    assert_eq!(
        llm.last_tool_result(),
        hearth::actors::processing::UNKNOWN_OUTCOME_RESULT
    );
    let facts =
        hearth::ports::UserProfiles::get(&*app.app().stores.profiles, &"alice".parse().unwrap())
            .await
            .unwrap();
    assert!(
        !facts.contains_key("address"),
        "the approved call was not run again: {facts:?}"
    );
}

/// A confirmation asked after the POST stopped waiting (`202`) is found by reading the
/// message, and can be answered from there.
#[actix::test]
async fn a_confirmation_asked_after_the_call_stopped_waiting_is_found_by_reading_the_message() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(
        &llm.base_url(),
        &[
            CONFIRM_PROFILE_UPDATE,
            ("HEARTH__HTTP__REPLY_TIMEOUT_SECONDS", "1"),
        ],
    )
    .await;
    llm.push_many([
        Step::Delay(
            Duration::from_millis(1500),
            Box::new(Step::ToolCalls(vec![(
                "profile_update".into(),
                json!({"key": "address", "value": "9 Late Lane"}),
            )])),
        ),
        Step::Reply("Saved late.".into()),
    ]);
    let (status, accepted) = app
        .send(json!({"user_id": "alice", "text": "I moved"}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_string();
    let waiting = app
        .record_when(&id, "alice", "suspended", Duration::from_secs(10))
        .await;
    assert!(
        waiting["confirmation"]["prompt"]
            .as_str()
            .unwrap()
            .contains("9 Late Lane"),
        "{waiting}"
    );
    let (status, answered) = confirm(
        &app,
        json!({"confirmation_id": waiting["confirmation"]["id"], "user_id": "alice", "approve": true}),
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["reply"], "Saved late.");
    app.stop().await;
}
