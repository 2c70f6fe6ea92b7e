//! MCP tools in a profile's stack, end to end: the model calls a real MCP server's tool
//! through hearth's pipeline, and a profile without the server never sees its tools; a
//! server's question (elicitation) is asked in the member's chat and their next message
//! answers it.

use serde_json::{Value, json};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::{
    ELICITATION_TOOL, app_with_everything, app_with_everything_and, everything_stdio_or_skip,
};
use crate::support::test_config::{ProfileParts, TestConfig, profile};

#[actix::test]
async fn a_profile_calls_its_mcp_servers_tools_and_others_do_not_see_them() {
    let Some(everything) = everything_stdio_or_skip("mcp_pipeline") else {
        return;
    };
    let command = everything.command.clone().unwrap();
    let args: Vec<String> = everything.args.clone();
    let toolbox = |config: TestConfig| {
        config
            .profile(
                profile("toolbox")
                    .command("/tools")
                    .mcp_servers(&["everything"]),
            )
            .mcp_server("everything", &command, &args, |_| {})
    };
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start_with(&llm.base_url(), toolbox, &[]).await;
    assert!(app.app().mcp.states()["everything"].connected);
    llm.push_many([
        Step::ToolCalls(vec![(
            "everything__echo".into(),
            json!({"message": "hi from mcp"}),
        )]),
        Step::Reply("The server echoed.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "/tools echo something").await,
        "The server echoed."
    );
    let requests = llm.requests();
    let offered: Vec<String> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        offered.contains(&"everything__echo".to_string()),
        "{offered:?}"
    );
    let tool_result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(tool_result.contains("hi from mcp"), "{tool_result}");

    // The default profile does not enable the server: none of its tools are offered.
    app.ask("alice", "hello").await;
    let tools = &llm.requests()[2].body["tools"];
    assert!(!tools.to_string().contains("everything__"), "{tools}");
    app.stop().await;
}

fn says(user: &str, text: &str) -> Value {
    json!({"user_id": user, "text": text})
}

#[actix::test]
async fn a_servers_question_is_asked_in_the_chat_and_the_next_message_answers_it() {
    let llm = ScriptedLlmServer::start();
    let Some(app) = app_with_everything("elicitation_in_chat", &llm).await else {
        return;
    };
    llm.push_many([
        Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]),
        Step::Reply("You're signed up.".into()),
    ]);
    let (status, asked) = app.send(says("alice", "/tools sign me up")).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "question", "{asked}");
    let question = asked["question"].as_str().unwrap();
    assert!(
        question.starts_with("everything asks: Please provide inputs for the following fields:"),
        "{question}"
    );
    assert!(
        question.contains("Your full, legal name [required]"),
        "{question}"
    );
    assert!(
        question.contains("one of Superman, Green Lantern, Wonder Woman"),
        "{question}"
    );
    let asking_id = asked["id"].as_str().unwrap().to_string();

    // A reply that does not fit the form is explained and asked again; nothing reaches
    // the server or the model meanwhile.
    let (status, again) = app.send(says("alice", "integer: lots")).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["status"], "question", "{again}");
    let question = again["question"].as_str().unwrap();
    assert!(question.starts_with("That didn't fit:"), "{question}");
    assert!(
        question.contains("\"lots\" is not a whole number"),
        "{question}"
    );
    assert!(question.contains("String is required"), "{question}");
    assert_eq!(llm.requests().len(), 1);

    let (status, answered) = app
        .send(says(
            "alice",
            "name: Alice Example\nBoolean: yes\ninteger: 7\ntitledSingleSelectEnum: green lantern",
        ))
        .await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["status"], "answered", "{answered}");
    assert_eq!(answered["reply"], "You're signed up.");
    // The answer belongs to the turn that asked: its stored reply is the turn's.
    assert_eq!(answered["id"], asking_id.as_str());
    let (_, stored) = app
        .get(&format!("/inbound/{asking_id}?user_id=alice"))
        .await;
    assert!(stored.contains("You're signed up."), "{stored}");

    let seen = llm.tool_result_seen(1);
    assert!(
        seen.contains("User provided the requested information"),
        "{seen}"
    );
    assert!(seen.contains("- Name: Alice Example"), "{seen}");
    assert!(seen.contains("- Agreed to terms: true"), "{seen}");
    assert!(seen.contains("- Favorite Integer: 7"), "{seen}");
    assert!(seen.contains("hero-2"), "{seen}");
    assert_eq!(llm.requests().len(), 2);

    // The question is gone with its turn: the next message is an ordinary one.
    llm.push(Step::Reply("Hello again.".into()));
    assert_eq!(app.ask("alice", "hello").await, "Hello again.");
    app.stop().await;
}

#[actix::test]
async fn skip_declines_and_cancel_cancels_a_servers_question() {
    let llm = ScriptedLlmServer::start();
    let Some(app) = app_with_everything("elicitation_declined_in_chat", &llm).await else {
        return;
    };
    for (reply, expected) in [
        ("skip", "User declined to provide the requested information"),
        ("cancel", "User cancelled the elicitation dialog"),
    ] {
        llm.push_many([
            Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]),
            Step::Reply(format!("Understood: {reply}.")),
        ]);
        let (_, asked) = app.send(says("alice", "/tools sign me up")).await;
        assert_eq!(asked["status"], "question", "{asked}");
        assert_eq!(
            app.ask("alice", reply).await,
            format!("Understood: {reply}.")
        );
        let seen = llm.tool_result_seen(llm.requests().len() - 1);
        assert!(seen.contains(expected), "{seen}");
        assert!(!seen.contains("User provided"), "{seen}");
    }
    app.stop().await;
}

#[actix::test]
async fn only_the_member_who_was_asked_answers_a_question() {
    let llm = ScriptedLlmServer::start();
    let Some(app) = app_with_everything("elicitation_other_member", &llm).await else {
        return;
    };
    llm.push(Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]));
    // The same session id: over HTTP each member's session is their own conversation.
    let in_family_chat =
        |user: &str, text: &str| json!({"user_id": user, "text": text, "session_id": "family"});
    let (_, asked) = app.send(in_family_chat("alice", "/tools sign me up")).await;
    assert_eq!(asked["status"], "question", "{asked}");
    // Bob's message is a turn of his own conversation, never the answer to alice's question.
    llm.push(Step::Reply("Bob's own turn.".into()));
    let (_, bob) = app.send(in_family_chat("bob", "name: Bob Intruder")).await;
    assert_eq!(bob["reply"], "Bob's own turn.", "{bob}");
    llm.push(Step::Reply("Alice is signed up.".into()));
    let (_, alice) = app
        .send(in_family_chat("alice", "name: Alice Example"))
        .await;
    assert_eq!(alice["reply"], "Alice is signed up.", "{alice}");
    let seen = llm.tool_result_seen(2);
    assert!(seen.contains("- Name: Alice Example"), "{seen}");
    assert!(!seen.contains("Intruder"), "{seen}");
    app.stop().await;
}

#[actix::test]
async fn a_delegated_turns_server_question_is_asked_in_the_members_chat() {
    let llm = ScriptedLlmServer::start();
    let delegation = (
        "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
        "profile_get,delegate_to_service",
    );
    let Some(app) = app_with_everything_and("elicitation_delegated", &llm, &[delegation]).await
    else {
        return;
    };
    llm.push_many([
        Step::ToolCalls(vec![(
            "delegate_to_service".into(),
            json!({"target_service_id": "toolbox", "user_request": "sign alice up"}),
        )]),
        Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]),
        Step::Reply("Signed up as Alice Example.".into()),
        Step::Reply("The toolbox signed you up.".into()),
    ]);
    let (_, asked) = app.send(says("alice", "please sign me up")).await;
    assert_eq!(asked["status"], "question", "{asked}");
    assert!(
        asked["question"]
            .as_str()
            .unwrap()
            .starts_with("everything asks:"),
        "{asked}"
    );
    let (_, answered) = app.send(says("alice", "name: Alice Example")).await;
    assert_eq!(
        answered["reply"], "The toolbox signed you up.",
        "{answered}"
    );
    let seen = llm.tool_result_seen(2);
    assert!(seen.contains("- Name: Alice Example"), "{seen}");
    assert_eq!(llm.tool_result_seen(3), "Signed up as Alice Example.");
    app.stop().await;
}

#[actix::test]
async fn a_servers_question_waits_as_long_as_the_profiles_confirmation_timeout() {
    let llm = ScriptedLlmServer::start();
    let Some(everything) = everything_stdio_or_skip("elicitation_profile_timeout") else {
        return;
    };
    let (command, args) = (everything.command.clone().unwrap(), everything.args.clone());
    // The /tools profile gives its member one second; the default profile five minutes.
    let toolbox = |config: TestConfig| {
        let toolbox = profile("toolbox")
            .command("/tools")
            .processing(&[("confirmation_timeout_seconds", 1.into())])
            .mcp_servers(&["everything"]);
        config
            .profile(toolbox)
            .mcp_server("everything", &command, &args, |_| {})
    };
    let app = Hearth::start_with(&llm.base_url(), toolbox, &[]).await;
    llm.push_many([
        Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]),
        Step::Reply("Nobody answered.".into()),
    ]);
    let (_, asked) = app.send(says("alice", "/tools sign me up")).await;
    assert_eq!(asked["status"], "question", "{asked}");
    let id = asked["id"].as_str().unwrap();
    // The question times out after the profile's second; the turn then answers.
    let record = app
        .record_when(id, "alice", "answered", std::time::Duration::from_secs(15))
        .await;
    assert_eq!(record["reply"], "Nobody answered.", "{record}");
    app.stop().await;
}

#[actix::test]
async fn a_huge_tool_result_is_cut_before_the_model_reads_it() {
    let llm = ScriptedLlmServer::start();
    let Some(app) = app_with_everything("mcp_huge_result", &llm).await else {
        return;
    };
    let huge = "all work and no play ".repeat(20_000);
    llm.push_many([
        Step::ToolCalls(vec![("everything__echo".into(), json!({"message": huge}))]),
        Step::Reply("That was long.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "/tools echo a lot").await,
        "That was long."
    );
    let seen = llm.tool_result_seen(1);
    let limit = hearth::tools::mcp::MAX_RESULT_BYTES;
    assert!(
        seen.len() < limit + 100,
        "{} bytes reached the model",
        seen.len()
    );
    assert!(
        seen.contains(&format!("[result cut at {limit} of ")),
        "{}",
        &seen[seen.len() - 80..]
    );
    app.stop().await;
}
