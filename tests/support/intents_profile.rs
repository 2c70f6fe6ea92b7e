//! The `/orders` service profile on the intents engine, as the tests and the intents
//! benchmark add it to the test config, intents files written for it, hearth started with
//! it, the classifier's answers scripted and the stages a turn stored.

// The integration tests and the intents benchmark each use a different part of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::hearth_app::{TestApp, write_config};
use super::llm_server::{ScriptedLlmServer, Step};

/// Stands in an intents file's text for the path of the shipped `data/orders.json`.
pub const ORDERS_PATH: &str = "ORDERS";

/// The `/orders` profile over `intents_file`, a `service_profiles` entry of the test config;
/// `processing` adds keys to its `processing_config` (each ending in ", ").
pub fn orders_profile(intents_file: &Path, processing: &str) -> String {
    format!(
        "  - id: orders\n    slash_commands: [\"/orders\"]\n    processing_config: {{ \
         {processing}engine: intents, intents_file: \"{}\" }}\n    tools_config: {{ \
         enable_local_tools: [check_order_status], confirm_tools: [] }}\n",
        intents_file.display()
    )
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
    orders_config_with(folder, llm, intents_file, "")
}

/// `orders_config`, `processing` adding keys to the profile's `processing_config`.
pub fn orders_config_with(
    folder: &Path,
    llm: &ScriptedLlmServer,
    intents_file: &Path,
    processing: &str,
) -> PathBuf {
    let path = write_config(folder, &llm.base_url());
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replace(
        "- { id: bob, name: Bob }",
        "- { id: bob, name: Bob, role: child }",
    );
    text.push_str(&orders_profile(intents_file, processing));
    std::fs::write(&path, text).unwrap();
    path
}

/// hearth with the `orders` profile on `intents_file`, the model speaking `wire`.
pub async fn start(llm: &ScriptedLlmServer, intents_file: &Path, wire: Wire) -> TestApp {
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
    TestApp::start_from(folder, &path, &overrides).await
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
    app: &TestApp,
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
pub async fn stages(app: &TestApp, conversation: &str) -> Vec<Value> {
    app.running.stores.telemetry.flush().await;
    app.running
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
