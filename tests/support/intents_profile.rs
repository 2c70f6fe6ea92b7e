//! The intents engine's profiles as the tests and the intents benchmark add them to the
//! test config: `/orders` and the refund limits with their intents files, escalation to a
//! parent; hearth started with them, the classifier's answers scripted, and the stages a
//! turn stored.

// The integration tests and the intents benchmark each use a different part of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use hearth::config::ServiceProfileConfig;
use serde_json::{Value, json};
use serde_yaml::Value as YamlValue;

use super::hearth_app::Hearth;
use super::llm_server::{ScriptedLlmServer, Step};
use super::telegram::{StoredMessage, TelegramServer};
use super::telegram_family::telegram_family;
use super::test_config::{ProfileParts, TestConfig, profile};

/// Stands in an intents file's text for the path of the shipped `data/orders.json`.
pub const ORDERS_PATH: &str = "ORDERS";

/// The `/orders` profile over `intents_file` (`check_order_status` its one tool, asking
/// nobody); `processing` adds keys to its `processing_config`.
pub fn orders_profile(
    intents_file: &Path,
    processing: &[(&str, YamlValue)],
) -> ServiceProfileConfig {
    profile("orders")
        .command("/orders")
        .processing(processing)
        .processing(&[
            ("engine", "intents".into()),
            ("intents_file", intents_file.display().to_string().into()),
        ])
        .local_tools(&["check_order_status"])
        .confirm(&[])
}

/// `text` written as `intents.yaml` in `folder`, `ORDERS` in it standing for the shipped
/// `data/orders.json`; its path.
pub fn write_intents(folder: &Path, text: &str) -> PathBuf {
    let orders = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/orders.json");
    let path = folder.join("intents.yaml");
    std::fs::write(
        &path,
        text.replace(ORDERS_PATH, &orders.display().to_string()),
    )
    .expect("intents file written");
    path
}

/// The shipped example: `config/intents.example.yaml` over `data/orders.json`.
pub fn example_intents() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/intents.example.yaml")
}

/// Which wire format the scripted model speaks.
#[derive(Clone, Copy, Debug)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

/// The test config plus an `orders` profile (`/orders`) on `intents_file`, with bob a child.
pub fn orders_config(folder: &Path, llm: &ScriptedLlmServer, intents_file: &Path) -> PathBuf {
    orders_config_with(folder, llm, intents_file, &[])
}

/// `orders_config`, `processing` adding keys to the profile's `processing_config`.
pub fn orders_config_with(
    folder: &Path,
    llm: &ScriptedLlmServer,
    intents_file: &Path,
    processing: &[(&str, YamlValue)],
) -> PathBuf {
    TestConfig::new(folder, &llm.base_url())
        .child("bob")
        .profile(orders_profile(intents_file, processing))
        .write(folder)
}

/// The test config with bob a child and the `orders` profile (`/orders`) on `intents_file`,
/// whose `check_order_status` asks the member before it runs.
pub fn orders_config_confirming(
    folder: &Path,
    llm: &ScriptedLlmServer,
    intents_file: &Path,
) -> PathBuf {
    TestConfig::new(folder, &llm.base_url())
        .child("bob")
        .profile(orders_profile(intents_file, &[]).confirm(&["check_order_status"]))
        .write(folder)
}

/// hearth with the `orders` profile on `intents_file`, the model speaking `wire`.
pub async fn start(llm: &ScriptedLlmServer, intents_file: &Path, wire: Wire) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = orders_config(folder.path(), llm, intents_file);
    let anthropic_url = llm.anthropic_base_url();
    let overrides: Vec<(&str, &str)> = match wire {
        Wire::OpenAi => Vec::new(),
        Wire::Anthropic => vec![
            ("HEARTH__LLMS__MAIN__PROVIDER", "anthropic"),
            ("HEARTH__LLMS__MAIN__BASE_URL", anthropic_url.as_str()),
        ],
    };
    Hearth::start_from(folder, &path, &overrides).await
}

/// The classifier's JSON answer.
pub fn classified(intent: Option<&str>, params: Value, confidence: f64) -> Step {
    Step::Reply(classified_text(intent, params, confidence))
}

/// The classifier's answer naming `intent` with `params`, as the model writes it.
pub fn classified_text(intent: Option<&str>, params: Value, confidence: f64) -> String {
    json!({"intent_id": intent, "extracted_params": params, "missing_params": [],
           "confidence": confidence})
    .to_string()
}

/// `member` asks `/orders check my order` and is asked `question` for the missing id: a
/// plan of theirs now waits for the answer.
pub async fn asked_which_order(
    app: &Hearth,
    llm: &ScriptedLlmServer,
    member: &str,
    question: &str,
) {
    llm.push_many([
        classified(Some("order_status"), json!({}), 0.9),
        Step::Reply(question.into()),
    ]);
    assert_eq!(app.ask(member, "/orders check my order").await, question);
}

/// How many of `events` are a tool call that ran and succeeded.
pub fn successful_calls(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| e["stage"] == "tool_execute" && e["payload"]["success"] == true)
        .count()
}

/// The stage events stored for a conversation, flushed first.
pub async fn stages(app: &Hearth, conversation: &str) -> Vec<Value> {
    app.app().stores.telemetry.flush().await;
    app.app()
        .stores
        .usage
        .stages_of(&conversation.parse().unwrap(), 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|event| event.payload)
        .collect()
}

/// The names of the stages of `events`, in order.
pub fn stage_names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|event| event["stage"].as_str().unwrap().to_string())
        .collect()
}

pub const WAIT: Duration = Duration::from_secs(10);

/// The `/orders` intents profile with `LIMITS`, its intents file written in `folder`;
/// `processing` adds keys to its `processing_config`.
pub fn limits_profile(folder: &Path, processing: &[(&str, YamlValue)]) -> ServiceProfileConfig {
    orders_profile(&write_intents(folder, LIMITS), processing)
}

/// The config for `folder`: Telegram on `telegram`, the `/orders` profile with `LIMITS`,
/// alice (1001) a parent, bob (1002) a child.
pub fn escalation_family(
    folder: &Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
) -> TestConfig {
    telegram_family(folder, llm, telegram)
        .child("bob")
        .profile(limits_profile(folder, &[]))
}

/// `escalation_family`, written in `folder`.
pub fn escalation_config(
    folder: &Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
) -> PathBuf {
    escalation_family(folder, llm, telegram).write(folder)
}

pub fn refund(amount: &str) -> Step {
    Step::Reply(
        json!({"intent_id": "refund_request",
               "extracted_params": {"order_id": "O-12345", "amount": amount},
               "missing_params": [], "confidence": 0.9})
        .to_string(),
    )
}

/// The `nth` escalation prompt the bot showed in `chat` (counting from 0; answered ones
/// keep their text).
pub async fn nth_prompt(telegram: &TelegramServer, chat: i64, nth: usize) -> StoredMessage {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let prompts: Vec<StoredMessage> = telegram
            .bot_messages_in(chat)
            .into_iter()
            .filter(|message| {
                message
                    .text
                    .as_deref()
                    .is_some_and(|text| text.contains("asks a parent to approve"))
            })
            .collect();
        if let Some(prompt) = prompts.get(nth) {
            return prompt.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no prompt {nth} in chat {chat}: {:?}; in the child's chat: {:?}",
            telegram.bot_messages_in(chat),
            telegram.bot_messages_in(1002)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn write_policy_intents(folder: &Path) -> PathBuf {
    write_intents(folder, POLICY_INTENTS)
}

pub const LIMITS: &str = r#"
data_source: { kind: json, path: "ORDERS" }
intents:
  - id: refund_request
    description: Ask for a refund of an order
    required_params: [order_id, { name: amount, type: number }]
    tool: check_order_status
    respond:
      pre: "Refunding {amount} on {order_id}."
      post: "Refund of {amount} for {order_id} noted ({result.status})."
policy:
  rules:
    - { intent: refund_request, role: child, params: [{ name: amount, op: ">", value: 20 }], decision: escalate, message: "refunds over 20 need a parent" }
"#;

/// An intents file for policy and redaction: `refund_request` (order id and amount, the
/// order tool standing in for a refund) with rules on role, amount and order.
pub const POLICY_INTENTS: &str = r#"
data_source: { kind: json, path: "ORDERS" }
redaction: { params: [card_number] }
intents:
  - id: refund_request
    description: Ask for a refund of an order
    required_params: [order_id, { name: amount, type: number, min: 0 }, card_number]
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

/// The classifier asks for a refund of `amount` on `order`, paid by card.
pub fn refund_of_order(order: &str, amount: &str) -> Step {
    classified(
        Some("refund_request"),
        json!({"order_id": order, "amount": amount, "card_number": "4111111111111111"}),
        0.9,
    )
}
