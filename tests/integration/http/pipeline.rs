//! The core pipeline end to end over HTTP: inbound → queue → processing → broker →
//! scripted LLM (real HTTP) → SQLite → reply.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};

/// The chat messages the LLM received in request `index`.
fn messages_of(llm: &ScriptedLlmServer, index: usize) -> Vec<Value> {
    llm.requests()[index].body["messages"]
        .as_array()
        .expect("messages array")
        .clone()
}

fn contents(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[actix::test]
async fn a_turn_uses_profile_facts_time_and_history() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;

    assert_eq!(app.ask("alice", "hello").await, "echo: hello");
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "1 Elm Street"}),
        )]),
        Step::Reply("I'll remember that.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "I live at 1 Elm Street").await,
        "I'll remember that."
    );
    // The tool result went back to the model in the second request of that turn.
    let tool_turn = messages_of(&llm, 2);
    let tool_message = tool_turn.last().unwrap();
    assert_eq!(tool_message["role"], "tool");
    assert_eq!(tool_message["content"], "saved address = 1 Elm Street");

    app.ask("alice", "where do I live?").await;
    let last = messages_of(&llm, 3);
    let system = last[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are a test assistant. Current time is "),
        "{system}"
    );
    assert!(
        system.contains("CET") || system.contains("CEST"),
        "Berlin time: {system}"
    );
    assert!(
        system.contains("## About the user\n- name: Alice\n- address: 1 Elm Street"),
        "{system}"
    );
    // History: plain texts of earlier turns, no tool traffic, then the new message.
    assert_eq!(
        contents(&last[1..]),
        vec![
            "hello",
            "echo: hello",
            "I live at 1 Elm Street",
            "I'll remember that.",
            "where do I live?"
        ]
    );
    // Another member has neither alice's facts nor her history.
    app.ask("bob", "hi").await;
    let bob = messages_of(&llm, 4);
    assert_eq!(bob.len(), 2);
    assert!(!bob[0]["content"].as_str().unwrap().contains("Elm"));
    app.stop().await;
}

#[actix::test]
async fn slash_commands_route_to_their_profile_and_history_is_bounded() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    for n in 1..=4 {
        app.ask("alice", &format!("/focus message {n}")).await;
    }
    let last = messages_of(&llm, 3);
    assert_eq!(
        last[0]["content"],
        "You are focused.\n\n## About the user\n- name: Alice\n"
    );
    // focused_assistant keeps max_history_messages: 2.
    assert_eq!(
        contents(&last[1..]),
        vec!["message 3", "echo: message 3", "message 4"]
    );
    app.stop().await;
}

#[actix::test]
async fn history_older_than_the_age_limit_is_left_out() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(
        &llm.base_url(),
        &[(
            "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__HISTORY_MAX_AGE_HOURS",
            "0",
        )],
    )
    .await;
    app.ask("alice", "first").await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    app.ask("alice", "second").await;
    assert_eq!(contents(&messages_of(&llm, 1)[1..]), vec!["second"]);
    app.stop().await;
}

#[actix::test]
async fn one_conversation_is_answered_in_order_while_others_run_in_parallel() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Delay(Duration::from_millis(80), Box::new(Step::Echo)));
    let app = std::sync::Arc::new(Hearth::start(&llm.base_url(), &[]).await);
    let mut tasks = Vec::new();
    for conversation in 0..6 {
        for n in 0..4 {
            let app = app.clone();
            tasks.push(tokio::spawn(async move {
                // Staggered so each message is accepted while the previous one still runs.
                tokio::time::sleep(Duration::from_millis(n * 25)).await;
                let (status, body) = app
                    .send(json!({
                        "user_id": "alice",
                        "session_id": format!("c{conversation}"),
                        "text": format!("c{conversation} m{n}"),
                    }))
                    .await;
                assert_eq!(status, 200, "{body}");
            }));
        }
    }
    let started = Instant::now();
    for task in tasks {
        task.await.unwrap();
    }
    // 4 turns of 80 ms in sequence per conversation; 6 conversations side by side.
    assert!(
        started.elapsed() < Duration::from_millis(6 * 4 * 80),
        "conversations ran in parallel"
    );
    assert!(
        llm.max_concurrent() >= 2,
        "more than one conversation at a time"
    );
    for conversation in 0..6 {
        let prefix = format!("c{conversation} ");
        let turns: Vec<Vec<String>> = llm
            .requests()
            .iter()
            .map(|request| contents(request.body["messages"].as_array().unwrap()))
            .filter(|texts| texts.last().unwrap().starts_with(&prefix))
            .collect();
        assert_eq!(turns.len(), 4);
        for (n, texts) in turns.iter().enumerate() {
            // Turn n saw all earlier turns of its conversation: strictly one after another,
            // in the order the messages were stored (on a busy machine the staggered sends
            // may arrive in another order than sent).
            assert_eq!(texts.len(), 2 + 2 * n, "turn {n} of {prefix}: {texts:?}");
            if let Some(earlier) = turns.get(n.wrapping_sub(1)) {
                assert_eq!(
                    &texts[..texts.len() - 2],
                    &earlier[..],
                    "turn {n} of {prefix}"
                );
            }
        }
        let mut sent: Vec<&String> = turns.iter().map(|texts| texts.last().unwrap()).collect();
        sent.sort();
        let expected: Vec<String> = (0..4).map(|n| format!("c{conversation} m{n}")).collect();
        assert_eq!(sent, expected.iter().collect::<Vec<_>>());
    }
}

#[actix::test]
async fn fifty_conversations_never_exceed_the_cloud_semaphore() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Delay(Duration::from_millis(50), Box::new(Step::Echo)));
    let app = std::sync::Arc::new(
        Hearth::start(
            &llm.base_url(),
            &[("HEARTH__QUEUE__MAX_PARALLEL_CONVERSATIONS", "50")],
        )
        .await,
    );
    let tasks: Vec<_> = (0..50)
        .map(|conversation| {
            let app = app.clone();
            tokio::spawn(async move {
                let (status, _) = app
                    .send(json!({"user_id": "bob", "session_id": format!("s{conversation}"), "text": "hi"}))
                    .await;
                assert_eq!(status, 200);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(llm.request_count(), 50);
    assert_eq!(
        llm.max_concurrent(),
        4,
        "llm_max_concurrent_cloud defaults to 4 and is reached"
    );
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains("hearth_llm_semaphore_waits_total{backend=\"cloud\"}"),
        "{metrics}"
    );
}

#[actix::test]
async fn a_local_backend_gets_one_call_at_a_time() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Delay(Duration::from_millis(30), Box::new(Step::Echo)));
    let app = std::sync::Arc::new(
        Hearth::start(&llm.base_url(), &[("HEARTH__LLMS__MAIN__BACKEND", "local")]).await,
    );
    let tasks: Vec<_> = (0..10)
        .map(|conversation| {
            let app = app.clone();
            tokio::spawn(async move {
                app.send(json!({"user_id": "bob", "session_id": format!("s{conversation}"), "text": "hi"}))
                    .await
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().0, 200);
    }
    assert_eq!(llm.max_concurrent(), 1);
}

#[actix::test]
async fn transient_errors_are_retried_honouring_retry_after() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    llm.push_many([
        Step::Error {
            status: 429,
            retry_after: Some(1),
            body: "slow down".into(),
        },
        Step::Error {
            status: 503,
            retry_after: None,
            body: "overloaded".into(),
        },
        Step::Reply("third time lucky".into()),
    ]);
    let started = Instant::now();
    assert_eq!(app.ask("alice", "hi").await, "third time lucky");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited the Retry-After second"
    );
    assert_eq!(llm.request_count(), 3);
    let (_, metrics) = app.get("/metrics").await;
    assert!(metrics.contains("outcome=\"rate_limited\"} 1"), "{metrics}");
}

#[actix::test]
async fn the_fallback_model_answers_when_the_main_one_keeps_failing() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(
        &llm.base_url(),
        &[(
            "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__LLM_FALLBACK_MODEL",
            "backup",
        )],
    )
    .await;
    let failure = Step::Error {
        status: 500,
        retry_after: None,
        body: "boom".into(),
    };
    llm.push_many([failure.clone(), failure.clone(), failure]);
    assert_eq!(app.ask("alice", "hi").await, "echo: hi");
    let models: Vec<String> = llm
        .requests()
        .iter()
        .map(|request| request.body["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        models,
        vec![
            "scripted-main",
            "scripted-main",
            "scripted-main",
            "scripted-backup"
        ]
    );
}

#[actix::test]
async fn llm_down_gets_an_apology_and_the_message_is_answered_later() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Error {
        status: 500,
        retry_after: None,
        body: "down".into(),
    });
    let app = Hearth::start(&llm.base_url(), &[("HEARTH__LLM_RETRY__MAX_ATTEMPTS", "1")]).await;
    let (status, body) = app
        .send(json!({"user_id": "alice", "text": "are you there?"}))
        .await;
    assert_eq!(status, 202, "{body}");
    let notice = body["notice"].as_str().unwrap();
    assert!(
        notice.starts_with("Sorry, I can't reach my language model"),
        "{notice}"
    );
    assert!(
        !notice.contains("500") && !notice.contains("error"),
        "no internals: {notice}"
    );
    let id = body["id"].as_str().unwrap().to_string();

    llm.set_default(Step::Echo);
    let record = app
        .record_when(&id, "alice", "answered", Duration::from_secs(10))
        .await;
    assert_eq!(record["reply"], "echo: are you there?");
    // Answered once, no retry after it: `paused/retries.rs`, on the paused clock.
}

#[actix::test]
async fn a_full_backlog_answers_busy_instead_of_growing() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Delay(
        Duration::from_millis(700),
        Box::new(Step::Echo),
    ));
    let app = std::sync::Arc::new(
        Hearth::start(
            &llm.base_url(),
            &[
                ("HEARTH__QUEUE__MAX_BACKLOG", "2"),
                ("HEARTH__QUEUE__MAX_PARALLEL_CONVERSATIONS", "1"),
            ],
        )
        .await,
    );
    let waiting: Vec<_> = (0..2)
        .map(|n| {
            let app = app.clone();
            tokio::spawn(async move {
                app.send(json!({"user_id": "alice", "session_id": format!("s{n}"), "text": "hi"}))
                    .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let response = app
        .client
        .post(format!("{}/inbound", app.base_url))
        .header("X-API-Key", crate::support::hearth_app::API_KEY)
        .json(&json!({"user_id": "alice", "session_id": "s9", "text": "one more"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "busy, try again in a few seconds");
    for task in waiting {
        assert_eq!(task.await.unwrap().0, 200);
    }
    assert_eq!(
        llm.request_count(),
        2,
        "the refused message was never processed"
    );
}

#[actix::test]
async fn strangers_get_no_answer_and_duplicates_are_answered_once() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    let (status, body) = app.send(json!({"user_id": "mallory", "text": "hi"})).await;
    assert_eq!((status, body), (204, Value::Null));
    assert_eq!(llm.request_count(), 0);

    let message = json!({"user_id": "alice", "text": "once", "message_id": "m-1"});
    let (first_status, first) = app.send(message.clone()).await;
    let (again_status, again) = app.send(message).await;
    assert_eq!((first_status, again_status), (200, 200));
    assert_eq!(first["reply"], "echo: once");
    assert_eq!(again["reply"], "echo: once");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(llm.request_count(), 1);
}

#[actix::test]
async fn a_model_configured_as_anthropic_is_called_in_its_own_wire_format() {
    let llm = ScriptedLlmServer::start();
    let anthropic_url = llm.anthropic_base_url();
    let app = Hearth::start(
        &llm.base_url(),
        &[
            ("HEARTH__LLMS__MAIN__PROVIDER", "anthropic"),
            ("HEARTH__LLMS__MAIN__BASE_URL", anthropic_url.as_str()),
        ],
    )
    .await;
    assert_eq!(app.ask("alice", "bonjour").await, "echo: bonjour");
    let request = &llm.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert!(request.header("anthropic-version").is_some());
    let system = request.body["system"].as_str().unwrap();
    assert!(system.starts_with("You are a test assistant."), "{system}");
    assert_eq!(request.body["messages"][0]["role"], "user");
}
