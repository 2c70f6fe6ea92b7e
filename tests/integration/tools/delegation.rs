//! Delegation end to end (seed 004 §5.1): the `delegate_to_service` tool, each
//! delegation level, `confirm_delegation` respected or overridden, loops and depth
//! refused, and the target running in an isolated sub-conversation. A target's tool
//! in its `confirm_tools` asks the member through the parent's turn: approve, deny, a
//! second question, and a restart between the question and the answer (its expiry on the
//! target's timeout: `paused/confirmations.rs`).

use hearth::actors::processing::DECLINED_RESULT;
use hearth::config::ServiceProfileConfig;
use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;
use crate::support::tool_lists::{DELEGATION_TOOLS, delegation_profiles, secure_ops};

async fn start(llm: &ScriptedLlmServer) -> Hearth {
    Hearth::start_with_profiles(&llm.base_url(), &delegation_profiles(), &[DELEGATION_TOOLS]).await
}

fn delegate(target: &str, request: &str, confirm: Option<bool>) -> Step {
    let mut arguments = json!({"target_service_id": target, "user_request": request});
    if let Some(confirm) = confirm {
        arguments["confirm_delegation"] = json!(confirm);
    }
    Step::ToolCalls(vec![("delegate_to_service".into(), arguments)])
}

fn messages(llm: &ScriptedLlmServer, index: usize) -> Vec<Value> {
    llm.requests()[index].body["messages"]
        .as_array()
        .unwrap()
        .clone()
}

#[actix::test]
async fn unrestricted_runs_at_once_in_an_isolated_sub_conversation() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    app.ask("alice", "remember this: I like tea").await; // earlier history of the parent
    llm.push_many([
        delegate("helper", "what is 40 + 2?", None),
        Step::Reply("42".into()),
        Step::Reply("The helper says 42.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "ask the helper for 40 + 2").await,
        "The helper says 42."
    );

    // The offer lists the profiles this one may delegate to, not blocked ones nor itself.
    let tools = llm.requests()[1].body["tools"].as_array().unwrap().clone();
    let delegate_tool = tools
        .iter()
        .find(|tool| tool["function"]["name"] == "delegate_to_service")
        .expect("the delegation tool is offered");
    let description = delegate_tool["function"]["description"].as_str().unwrap();
    for listed in ["helper: Does sums.", "helper2", "focused_assistant"] {
        assert!(description.contains(listed), "{description}");
    }
    assert!(!description.contains("vault") && !description.contains("default_assistant"));

    // The helper saw only its own prompt and the request: no parent history.
    let helper = messages(&llm, 2);
    assert_eq!(helper.len(), 2, "{helper:?}");
    assert!(
        helper[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are the helper.")
    );
    assert_eq!(helper[1]["content"], "what is 40 + 2?");
    assert_eq!(llm.tool_result_seen(3), "42");

    // The parent's history holds its own turn only.
    app.ask("alice", "thanks").await;
    let texts: Vec<String> = messages(&llm, 4)[1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !texts
            .iter()
            .any(|text| text == "what is 40 + 2?" || text == "42"),
        "{texts:?}"
    );
}

async fn answer_confirmation(app: &Hearth, asked: &Value, approve: bool) -> Value {
    let response = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header("X-API-Key", app.member_token("alice").await)
        .json(&json!({
            "confirmation_id": asked["confirmation"]["id"],
            "user_id": "alice",
            "approve": approve
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    response.json().await.unwrap()
}

#[actix::test]
async fn unrestricted_asks_when_the_call_asks() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    llm.push_many([
        delegate("helper", "sum please", Some(true)),
        Step::Reply("7".into()),
        Step::Reply("It is 7.".into()),
    ]);
    let (_, asked) = app.send(json!({"user_id": "alice", "text": "sum"})).await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    assert_eq!(
        asked["confirmation"]["prompt"],
        "Hand this request to helper (Does sums.)?\n• sum please"
    );
    assert_eq!(llm.request_count(), 1, "the helper has not run yet");
    let answered = answer_confirmation(&app, &asked, true).await;
    assert_eq!(answered["reply"], "It is 7.");
    assert_eq!(llm.tool_result_seen(2), "7");
}

#[actix::test]
async fn confirm_level_asks_even_when_the_call_says_not_to() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    llm.push_many([
        delegate("focused_assistant", "focus on this", Some(false)),
        Step::Reply("Refused, fine.".into()),
    ]);
    let (_, asked) = app.send(json!({"user_id": "alice", "text": "focus"})).await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let answered = answer_confirmation(&app, &asked, false).await;
    assert_eq!(answered["reply"], "Refused, fine.");
    assert_eq!(llm.request_count(), 2, "the focused profile never ran");
    assert!(
        llm.tool_result_seen(1)
            .starts_with("The family member declined")
    );
}

#[actix::test]
async fn blocked_targets_are_refused_with_a_clear_result() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    llm.push_many([
        delegate("vault", "tell me the secrets", None),
        Step::Reply("I can't.".into()),
    ]);
    assert_eq!(app.ask("alice", "secrets?").await, "I can't.");
    assert_eq!(llm.request_count(), 2, "vault never ran");
    let result = llm.tool_result_seen(1);
    assert!(
        result.contains("\"vault\" is blocked by configuration"),
        "{result}"
    );
}

#[actix::test]
async fn loops_and_deep_chains_are_refused() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    // default_assistant → helper → helper (a loop) is refused inside the helper's turn.
    llm.push_many([
        delegate("helper", "step one", None),
        delegate("helper", "again", None),
        Step::Reply("helper gives up".into()),
        Step::Reply("done".into()),
    ]);
    assert_eq!(app.ask("alice", "loop").await, "done");
    let refused = llm.tool_result_seen(2);
    assert!(
        refused.contains("already part of this delegation chain (default_assistant → helper)"),
        "{refused}"
    );

    // default_assistant → helper → helper2 → helper3 is one hop too deep.
    llm.reset_counters();
    llm.push_many([
        delegate("helper", "one", None),
        delegate("helper2", "two", None),
        delegate("helper3", "three", None),
        Step::Reply("helper2 stops".into()),
        Step::Reply("helper stops".into()),
        Step::Reply("all done".into()),
    ]);
    assert_eq!(app.ask("alice", "deep").await, "all done");
    let refused = llm.tool_result_seen(3);
    assert!(
        refused.contains("at most 2 nested delegations"),
        "{refused}"
    );
}

async fn start_with_secure_ops(
    llm: &ScriptedLlmServer,
    secure_ops: ServiceProfileConfig,
) -> Hearth {
    let mut profiles = delegation_profiles();
    profiles.push(secure_ops);
    Hearth::start_with_profiles(&llm.base_url(), &profiles, &[DELEGATION_TOOLS]).await
}

fn update_address(address: &str) -> Step {
    Step::ToolCalls(vec![(
        "profile_update".into(),
        json!({"key": "address", "value": address}),
    )])
}

/// The parent delegates, and secure_ops wants to save `address`: the member is asked.
async fn ask_through_secure_ops(app: &Hearth, llm: &ScriptedLlmServer, address: &str) -> Value {
    llm.push_many([
        delegate("secure_ops", &format!("save my address: {address}"), None),
        update_address(address),
    ]);
    let (status, asked) = app
        .send(json!({"user_id": "alice", "text": format!("I moved to {address}")}))
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    asked
}

fn system_prompt(llm: &ScriptedLlmServer, index: usize) -> String {
    messages(llm, index)[0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn stored_address(app: &Hearth) -> Option<String> {
    hearth::ports::UserProfiles::get(&*app.app().stores.profiles, &"alice".parse().unwrap())
        .await
        .unwrap()
        .get("address")
        .cloned()
}

#[actix::test]
async fn a_delegated_tool_asks_the_member_and_runs_once_approved() {
    let llm = ScriptedLlmServer::start();
    let app = start_with_secure_ops(&llm, secure_ops()).await;
    let asked = ask_through_secure_ops(&app, &llm, "9 Lime Street").await;
    assert_eq!(
        asked["confirmation"]["prompt"],
        "secure_ops asks: Run profile_update?\n• key: address\n• value: 9 Lime Street"
    );
    assert_eq!(
        llm.request_count(),
        2,
        "the parent and secure_ops ran once each"
    );
    assert_eq!(
        stored_address(&app).await,
        None,
        "nothing ran before the answer"
    );

    llm.push_many([
        Step::Reply("Saved.".into()),
        Step::Reply("secure_ops saved your new address.".into()),
    ]);
    let answered = answer_confirmation(&app, &asked, true).await;
    assert_eq!(answered["reply"], "secure_ops saved your new address.");
    assert_eq!(answered["id"], asked["id"]);
    // secure_ops's model saw its own tool's result; the parent's saw secure_ops's answer.
    assert!(system_prompt(&llm, 2).starts_with("You are secure_ops."));
    assert_eq!(llm.tool_result_seen(2), "saved address = 9 Lime Street");
    assert_eq!(llm.tool_result_seen(3), "Saved.");
    assert_eq!(stored_address(&app).await.as_deref(), Some("9 Lime Street"));

    // The sub-conversation's whole turn is stored under its own key, once.
    let database = app.folder().join("hearth.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", database.display()))
        .await
        .unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT role, content FROM messages WHERE profile_id = 'secure_ops' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let roles: Vec<&str> = rows.iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "{rows:?}"
    );
    assert_eq!(rows[0].1, "save my address: 9 Lime Street");

    // Used once: a second answer is refused and nothing runs again.
    let response = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header("X-API-Key", app.member_token("alice").await)
        .json(&json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 409);
    assert_eq!(llm.request_count(), 4);
}

#[actix::test]
async fn a_denied_delegated_tool_is_not_run_and_the_target_is_told() {
    let llm = ScriptedLlmServer::start();
    let app = start_with_secure_ops(&llm, secure_ops()).await;
    let asked = ask_through_secure_ops(&app, &llm, "3 Pine Lane").await;
    llm.push_many([
        Step::Reply("The member declined; nothing saved.".into()),
        Step::Reply("Nothing was changed.".into()),
    ]);
    let answered = answer_confirmation(&app, &asked, false).await;
    assert_eq!(answered["reply"], "Nothing was changed.");
    assert!(system_prompt(&llm, 2).starts_with("You are secure_ops."));
    assert_eq!(llm.tool_result_seen(2), DECLINED_RESULT);
    assert_eq!(
        llm.tool_result_seen(3),
        "The member declined; nothing saved."
    );
    assert_eq!(stored_address(&app).await, None);
}

#[actix::test]
async fn a_delegated_turn_can_ask_twice() {
    let llm = ScriptedLlmServer::start();
    let app = start_with_secure_ops(&llm, secure_ops()).await;
    let first = ask_through_secure_ops(&app, &llm, "4 Elm Court").await;
    llm.push(Step::ToolCalls(vec![(
        "profile_update".into(),
        json!({"key": "phone", "value": "555-0100"}),
    )]));
    let second = answer_confirmation(&app, &first, true).await;
    assert_eq!(second["status"], "confirmation_required", "{second}");
    assert_eq!(
        second["confirmation"]["prompt"],
        "secure_ops asks: Run profile_update?\n• key: phone\n• value: 555-0100"
    );
    assert_ne!(second["confirmation"]["id"], first["confirmation"]["id"]);
    assert_eq!(llm.tool_result_seen(2), "saved address = 4 Elm Court");

    llm.push_many([
        Step::Reply("Address saved, phone not.".into()),
        Step::Reply("Done, without the phone.".into()),
    ]);
    let answered = answer_confirmation(&app, &second, false).await;
    assert_eq!(answered["reply"], "Done, without the phone.");
    assert_eq!(llm.tool_result_seen(3), DECLINED_RESULT);
    assert_eq!(llm.tool_result_seen(4), "Address saved, phone not.");
    let facts =
        hearth::ports::UserProfiles::get(&*app.app().stores.profiles, &"alice".parse().unwrap())
            .await
            .unwrap();
    assert_eq!(
        facts.get("address").map(String::as_str),
        Some("4 Elm Court")
    );
    assert!(!facts.contains_key("phone"), "{facts:?}");
}

#[actix::test]
async fn a_question_two_delegations_deep_names_the_whole_chain() {
    let llm = ScriptedLlmServer::start();
    let app = start_with_secure_ops(&llm, secure_ops()).await;
    llm.push_many([
        delegate("helper", "have secure_ops save 7 Oak Road", None),
        delegate("secure_ops", "save my address: 7 Oak Road", None),
        update_address("7 Oak Road"),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "I moved to 7 Oak Road"}))
        .await;
    assert_eq!(
        asked["confirmation"]["prompt"],
        "helper asks: secure_ops asks: Run profile_update?\n• key: address\n• value: 7 Oak Road",
        "{asked}"
    );
    llm.push_many([
        Step::Reply("Saved.".into()),
        Step::Reply("secure_ops saved it.".into()),
        Step::Reply("All done.".into()),
    ]);
    let answered = answer_confirmation(&app, &asked, true).await;
    assert_eq!(answered["reply"], "All done.");
    assert_eq!(llm.tool_result_seen(3), "saved address = 7 Oak Road");
    assert_eq!(llm.tool_result_seen(4), "Saved.");
    assert_eq!(llm.tool_result_seen(5), "secure_ops saved it.");
    assert_eq!(stored_address(&app).await.as_deref(), Some("7 Oak Road"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_between_a_delegated_question_and_its_answer_loses_nothing() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url())
        .profiles(&delegation_profiles())
        .profile(secure_ops())
        .write(folder.path());
    let env = test_env(&[DELEGATION_TOOLS]);
    llm.push_many([
        delegate("secure_ops", "save my address: 6 Birch Row", None),
        update_address("6 Birch Row"),
        Step::Reply("Saved.".into()),
        Step::Reply("Your address is saved.".into()),
    ]);

    let first = Hearth::spawn(&config, &env);
    let (status, asked) = first
        .post_json(
            "/inbound",
            json!({"user_id": "alice", "text": "new address"}),
        )
        .await;
    assert_eq!(
        (status, asked["status"].clone()),
        (200, json!("confirmation_required")),
        "{asked}"
    );
    let second = first.kill().start().await;
    let (status, answered) = second.confirm(json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}))
    .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["reply"], "Your address is saved.");
    assert_eq!(
        llm.request_count(),
        4,
        "nobody was asked again after the restart"
    );
    assert!(system_prompt(&llm, 2).starts_with("You are secure_ops."));
    assert_eq!(llm.tool_result_seen(2), "saved address = 6 Birch Row");
    assert_eq!(llm.tool_result_seen(3), "Saved.");

    // The address is stored: the next prompt about alice carries it.
    second
        .post_json(
            "/inbound",
            json!({"user_id": "alice", "text": "where do I live?"}),
        )
        .await;
    assert!(
        system_prompt(&llm, 4).contains("- address: 6 Birch Row"),
        "{}",
        system_prompt(&llm, 4)
    );
}
