//! What a member sends to a running turn reaches it whichever worker takes it: two real
//! hearth processes on one PostgreSQL database, the real MCP server-everything asking its
//! question (elicitation) in a turn run by the first; the answer, posted to the second,
//! goes to that question and its sender hears the turn's reply; a `/cancel` given to the
//! second through Telegram's webhook withdraws the question the first asks, and says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hearth::config::{TelegramConfig, TelegramMode};
use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::{ELICITATION_TOOL, toolbox_on_everything};
use crate::support::postgres::PostgresServer;
use crate::support::telegram::{TelegramServer, TgChat};
use crate::support::telegram_family::{TOKEN, alice, bot_says};
use crate::support::test_config::TestConfig;

const WEBHOOK_SECRET: &str = "s3cret-token";

/// The test config in `folder` on `database_url`, with server-everything behind `/tools`
/// and, when given, Telegram (alice is 1001) taking updates by webhook.
fn config_with_everything(
    folder: &Path,
    llm: &ScriptedLlmServer,
    database_url: &str,
    telegram: Option<&TelegramServer>,
    test: &str,
) -> Option<PathBuf> {
    let config = TestConfig::new(folder, &llm.base_url())
        .on_telegram("alice", 1001)
        .database(database_url);
    let mut config = toolbox_on_everything(config, test)?;
    if let Some(telegram) = telegram {
        config.config.channels.telegram = TelegramConfig {
            enabled: true,
            token_env: Some("TEST_TELEGRAM_TOKEN".into()),
            api_url: telegram.api_url(),
            mode: TelegramMode::Webhook,
            webhook_url: Some("https://hearth.example/telegram/hook".into()),
            webhook_secret_env: Some("TEST_TELEGRAM_WEBHOOK_SECRET".into()),
            ..TelegramConfig::default()
        };
    }
    let path = config.write(folder);
    Some(path)
}

fn env() -> BTreeMap<String, String> {
    test_env(&[
        ("TEST_TELEGRAM_TOKEN", TOKEN),
        ("TEST_TELEGRAM_WEBHOOK_SECRET", WEBHOOK_SECRET),
    ])
}

/// POST `body` to `/inbound` of the worker at `base_url`: the JSON answer.
async fn post(base_url: &str, body: Value) -> Value {
    super::postgres_hearth::post(base_url, &body).await.1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_by_one_worker_is_answered_through_the_other() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let Some(config) = config_with_everything(
        folder.path(),
        &llm,
        &database_url,
        None,
        "question_across_workers",
    ) else {
        return;
    };
    let env = env();
    let first = Hearth::spawn(&config, &env);
    let second = Hearth::spawn(&config, &env);
    llm.push_many([
        Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]),
        Step::Reply("You're signed up.".into()),
    ]);
    let asked = post(
        &first.base_url,
        json!({"user_id": "alice", "text": "/tools sign me up"}),
    )
    .await;
    assert_eq!(asked["status"], "question", "{asked}");
    let asking_id = asked["id"].as_str().unwrap().to_string();

    // The answer reaches the other worker: it goes to the question, and its sender hears
    // the reply of the turn that asked.
    let answered = post(&second.base_url, json!({"user_id": "alice",
               "text": "name: Alice Example\nBoolean: yes\ninteger: 7\ntitledSingleSelectEnum: green lantern"}),
    )
    .await;
    assert_eq!(answered["status"], "answered", "{answered}");
    assert_eq!(answered["reply"], "You're signed up.");
    assert_eq!(answered["id"], asking_id.as_str());
    let seen = llm.tool_result_seen(1);
    assert!(seen.contains("- Name: Alice Example"), "{seen}");
    assert_eq!(
        llm.requests().len(),
        2,
        "the answer started no turn of its own"
    );
    // The answer went through the other worker: stored there, closed with the reply.
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT status, reply FROM inbox ORDER BY received_at_ms")
            .fetch_all(&pool)
            .await
            .unwrap();
    pool.close().await;
    let reply = Some("You're signed up.".to_string());
    assert_eq!(
        rows,
        [
            ("answered".to_string(), reply.clone()),
            ("answered".to_string(), reply)
        ]
    );

    // The question is gone with its turn: the next message, on either worker, is an
    // ordinary one.
    llm.push(Step::Reply("Hello again.".into()));
    let next = post(
        &second.base_url,
        json!({"user_id": "alice", "text": "hello"}),
    )
    .await;
    assert_eq!(next["reply"], "Hello again.", "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_taken_by_another_worker_withdraws_the_question_and_says_so() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    telegram.add_chat(&TgChat::private(&alice()));
    let folder = tempfile::tempdir().unwrap();
    let Some(config) = config_with_everything(
        folder.path(),
        &llm,
        &database_url,
        Some(&telegram),
        "cancel_across_workers",
    ) else {
        return;
    };
    let env = env();
    let first = Hearth::spawn(&config, &env);
    let second = Hearth::spawn(&config, &env);
    llm.push_many([
        Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]),
        Step::Reply("Not signed up, then.".into()),
    ]);
    let client = reqwest::Client::new();
    let hook = |base_url: &str, update_id: i64, text: &str| {
        client
            .post(format!("{base_url}/telegram/hook"))
            .header("X-Telegram-Bot-Api-Secret-Token", WEBHOOK_SECRET)
            .json(&json!({
                "update_id": update_id,
                "message": {
                    "message_id": update_id, "date": 1_790_000_000,
                    "chat": {"id": 1001, "type": "private", "first_name": "Alice"},
                    "from": {"id": 1001, "is_bot": false, "first_name": "Alice"},
                    "text": text,
                    "entities": if text.starts_with('/') {
                        json!([{"type": "bot_command", "offset": 0,
                                "length": text.split(' ').next().unwrap().len()}])
                    } else {
                        json!([])
                    }
                }
            }))
            .send()
    };
    let taken = hook(&first.base_url, 900, "/tools sign me up")
        .await
        .unwrap();
    assert_eq!(taken.status().as_u16(), 200);
    bot_says(&telegram, 1001, "Please provide inputs").await;

    let taken = hook(&second.base_url, 901, "/cancel").await.unwrap();
    assert_eq!(taken.status().as_u16(), 200);
    bot_says(
        &telegram,
        1001,
        "Cancelled: I'm no longer waiting for that answer.",
    )
    .await;
    bot_says(&telegram, 1001, "Not signed up, then.").await;
    let seen = llm.tool_result_seen(1);
    assert!(!seen.contains("Alice Example"), "{seen}");
    assert_eq!(llm.requests().len(), 2, "/cancel started no turn");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let said: Vec<String> = telegram
        .bot_messages_in(1001)
        .into_iter()
        .filter_map(|message| message.text)
        .collect();
    assert_eq!(
        said.len(),
        3,
        "the question, the cancel and the reply, once each: {said:?}"
    );
}
