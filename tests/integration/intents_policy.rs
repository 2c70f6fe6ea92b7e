//! The intents engine's policy over the real HTTP channel: allow, deny and escalate, the
//! parameters telemetry masks, and an escalation answered, declined, expired or withdrawn.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use hearth::actors::request_queue::CancelPending;

use crate::intents::{Wire, classified, orders_config_with, stages, start, successful_calls};
use crate::support::hearth_app::TestApp;
use crate::support::intents_profile::write_intents;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::llm_server::Step;

/// How long a child's message may take to get its outcome after a parent's answer.
const WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// An intents file for policy and redaction: `refund_request` (order id and amount, the
/// order tool standing in for a refund) with rules on role, amount and order.
pub(crate) const POLICY_INTENTS: &str = r#"
data_source: { kind: json, path: "ORDERS" }
redaction: { params: [card_number] }
intents:
  - id: refund_request
    description: Ask for a refund of an order
    required_params: [order_id, amount, card_number]
    tool: check_order_status
    respond:
      post: "Refund of {amount} for {order_id} noted ({result.status})."
policy:
  rules:
    - intent: refund_request
      params: [{ name: order_id, op: "==", value: "O-66666" }]
      decision: deny
      message: "order O-66666 was refunded already"
    - intent: refund_request
      role: child
      params: [{ name: amount, op: ">", value: 20 }]
      decision: escalate
      message: "refunds over 20 need a parent"
"#;

pub(crate) fn write_policy_intents(folder: &Path) -> PathBuf {
    write_intents(folder, POLICY_INTENTS)
}

pub(crate) fn refund(order: &str, amount: &str) -> Step {
    classified(
        Some("refund_request"),
        json!({"order_id": order, "amount": amount, "card_number": "4111111111111111"}),
        0.9,
    )
}

#[actix::test]
async fn policy_allows_denies_and_escalates_and_params_are_redacted() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let app = start(&llm, &file, Wire::OpenAi).await;

    llm.push(refund("O-12345", "25"));
    assert_eq!(
        app.ask("alice", "/orders refund 25 on O-12345").await,
        "Refund of 25 for O-12345 noted (shipped)."
    );
    llm.push(refund("O-66666", "5"));
    assert_eq!(
        app.ask("alice", "/orders refund O-66666").await,
        "I can't process that request: order O-66666 was refunded already"
    );
    // Escalated: it waits for a parent (a_child_s_request_over_the_limit_waits_for_a_parent).
    escalated(&app, &llm).await;
    llm.push(refund("O-12345", "5"));
    assert_eq!(
        app.ask("bob", "/orders refund 5 on O-12345").await,
        "Refund of 5 for O-12345 noted (shipped)."
    );

    let alice = stages(&app, "http:alice").await;
    let bob = stages(&app, "http:bob").await;
    let policy: Vec<&Value> = alice
        .iter()
        .chain(bob.iter())
        .filter(|event| event["stage"] == "policy_check")
        .map(|event| &event["payload"]["decision"])
        .collect();
    assert_eq!(
        policy,
        [
            &json!("allow"),
            &json!("deny"),
            &json!("escalate"),
            &json!("allow")
        ]
    );
    assert_eq!(successful_calls(&bob), 1, "the escalated call did not run");
    // The card number never reaches telemetry; the other values do.
    let all = serde_json::to_string(&(alice, bob)).unwrap();
    assert!(!all.contains("4111111111111111"), "{all}");
    assert!(all.contains("[redacted]"));
    assert!(all.contains("O-12345"));
    app.stop().await;
}

/// Bob (a child) asks for a refund over the limit: the escalation's confirmation.
pub(crate) async fn escalated(app: &TestApp, llm: &ScriptedLlmServer) -> Value {
    llm.push(refund("O-12345", "25"));
    let (status, asked) = app
        .send(json!({"user_id": "bob", "text": "/orders refund 25 on O-12345"}))
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert!(
        prompt.starts_with("bob asks a parent to approve this (refunds over 20 need a parent)."),
        "{prompt}"
    );
    assert!(prompt.contains("• amount: 25"), "{prompt}");
    asked
}

pub(crate) async fn answer(
    app: &TestApp,
    asked: &Value,
    user: &str,
    approve: bool,
) -> (u16, Value) {
    app.post_json(
        "/inbound/confirm",
        json!({"confirmation_id": asked["confirmation"]["id"], "user_id": user,
               "approve": approve}),
    )
    .await
}

#[actix::test]
async fn a_child_s_request_over_the_limit_waits_for_a_parent() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let app = start(&llm, &file, Wire::OpenAi).await;

    // Approved by a parent: the call runs, and the child's message gets the outcome; the
    // parent hears only that the answer counted.
    let asked = escalated(&app, &llm).await;
    let (status, body) = answer(&app, &asked, "bob", true).await;
    assert_eq!(status, 403, "the child cannot approve: {body}");
    let (status, body) = answer(&app, &asked, "alice", true).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "approved", "{body}");
    assert_eq!(body["asked_by"], "bob", "{body}");
    assert!(body.get("reply").is_none(), "the outcome is bob's: {body}");
    let id = asked["id"].as_str().unwrap();
    let child = app.record_when(id, "bob", "answered", WAIT).await;
    assert_eq!(child["reply"], "Refund of 25 for O-12345 noted (shipped).");
    let (status, _) = app.get(&format!("/inbound/{id}?user_id=alice")).await;
    assert_eq!(status, 404, "the child's message stays the child's");

    // Declined by a parent: nothing runs, and the child is told.
    let asked = escalated(&app, &llm).await;
    let (status, body) = answer(&app, &asked, "alice", false).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "declined", "{body}");
    let id = asked["id"].as_str().unwrap();
    let child = app.record_when(id, "bob", "answered", WAIT).await;
    assert_eq!(
        child["reply"],
        "A parent declined that request, so nothing was done."
    );
    let events = stages(&app, "http:bob").await;
    assert_eq!(successful_calls(&events), 1, "only the approved call ran");
    app.stop().await;
}

#[actix::test]
async fn an_escalation_nobody_answers_expires_and_the_child_is_told() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let folder = tempfile::tempdir().unwrap();
    let path = orders_config_with(
        folder.path(),
        &llm,
        &file,
        "confirmation_timeout_seconds: 1, ",
    );
    let app = TestApp::start_from(folder, &path, &[]).await;
    let asked = escalated(&app, &llm).await;
    let id = asked["id"].as_str().unwrap();
    let child = app
        .record_when(id, "bob", "answered", std::time::Duration::from_secs(15))
        .await;
    assert_eq!(
        child["reply"], "No parent answered in time, so nothing was done. You can ask again later.",
        "{child}"
    );
    let (status, body) = answer(&app, &asked, "alice", true).await;
    assert_eq!(status, 410, "too late to approve: {body}");
    app.stop().await;
}

#[actix::test]
async fn a_child_s_cancel_withdraws_a_request_waiting_for_a_parent() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let app = start(&llm, &file, Wire::OpenAi).await;
    let asked = escalated(&app, &llm).await;
    let cancelled = app
        .running
        .queue
        .send(CancelPending {
            member_id: "bob".into(),
            conversation_key: "http:bob".into(),
        })
        .await
        .unwrap()
        .unwrap();
    assert!(cancelled.plan);
    // A parent's approval after that runs nothing.
    let (status, body) = answer(&app, &asked, "alice", true).await;
    assert_eq!(status, 200, "{body}");
    let id = asked["id"].as_str().unwrap();
    let child = app.record_when(id, "bob", "answered", WAIT).await;
    assert_eq!(child["reply"], hearth::intents::CANCELLED_REPLY);
    let events = stages(&app, "http:bob").await;
    assert_eq!(successful_calls(&events), 0);
    app.stop().await;
}
