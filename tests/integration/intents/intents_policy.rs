//! The intents engine's policy over the real HTTP channel: allow, deny and escalate, the
//! parameters telemetry masks, and an escalation answered, declined, expired or withdrawn;
//! each value read once into its declared type, the number the policy compares being the
//! one the tool gets, and a value that cannot be read asked for again.

use hearth::actors::request_queue::CancelPending;
use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::intents_profile::{
    Wire, orders_config_with, orders_profile, refund_of_order, stages, start, successful_calls,
    write_intents, write_policy_intents,
};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::everything_stdio_or_skip;
use crate::support::test_config::{ProfileParts, TestConfig};

/// How long a child's message may take to get its outcome after a parent's answer.
const WAIT: std::time::Duration = std::time::Duration::from_secs(15);

#[actix::test]
async fn policy_allows_denies_and_escalates_and_params_are_redacted() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let app = start(&llm, &file, Wire::OpenAi).await;

    llm.push(refund_of_order("O-12345", "25"));
    assert_eq!(
        app.ask("alice", "/orders refund 25 on O-12345").await,
        "Refund of 25 for O-12345 noted (shipped)."
    );
    llm.push(refund_of_order("O-66666", "5"));
    assert_eq!(
        app.ask("alice", "/orders refund O-66666").await,
        "I can't process that request: order O-66666 was refunded already"
    );
    // Escalated: it waits for a parent (a_child_s_request_over_the_limit_waits_for_a_parent).
    escalated(&app, &llm).await;
    llm.push(refund_of_order("O-12345", "5"));
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
pub(crate) async fn escalated(app: &Hearth, llm: &ScriptedLlmServer) -> Value {
    llm.push(refund_of_order("O-12345", "25"));
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

pub(crate) async fn answer(app: &Hearth, asked: &Value, user: &str, approve: bool) -> (u16, Value) {
    app.confirm(
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
        &[("confirmation_timeout_seconds", 1.into())],
    );
    let app = Hearth::start_from(folder, &path, &[]).await;
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
        .app()
        .queue
        .send(CancelPending {
            member_id: "bob".parse().unwrap(),
            conversation_key: "http:bob".parse().unwrap(),
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

#[actix::test]
async fn a_child_s_refund_of_1_000_is_a_thousand_for_the_policy_and_the_tool() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let app = start(&llm, &file, Wire::OpenAi).await;
    llm.push(refund_of_order("O-12345", "1,000"));
    let (status, asked) = app
        .send(json!({"user_id": "bob", "text": "/orders refund 1,000 on O-12345"}))
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(
        asked["status"], "confirmation_required",
        "1,000 is over 20: {asked}"
    );
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert!(prompt.contains("• amount: 1000\n"), "{prompt}");
    let (status, body) = answer(&app, &asked, "alice", true).await;
    assert_eq!(status, 200, "{body}");
    let child = app
        .record_when(asked["id"].as_str().unwrap(), "bob", "answered", WAIT)
        .await;
    assert_eq!(
        child["reply"],
        "Refund of 1000 for O-12345 noted (shipped)."
    );
    // The call that ran got the number the policy compared.
    let database = app.folder().join("hearth.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", database.display()))
        .await
        .unwrap();
    let plan: String = sqlx::query_scalar("SELECT plan FROM plan_executions")
        .fetch_one(&pool)
        .await
        .unwrap();
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let call = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["step"]["type"] == "tool_call")
        .unwrap();
    assert_eq!(call["status"], "completed", "{plan}");
    assert_eq!(
        call["step"]["params"],
        json!({"order_id": "O-12345", "amount": 1000, "card_number": "4111111111111111"})
    );
    assert_eq!(successful_calls(&stages(&app, "http:bob").await), 1);
    app.stop().await;
}

#[actix::test]
async fn a_value_that_cannot_be_read_is_asked_for_again_and_nothing_runs() {
    let llm = ScriptedLlmServer::start();
    let intents = tempfile::tempdir().unwrap();
    let file = write_policy_intents(intents.path());
    let app = start(&llm, &file, Wire::OpenAi).await;
    llm.push(refund_of_order("O-12345", "1e3"));
    assert_eq!(
        app.ask("alice", "/orders refund 1e3 on O-12345").await,
        "I couldn't read \"1e3\" as the amount: please write it as a number, like 25 or 12.50."
    );
    // Each answer is read the same way; the plan waits until one can be read.
    for (written, told) in [
        (
            "1.000",
            "I can't tell whether \"1.000\" means 1 or 1000: please write the amount again, \
             as 1000 or as 1.",
        ),
        (
            "-5",
            "I can't use \"-5\" as the amount: it must be at least 0.",
        ),
        (
            "NaN",
            "I couldn't read \"NaN\" as the amount: please write it as a number, like 25 or \
             12.50.",
        ),
    ] {
        llm.push(refund_of_order("O-12345", written));
        assert_eq!(app.ask("alice", written).await, told);
    }
    let events = stages(&app, "http:alice").await;
    assert_eq!(successful_calls(&events), 0, "nothing ran");
    assert_eq!(llm.request_count(), 4, "only the classifier was asked");
    let unreadable: Vec<&Value> = events
        .iter()
        .filter(|event| event["stage"] == "plan_created")
        .map(|event| &event["payload"]["unreadable_params"])
        .collect();
    assert_eq!(
        unreadable[0],
        &json!([{"param": "amount", "problem": "not_a_number"}])
    );
    // A value that can be read runs the call, with it.
    llm.push(refund_of_order("O-12345", "$12.50"));
    assert_eq!(
        app.ask("alice", "$12.50").await,
        "Refund of 12.5 for O-12345 noted (shipped)."
    );
    assert_eq!(successful_calls(&stages(&app, "http:alice").await), 1);
    app.stop().await;
}

/// What an MCP tool receives: server-everything's `echo` behind the pipe that logs every
/// `tools/call` hearth sends (`mcp_list_gate.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_receives_the_amount_as_a_json_number() {
    let Some(everything) = everything_stdio_or_skip("intents_typed_mcp_arguments") else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (gate, calls) = (
        folder.path().join("gate"),
        folder.path().join("calls.jsonl"),
    );
    std::fs::write(&gate, "open").unwrap();
    let mut args = vec![
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/mcp_list_gate.py"
        )
        .to_string(),
        gate.display().to_string(),
        folder.path().join("announce").display().to_string(),
        everything.command.clone().unwrap(),
    ];
    args.extend(everything.args.clone());
    let intents = write_intents(
        folder.path(),
        r#"
intents:
  - id: refund_request
    description: Ask for a refund, with a message
    required_params: [message, { name: amount, type: number, min: 0 }]
    tool: everything__echo
    respond:
      post: "Asked for a refund of {amount}."
policy:
  rules:
    - { intent: refund_request, role: child, params: [{ name: amount, op: ">", value: 20 }], decision: escalate, message: "refunds over 20 need a parent" }
"#,
    );
    let calls_file = calls.display().to_string();
    let config = TestConfig::new(folder.path(), &llm.base_url())
        .child("bob")
        .profile(
            orders_profile(&intents, &[])
                .local_tools(&[])
                .mcp_servers(&["everything"]),
        )
        .mcp_server("everything", "python3", &args, |server| {
            server
                .env
                .insert("HEARTH_TEST_MCP_CALLS".into(), calls_file);
        })
        .write(folder.path());
    let hearth = Hearth::spawn(&config, &test_env(&[]));
    llm.push(Step::Reply(
        json!({"intent_id": "refund_request",
               "extracted_params": {"message": "the parcel never came", "amount": "1 000"},
               "missing_params": [], "confidence": 0.9})
        .to_string(),
    ));
    let (status, asked) = hearth
        .post_json(
            "/inbound",
            json!({"user_id": "bob", "text": "/orders refund 1 000, the parcel never came"}),
        )
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let (status, body) = hearth
        .confirm(
            json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                   "approve": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let child = hearth
        .record_when(asked["id"].as_str().unwrap(), "bob", "answered", WAIT)
        .await;
    assert_eq!(child["reply"], "Asked for a refund of 1000.");
    let logged: Vec<Value> = std::fs::read_to_string(&calls)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    let arguments = &logged[0]["params"]["arguments"];
    assert_eq!(
        arguments,
        &json!({"message": "the parcel never came", "amount": 1000}),
        "{logged:?}"
    );
    assert!(arguments["amount"].is_u64(), "a JSON number: {arguments}");
}
