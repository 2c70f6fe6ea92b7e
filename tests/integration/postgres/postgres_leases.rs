//! Leases that cannot be held twice, and reminders on any worker, with real hearth
//! processes on one PostgreSQL database: a worker stopped (SIGSTOP) for longer than the
//! lease time while its turn waits on the model wakes to find the conversation taken over,
//! and runs no tool call again (the plugin is called once, the reply is there once); a
//! worker whose clock runs 20 s ahead (libfaketime) takes no lease another still holds, so
//! no turn and no tool call runs twice; and a reminder stored through a worker killed with
//! kill -9 right after fires on time on another. The tool whose runs are counted is an
//! `http` plugin on a fake server that records every call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Row;

use crate::support::faketime::clock_ahead;
use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{Gate, ScriptedLlmServer, Step};
use crate::support::plugin_server::PluginServer;
use crate::support::postgres::{PostgresServer, config_on};
use crate::support::reminders::REMIND_TOOLS;
use crate::support::test_config::TestConfig;
use crate::support::workers::Workers;

/// The test config on a fresh database of the test cluster with `plugin` as the `buy`
/// plugin (`route_to_plugin` the profile's tool), and the environment naming its folder;
/// `None` when PostgreSQL is not installed.
async fn config_with_plugin(
    llm: &ScriptedLlmServer,
    plugin: &PluginServer,
) -> Option<(
    tempfile::TempDir,
    std::path::PathBuf,
    String,
    Vec<(String, String)>,
)> {
    let server = PostgresServer::shared()?;
    let database_url = server.fresh_database().await;
    let folder = tempfile::tempdir().unwrap();
    let path = config_on(folder.path(), &llm.base_url(), &database_url);
    let plugins = folder.path().join("plugins");
    std::fs::create_dir_all(plugins.join("buy")).unwrap();
    std::fs::write(
        plugins.join("buy").join("plugin.yaml"),
        format!(
            "id: buy\nname: Buy\ndescription: Orders.\ntype: http\nurl: \"{}\"\ntimeout_seconds: 60\ncapabilities:\n  - id: place_order\n    description: Order.\n    parameters:\n      - {{ name: item, type: string, required: true, description: What. }}\n",
            plugin.url()
        ),
    )
    .unwrap();
    let env = vec![
        (
            "HEARTH__PLUGINS_DIR".to_string(),
            plugins.display().to_string(),
        ),
        (
            "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS".to_string(),
            "route_to_plugin".to_string(),
        ),
    ];
    Some((folder, path, database_url, env))
}

/// The model's call of the `buy` plugin for `item`.
fn buy(item: &str) -> (String, Value) {
    (
        "route_to_plugin".into(),
        json!({"plugin_id": "buy", "parameters": {"item": item}}),
    )
}

fn env_with(pairs: &[(String, String)], more: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env = test_env(more);
    env.extend(pairs.iter().cloned());
    env
}

/// The test config on a fresh database of the test cluster, with the reminder tools; its
/// folder, path and database url. `None` when PostgreSQL is not installed.
async fn config_with_reminders(
    llm: &ScriptedLlmServer,
) -> Option<(tempfile::TempDir, std::path::PathBuf, String)> {
    let server = PostgresServer::shared()?;
    let database_url = server.fresh_database().await;
    let folder = tempfile::tempdir().unwrap();
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .default_tools(&format!("profile_get, profile_update, {REMIND_TOOLS}"))
        .database(&database_url)
        .write(folder.path());
    Some((folder, path, database_url))
}

fn workers_of(processes: &[&Hearth], env: &BTreeMap<String, String>) -> Workers {
    Workers::new(
        processes.iter().map(|p| p.base_url.clone()).collect(),
        &env["TEST_HEARTH_API_KEY"],
        reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
    )
}

/// Send `signal` (`"STOP"`, `"CONT"`) to `process`.
fn signal(process: &Hearth, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(process.pid().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal}");
}

/// One number read from `database_url`.
async fn count(database_url: &str, query: &'static str) -> i64 {
    let pool = sqlx::PgPool::connect(database_url).await.unwrap();
    let count: i64 = sqlx::query_scalar(query).fetch_one(&pool).await.unwrap();
    pool.close().await;
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_past_its_lease_while_the_model_answers_runs_no_call_again() {
    let llm = ScriptedLlmServer::start();
    let plugin = PluginServer::start();
    let Some((_folder, config, database_url, plugin_env)) = config_with_plugin(&llm, &plugin).await
    else {
        return;
    };
    // The model may take its time: the stalled worker's call is still waiting when it wakes.
    let env = env_with(
        &plugin_env,
        &[("HEARTH__LLMS__MAIN__TIMEOUT_SECONDS", "120")],
    );
    let stalled = Hearth::spawn(&config, &env);
    let other = Hearth::spawn(&config, &env);
    let workers = Arc::new(workers_of(&[&stalled, &other], &env));
    // The first worker's turn asks the model, which holds its answer (a tool call) until
    // the gate opens; the turn the other worker runs asks for the same call, then answers.
    let gate = Gate::new();
    llm.push_many([
        Step::Gated(gate.clone(), Box::new(Step::ToolCalls(vec![buy("milk")]))),
        Step::ToolCalls(vec![buy("milk")]),
        Step::Reply("Milk is ordered.".into()),
    ]);
    let body = json!({
        "user_id": "alice",
        "session_id": "milk",
        "text": "order milk",
        "message_id": "milk-1",
    });
    let first = {
        let (workers, body) = (workers.clone(), body.clone());
        tokio::spawn(async move {
            workers
                .call(&workers.urls[0], "/inbound", Some(&body))
                .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while llm.in_flight() < 1 {
        assert!(Instant::now() < deadline, "the turn never asked the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Stopped while its turn waits on the model, for longer than the lease time.
    signal(&stalled, "STOP");
    workers.gone(0);
    // The other worker takes the conversation over once the lease ran out, runs the call
    // and answers; the caller asking it hears the answer.
    let reply = workers.answered(1, &body).await;
    assert_eq!(reply, "Milk is ordered.");
    assert_eq!(plugin.calls().len(), 1);
    // The model now answers the stalled worker's call with the tool call, and it wakes.
    gate.open();
    tokio::time::sleep(Duration::from_millis(500)).await;
    signal(&stalled, "CONT");
    drop(first);
    // Long enough for it to act on the answer, and for its queue's next look.
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(
        plugin.calls().len(),
        1,
        "the call ran again on the worker that woke: {}",
        stalled.log()
    );
    assert_eq!(
        llm.request_count(),
        3,
        "the woken worker's turn went on to the model"
    );
    assert_eq!(
        count(
            &database_url,
            "SELECT count(*) FROM messages WHERE content = 'Milk is ordered.'"
        )
        .await,
        1,
        "the reply once"
    );
    assert_eq!(
        count(
            &database_url,
            "SELECT count(*) FROM inbox WHERE status = 'answered'"
        )
        .await,
        1
    );
    // The woken worker serves again, and its next turn runs where it is asked.
    workers.alive[0].store(true, std::sync::atomic::Ordering::SeqCst);
    let next = json!({"user_id": "bob", "text": "hello again", "message_id": "bob-1"});
    assert_eq!(workers.answered(0, &next).await, "echo: hello again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_whose_clock_runs_ahead_runs_no_turn_and_no_call_twice() {
    let llm = ScriptedLlmServer::start();
    let plugin = PluginServer::start();
    let Some((_folder, config, database_url, plugin_env)) = config_with_plugin(&llm, &plugin).await
    else {
        return;
    };
    let Some(ahead) = clock_ahead("+20s") else {
        return;
    };
    // Each turn calls the plugin, slowly, then answers: turns overlap the other worker's
    // looks for conversations nobody runs.
    llm.set_recording(false);
    let (name, arguments) = buy("bread");
    llm.set_default(Step::Delay(
        Duration::from_millis(400),
        Box::new(Step::CallThenEcho(name, arguments)),
    ));
    let env = env_with(&plugin_env, &[("HEARTH__QUEUE__MAX_BACKLOG", "2000")]);
    let mut ahead_env = env.clone();
    ahead_env.extend(ahead);
    let processes = [
        Hearth::spawn(&config, &env),
        Hearth::spawn(&config, &ahead_env),
    ];
    let workers = Arc::new(workers_of(&[&processes[0], &processes[1]], &env));
    const CONVERSATIONS: usize = 12;
    const MESSAGES_EACH: usize = 6;
    let conversations: Vec<_> = (0..CONVERSATIONS)
        .map(|conversation| {
            let workers = workers.clone();
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
                }
            })
        })
        .collect();
    for conversation in conversations {
        conversation.await.unwrap();
    }
    let total = (CONVERSATIONS * MESSAGES_EACH) as i64;
    assert_eq!(
        plugin.calls().len() as i64,
        total,
        "one call per message; the workers logged:\n{}\n{}",
        processes[0].log(),
        processes[1].log()
    );
    assert_eq!(
        llm.request_count() as i64,
        2 * total,
        "each turn asked the model twice, once for its call and once for its answer"
    );
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let statuses = sqlx::query("SELECT status, count(*) AS n FROM inbox GROUP BY status")
        .fetch_all(&pool)
        .await
        .unwrap();
    let statuses: Vec<(String, i64)> = statuses
        .iter()
        .map(|row| (row.get("status"), row.get("n")))
        .collect();
    assert_eq!(statuses, [("answered".to_string(), total)]);
    // The worker ahead stored what it accepted at its own time, 20 s on.
    let latest: i64 = sqlx::query_scalar("SELECT max(received_at_ms) FROM inbox")
        .fetch_one(&pool)
        .await
        .unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        latest > now_ms + 10_000,
        "the second worker's clock is not ahead"
    );
    let replies: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM messages WHERE role = 'assistant' AND content LIKE 'echo: %'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(replies, total, "each reply remembered once");
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_stored_through_a_killed_worker_fires_on_time_on_another() {
    let llm = ScriptedLlmServer::start();
    let Some((_folder, config, database_url)) = config_with_reminders(&llm).await else {
        return;
    };
    let env = test_env(&[]);
    let mut processes: Vec<Option<Hearth>> =
        (0..3).map(|_| Some(Hearth::spawn(&config, &env))).collect();
    let workers = {
        let alive: Vec<&Hearth> = processes.iter().flatten().collect();
        workers_of(&alive, &env)
    };
    // Every scheduler has read what is due (nothing) before the reminder exists.
    tokio::time::sleep(Duration::from_secs(1)).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_reminder".into(),
            json!({"text": "take the cake out", "delay": "PT15S"}),
        )]),
        Step::Reply("Sure.".into()),
    ]);
    let body = json!({"user_id": "alice", "text": "remind me in 15 seconds", "message_id": "cake"});
    assert_eq!(workers.answered(0, &body).await, "Sure.");
    // The worker that stored it is killed outright at once.
    workers.gone(0);
    processes[0].take().unwrap().kill();

    let deadline = Instant::now() + Duration::from_secs(60);
    let fired = loop {
        let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
        let rows = sqlx::query("SELECT due_ms, fired_at_ms, timing FROM schedule_firings")
            .fetch_all(&pool)
            .await
            .unwrap();
        pool.close().await;
        if !rows.is_empty() {
            break rows;
        }
        assert!(Instant::now() < deadline, "the reminder never fired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(fired.len(), 1, "fired once");
    let (due, at, timing): (i64, i64, String) = (
        fired[0].get("due_ms"),
        fired[0].get("fired_at_ms"),
        fired[0].get("timing"),
    );
    assert_eq!(timing, "on_time");
    assert!(
        (0..5_000).contains(&(at - due)),
        "fired {} ms after it was due",
        at - due
    );
    // Alice sees it waiting for her answer through any worker left.
    let listed = workers
        .call(workers.pick(1), "/api/reminders?user_id=alice", None)
        .await
        .unwrap()
        .1;
    let waiting = listed["waiting"].as_array().cloned().unwrap_or_default();
    assert_eq!(waiting.len(), 1, "{listed}");
    assert_eq!(waiting[0]["text"], "take the cake out");
}
