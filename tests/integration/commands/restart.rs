//! Restart recovery with the real binary: a message accepted and not answered
//! when hearth is killed is answered after the restart, exactly once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use crate::support::hearth_app::{API_KEY, Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;

async fn post(client: &reqwest::Client, base_url: &str, body: &Value) -> Option<(u16, Value)> {
    let response = client
        .post(format!("{base_url}/inbound"))
        .header("X-API-Key", API_KEY)
        .json(body)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_message_is_answered_once_after_a_kill() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let env = test_env(&[]);
    let client = reqwest::Client::new();
    let message = json!({"user_id": "alice", "text": "remember the milk", "message_id": "tg-42"});

    llm.push(Step::Hang);
    let first = Hearth::spawn(&config, &env);
    let pending = {
        let (client, url, message) = (client.clone(), first.base_url.clone(), message.clone());
        tokio::spawn(async move { post(&client, &url, &message).await })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while llm.request_count() == 0 {
        assert!(
            Instant::now() < deadline,
            "the message never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill();
    assert!(
        pending.await.unwrap().is_none(),
        "the killed process never answered"
    );

    let second = Hearth::spawn(&config, &env);
    let deadline = Instant::now() + Duration::from_secs(10);
    let answered = loop {
        // The same message id again: a duplicate, reported with the original's state.
        let (status, body) = post(&client, &second.base_url, &message).await.unwrap();
        if body["status"] == "answered" {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "not answered after restart: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(answered["reply"], "echo: remember the milk");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        llm.request_count(),
        2,
        "one hung call before the kill, one after the restart"
    );
    drop(second);

    let database = folder.path().join("hearth.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", database.display()))
        .await
        .unwrap();
    let rows = sqlx::query("SELECT role, content FROM messages ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    let history: Vec<(String, String)> = rows
        .iter()
        .map(|row| (row.get("role"), row.get("content")))
        .collect();
    assert_eq!(
        history,
        vec![
            ("user".to_string(), "remember the milk".to_string()),
            (
                "assistant".to_string(),
                "echo: remember the milk".to_string()
            ),
        ]
    );
    let inbox: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM inbox")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(inbox, 1);
}
