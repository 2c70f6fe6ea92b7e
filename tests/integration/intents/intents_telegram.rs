//! The intents engine on Telegram (the fake Bot API): what a plan says before its tool
//! (`respond.pre`) is a message of its own, before the answer; it is not said when the
//! policy stops the call; and through kill -9 it is said once, before the answer (stored
//! in the outbox as the tool starts, delivered after the restart).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::support::delivery::{undelivered, wait_for};
use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{classified, orders_profile, write_intents};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{TelegramServer, TgError};
use crate::support::telegram_family::{
    TOKEN, alice, bot_says, telegram_env, write_telegram_config,
};

const INTENTS: &str = r#"
data_source: { kind: json, path: "ORDERS" }
intents:
  - id: order_status
    description: Retrieve shipping info for an order
    required_params: [order_id]
    tool: check_order_status
    respond:
      pre: "I'll check order {order_id}."
      post: "Your order {order_id} is {result.summary}."
  - id: order_story
    description: Tell how an order is doing, in the model's words
    required_params: [order_id]
    tool: check_order_status
    respond:
      pre: "Let me look up {order_id}."
  - id: refund_request
    description: Ask for a refund of an order
    required_params: [order_id, { name: amount, type: number }]
    tool: check_order_status
    respond:
      pre: "Refunding {amount} on {order_id}."
      post: "Refund of {amount} for {order_id} noted ({result.status})."
policy:
  rules:
    - { intent: refund_request, params: [{ name: amount, op: ">", value: 100 }], decision: deny, message: "refunds over 100 are not possible here" }
"#;

/// The Telegram test config in `folder` with an `/orders` intents profile on `INTENTS`.
fn orders_on_telegram(
    folder: &Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
) -> PathBuf {
    let profile = orders_profile(&write_intents(folder, INTENTS), &[]);
    write_telegram_config(folder, llm, telegram, &[profile])
}

#[actix::test]
async fn the_plan_says_what_it_will_do_in_its_own_message_and_not_when_policy_stops_it() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let path = orders_on_telegram(folder.path(), &llm, &telegram);
    let app = Hearth::start_from(folder, &path, &[("TEST_TELEGRAM_TOKEN", TOKEN)]).await;

    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-12345"}),
        0.9,
    ));
    telegram.push_private_text(&alice(), "/orders where is O-12345?");
    bot_says(&telegram, 1001, "Your order O-12345 is").await;
    assert_eq!(
        telegram.bot_texts_in(1001),
        [
            "I'll check order O-12345.",
            "Your order O-12345 is shipped via UPS, ETA 2025-10-20."
        ]
    );

    // Denied by policy: the tool never starts, so what it would have said is not said.
    llm.push(classified(
        Some("refund_request"),
        json!({"order_id": "O-12345", "amount": "500"}),
        0.9,
    ));
    telegram.push_private_text(&alice(), "/orders refund 500 on O-12345");
    bot_says(&telegram, 1001, "I can't process that request").await;
    let texts = telegram.bot_texts_in(1001);
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(
        texts[2],
        "I can't process that request: refunds over 100 are not possible here"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_plan_said_before_its_tool_is_said_once_and_first_through_a_kill() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = orders_on_telegram(folder.path(), &llm, &telegram);
    let env = telegram_env(&[]);
    // Telegram takes nothing, and the model never words the result: hearth is killed with
    // the `pre` stored to deliver, the tool done, and the answer not yet known.
    telegram.fail_next("sendMessage", 10_000, TgError::bad_gateway());
    llm.push_many([
        classified(Some("order_story"), json!({"order_id": "O-12345"}), 0.9),
        Step::Hang,
    ]);
    let first = Hearth::spawn(&config, &env);
    telegram.push_private_text(&alice(), "/orders how is O-12345 doing?");
    wait_for(
        "the model is asked to word the result",
        Duration::from_secs(20),
        || llm.requests().len() >= 2,
    )
    .await;
    first.kill();
    let stored: Vec<String> = undelivered(folder.path())
        .await
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert_eq!(stored, ["Let me look up O-12345."]);

    telegram.clear_faults();
    llm.push(Step::Reply("O-12345 is on its way with UPS.".into()));
    let _second = Hearth::spawn(&config, &env);
    bot_says(&telegram, 1001, "on its way with UPS").await;
    // Time for anything said twice to arrive.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        telegram.bot_texts_in(1001),
        ["Let me look up O-12345.", "O-12345 is on its way with UPS."]
    );
    // Classified once; the tool's result worded again after the restart, never re-planned.
    assert_eq!(llm.requests().len(), 3);
    assert!(undelivered(folder.path()).await.is_empty());
}
