//! The intents engine with the real binary through kill -9: a plan waiting for the member,
//! a request waiting for a parent, a completed call not run again; and `hearth telemetry`.

use std::path::Path;

use hearth::intents::STAGES;
use serde_json::{Value, json};

use crate::support::hearth_app::{API_KEY, Hearth, test_env};
use crate::support::intents_profile::{
    classified, example_intents, orders_config, refund_of_order, write_intents,
    write_policy_intents,
};
use crate::support::llm_server::{ScriptedLlmServer, Step};

/// What `hearth telemetry --conversation http:alice` prints once it prints `lines` lines
/// (read beside the running hearth, whose telemetry is written in batches), or after 10 s.
async fn printed_telemetry(config: &Path, lines: usize) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
            .arg("--config")
            .arg(config)
            .args(["telemetry", "--conversation", "http:alice"])
            .envs(test_env(&[]))
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        if stdout.lines().count() >= lines || std::time::Instant::now() > deadline {
            return stdout;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_waiting_for_the_member_survives_a_kill_and_telemetry_shows_its_stages() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = orders_config(folder.path(), &llm, &example_intents());
    let env = test_env(&[]);

    let first = Hearth::spawn(&config, &env);
    llm.push_many([
        classified(Some("order_status"), json!({"order_id": null}), 0.9),
        Step::Reply("What's your order ID?".into()),
    ]);
    assert_eq!(
        first.ask("alice", "/orders check my order").await,
        "What's your order ID?"
    );
    // Telemetry is written in batches: stored before the kill, so it can be read after.
    printed_telemetry(&config, 10).await;
    let second = first.kill().start().await;
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-22222"}),
        0.9,
    ));
    assert_eq!(
        second.ask("alice", "O-22222").await,
        "I'll check order O-22222.\n\nYour order O-22222 is delivered on 2025-10-02."
    );

    // `hearth telemetry` prints both interactions' ten stages, in order.
    let stdout = printed_telemetry(&config, 20).await;
    second.kill();
    let printed: Vec<&str> = stdout
        .lines()
        .map(|line| line.split_whitespace().nth(2).unwrap_or_default())
        .collect();
    assert_eq!(printed.len(), 20, "{stdout}");
    assert_eq!(printed[..10], STAGES);
    assert_eq!(printed[10..], STAGES);
    assert!(stdout.contains("\"type\":\"ask_user\""), "{stdout}");
    assert!(
        stdout.contains("\"tool_name\":\"check_order_status\""),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_survives_a_kill_and_a_parent_answers_after_the_restart() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let folder = tempfile::tempdir().unwrap();
    let config = orders_config(folder.path(), &llm, &file);
    let env = test_env(&[]);
    let first = Hearth::spawn(&config, &env);
    llm.push(refund_of_order("O-12345", "25"));
    let (status, asked) = first
        .post_json(
            "/inbound",
            json!({"user_id": "bob", "text": "/orders refund 25 on O-12345"}),
        )
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let second = first.kill().start().await;
    let answer = json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                        "approve": true});
    let (status, body) = second.confirm(answer).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "approved", "{body}");
    // The outcome is the child's, on their message.
    let id = asked["id"].as_str().unwrap();
    let child = second
        .record_when(id, "bob", "answered", std::time::Duration::from_secs(15))
        .await;
    assert_eq!(child["reply"], "Refund of 25 for O-12345 noted (shipped).");
    second.kill();
}

/// `order_status` without a `post` template: the model words the result.
const WORDED_BY_THE_MODEL: &str = r#"
data_source: { kind: json, path: "ORDERS" }
intents:
  - id: order_status
    description: Retrieve shipping/delivery info for a given order
    required_params: [order_id]
    tool: check_order_status
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_tool_call_is_not_run_again_after_a_kill() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let intents = write_intents(folder.path(), WORDED_BY_THE_MODEL);
    let config = orders_config(folder.path(), &llm, &intents);
    let env = test_env(&[]);
    let message = json!({"user_id": "alice", "text": "/orders where is O-12345?",
                         "message_id": "m-1"});
    let post = |base: String| {
        let message = message.clone();
        async move {
            let response = reqwest::Client::new()
                .post(format!("{base}/inbound"))
                .header("X-API-Key", API_KEY)
                .json(&message)
                .send()
                .await
                .ok()?;
            response.json::<Value>().await.ok()
        }
    };

    // The tool runs, then the model hangs while wording the result: hearth is killed.
    llm.push_many([
        classified(Some("order_status"), json!({"order_id": "O-12345"}), 0.9),
        Step::Hang,
    ]);
    let first = Hearth::spawn(&config, &env);
    let pending = tokio::spawn(post(first.base_url.clone()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while llm.request_count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "never reached the wording"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    printed_telemetry(&config, 8).await;
    first.kill();
    assert!(pending.await.unwrap().is_none());

    // After the restart the message goes on from its plan: worded, the call not run again.
    llm.push(Step::Reply(
        "Your order O-12345 is on its way with UPS.".into(),
    ));
    let second = Hearth::spawn(&config, &env);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let answered = loop {
        if let Some(body) = post(second.base_url.clone()).await
            && body["status"] == "answered"
        {
            break body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not answered after the restart"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(
        answered["reply"],
        "Your order O-12345 is on its way with UPS."
    );
    assert_eq!(llm.request_count(), 3, "not classified again");
    // What the model worded is the stored result of the one call.
    let wording = llm.requests()[2].body.to_string();
    assert!(wording.contains("shipped via UPS"), "{wording}");
    let stdout = printed_telemetry(&config, 12).await;
    second.kill();
    let calls = stdout
        .lines()
        .filter(|line| line.contains(" tool_execute ") && line.contains("\"success\":true"))
        .count();
    assert_eq!(calls, 1, "{stdout}");
}
