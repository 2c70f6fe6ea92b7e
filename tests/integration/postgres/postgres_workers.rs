//! Several real hearth processes on one PostgreSQL database: 1,000 messages over 50
//! conversations posted to the workers in turn while one is killed with kill -9, each
//! answered exactly once, remembered once and in order; and a confirmation asked through
//! one worker answered through another.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::postgres::{PostgresServer, config_on};
use crate::support::workers::Workers;

const CONVERSATIONS: usize = 50;
const MESSAGES_EACH: usize = 20;

async fn many_conversations_over_workers_with_one_killed(count: usize) {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = config_on(folder.path(), &llm.base_url(), &database_url);
    let env: BTreeMap<String, String> = test_env(&[]);
    let mut processes: Vec<Option<Hearth>> = (0..count)
        .map(|_| Some(Hearth::spawn(&config, &env)))
        .collect();
    let workers = Arc::new(Workers::new(
        processes
            .iter()
            .map(|process| process.as_ref().unwrap().base_url.clone())
            .collect(),
        &env["TEST_HEARTH_API_KEY"],
        reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    ));
    let answered = Arc::new(AtomicUsize::new(0));
    let conversations: Vec<_> = (0..CONVERSATIONS)
        .map(|conversation| {
            let (workers, answered) = (workers.clone(), answered.clone());
            tokio::spawn(async move {
                for message in 0..MESSAGES_EACH {
                    let text = format!("c{conversation} m{message}");
                    let body = json!({
                        "user_id": "alice",
                        "session_id": format!("s{conversation}"),
                        "text": text,
                        "message_id": format!("c{conversation}-{message}"),
                    });
                    // Each message to the next worker: the conversation moves between them.
                    let reply = workers.answered(conversation + message, &body).await;
                    assert_eq!(reply, format!("echo: {text}"));
                    answered.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // A third of the way, one worker is killed outright.
    let total = CONVERSATIONS * MESSAGES_EACH;
    let deadline = Instant::now() + Duration::from_secs(120);
    while answered.load(Ordering::SeqCst) < total / 3 {
        assert!(Instant::now() < deadline, "slow: {answered:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    workers.gone(1);
    processes[1].take().unwrap().kill();
    for conversation in conversations {
        conversation.await.unwrap();
    }
    assert_eq!(answered.load(Ordering::SeqCst), total);

    // Every message stored once and answered once; each conversation's history holds
    // each message and its reply once, in the order they were sent.
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let statuses = sqlx::query("SELECT status, COUNT(*) AS n FROM inbox GROUP BY status")
        .fetch_all(&pool)
        .await
        .unwrap();
    let statuses: Vec<(String, i64)> = statuses
        .iter()
        .map(|row| (row.get("status"), row.get("n")))
        .collect();
    assert_eq!(statuses, [("answered".to_string(), total as i64)]);
    for conversation in 0..CONVERSATIONS {
        let rows = sqlx::query(
            "SELECT content FROM messages WHERE conversation_key = $1 AND is_chat_text \
             ORDER BY id",
        )
        .bind(format!("http:alice/s{conversation}"))
        .fetch_all(&pool)
        .await
        .unwrap();
        let history: Vec<String> = rows.iter().map(|row| row.get("content")).collect();
        let expected: Vec<String> = (0..MESSAGES_EACH)
            .flat_map(|message| {
                let text = format!("c{conversation} m{message}");
                [text.clone(), format!("echo: {text}")]
            })
            .collect();
        assert_eq!(history, expected, "conversation {conversation}");
    }
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_answer_every_message_once_and_in_order_through_a_kill() {
    many_conversations_over_workers_with_one_killed(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_workers_answer_every_message_once_and_in_order_through_a_kill() {
    many_conversations_over_workers_with_one_killed(3).await;
}

/// Two workers of one database, their addresses, and what calls them.
async fn two_workers(
    llm: &ScriptedLlmServer,
    extra_env: &[(&str, &str)],
) -> Option<(
    Vec<Hearth>,
    Workers,
    std::path::PathBuf,
    BTreeMap<String, String>,
    tempfile::TempDir,
)> {
    let server = PostgresServer::shared()?;
    let database_url = server.fresh_database().await;
    let folder = tempfile::tempdir().unwrap();
    let config = config_on(folder.path(), &llm.base_url(), &database_url);
    let env = test_env(extra_env);
    let processes = vec![Hearth::spawn(&config, &env), Hearth::spawn(&config, &env)];
    let workers = Workers::new(
        processes
            .iter()
            .map(|process| process.base_url.clone())
            .collect(),
        &env["TEST_HEARTH_API_KEY"],
        reqwest::Client::new(),
    );
    Some((processes, workers, config, env, folder))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_to_another_worker_waits_its_turn_and_answers_its_caller() {
    let llm = ScriptedLlmServer::start();
    let Some((_processes, workers, ..)) = two_workers(&llm, &[]).await else {
        return;
    };
    // The first message's turn runs slowly on the first worker, which holds the
    // conversation meanwhile.
    llm.push(Step::Delay(
        Duration::from_millis(1500),
        Box::new(Step::Reply("first, slowly".into())),
    ));
    let first = {
        let (url, client, key) = (
            workers.urls[0].clone(),
            workers.client.clone(),
            workers.key.clone(),
        );
        tokio::spawn(async move {
            client
                .post(format!("{url}/inbound"))
                .header("X-API-Key", key)
                .json(&json!({"user_id": "alice", "text": "one", "message_id": "x1"}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while llm.request_count() < 1 {
        assert!(
            Instant::now() < deadline,
            "the first message never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The second, to the other worker: run after the first, by the holder, and its
    // caller there hears the reply.
    let (status, second) = workers
        .call(
            &workers.urls[1],
            "/inbound",
            Some(&json!({"user_id": "alice", "text": "two", "message_id": "x2"})),
        )
        .await
        .unwrap();
    assert_eq!(
        (status, second["status"].as_str(), second["reply"].as_str()),
        (200, Some("answered"), Some("echo: two")),
        "{second}"
    );
    let first = first.await.unwrap();
    assert_eq!(first["reply"], "first, slowly");
    // The model saw the first exchange before the second message: in order.
    let last = llm.requests().last().unwrap().body["messages"].clone();
    let texts: Vec<&str> = last
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] != "system")
        .filter_map(|message| message["content"].as_str())
        .collect();
    assert_eq!(texts, ["one", "first, slowly", "two"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_asked_through_one_worker_is_answered_through_the_other() {
    let llm = ScriptedLlmServer::start();
    let Some((_processes, workers, config, env, _folder)) = two_workers(
        &llm,
        &[(
            "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
            "profile_update",
        )],
    )
    .await
    else {
        return;
    };
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "2 Oak Road"}),
        )]),
        Step::Reply("Done.".into()),
    ]);
    let (status, asked) = workers
        .call(
            &workers.urls[0],
            "/inbound",
            Some(&json!({"user_id": "alice", "text": "I moved to 2 Oak Road"})),
        )
        .await
        .unwrap();
    assert_eq!(
        (status, asked["status"].as_str()),
        (200, Some("confirmation_required")),
        "{asked}"
    );
    let token = crate::support::hearth_app::member_token_by_cli(&config, &env, "alice");
    let answered = workers
        .client
        .post(format!("{}/inbound/confirm", workers.urls[1]))
        .header("X-API-Key", token)
        .json(
            &json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                      "approve": true}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status().as_u16(), 200);
    let answered: Value = answered.json().await.unwrap();
    assert_eq!(
        (answered["status"].as_str(), answered["reply"].as_str()),
        (Some("answered"), Some("Done.")),
        "{answered}"
    );
    assert_eq!(llm.last_tool_result(), "saved address = 2 Oak Road");
    assert_eq!(
        llm.request_count(),
        2,
        "the call ran once, the model asked twice"
    );
}
