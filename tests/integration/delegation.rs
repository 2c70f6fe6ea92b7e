//! Delegation end to end (seed 004 §5.1): the `delegate_to_service` tool, each
//! delegation level, `confirm_delegation` respected or overridden, loops and depth
//! refused, and the target running in an isolated sub-conversation.

use serde_json::{Value, json};

use crate::support::hearth_app::{API_KEY, TestApp};
use crate::support::llm_server::{ScriptedLlmServer, Step};

const PROFILES: &str = r#"  - id: helper
    description: "Does sums."
    processing_config: { delegation_security_level: unrestricted, prompts: { system_prompt: "You are the helper." } }
  - id: helper2
    description: "Second helper."
    processing_config: { delegation_security_level: unrestricted }
  - id: helper3
    description: "Third helper."
    processing_config: { delegation_security_level: unrestricted }
  - id: vault
    description: "Keeps secrets."
    processing_config: { delegation_security_level: blocked }
"#;

const DELEGATION_TOOLS: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
    "profile_get,profile_update,delegate_to_service",
);

async fn start(llm: &ScriptedLlmServer) -> TestApp {
    TestApp::start_with_profiles(&llm.base_url(), PROFILES, &[DELEGATION_TOOLS]).await
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

fn tool_result(llm: &ScriptedLlmServer, index: usize) -> String {
    let messages = messages(llm, index);
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"].as_str().unwrap().to_string()
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
    assert_eq!(tool_result(&llm, 3), "42");

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

async fn answer_confirmation(app: &TestApp, asked: &Value, approve: bool) -> Value {
    let response = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header("X-API-Key", API_KEY)
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
    assert_eq!(tool_result(&llm, 2), "7");
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
    assert!(tool_result(&llm, 1).starts_with("The family member declined"));
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
    let result = tool_result(&llm, 1);
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
    let refused = tool_result(&llm, 2);
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
    let refused = tool_result(&llm, 3);
    assert!(
        refused.contains("at most 2 nested delegations"),
        "{refused}"
    );
}
