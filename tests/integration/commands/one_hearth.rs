//! One hearth per database, with the real binary: a second `hearth run` (or `migrate`)
//! on a database in use is refused naming the database and the holder; a killed
//! holder's lock file does not block a restart; `hearth chat` beside a running hearth
//! talks to it over its HTTP API (confirmations included) instead of starting a second
//! queue (a delayed answer is waited for), and is refused beside a hearth that serves no
//! HTTP. In one process, a stopped or dropped hearth lets the next one start. A hearth told
//! to stop takes no more messages, ends the turn it runs, closes the database and only
//! then lets go of it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hearth::app::{self, StartError, StartOptions};
use hearth::storage::instance_lock::{InstanceLock, InstanceLockError};
use serde_json::json;
use sqlx::Row;

use crate::support::hearth_app::{API_KEY, Hearth, load, test_env};
use crate::support::llm_server::{Gate, ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;

const CONFIRM_PROFILE_UPDATE: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
    "profile_update",
);

fn hearth(config: &Path, overrides: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
    command
        .arg("--config")
        .arg(config)
        .envs(test_env(overrides));
    command
}

/// Wait for `child` to exit and return what it printed; a child still running after
/// `limit` is killed and the test fails (a refused start must end by itself).
async fn output_within(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stdout: {}\nstderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.wait_with_output().unwrap()
}

/// Run a hearth command with no input to its end.
async fn run_to_end(mut command: Command) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    output_within(child, Duration::from_secs(30)).await
}

/// `hearth chat --user <member>` with these lines typed, to its end.
async fn chat(config: &Path, overrides: &[(&str, &str)], member: &str, typed: &str) -> Output {
    let mut child = hearth(config, overrides)
        .args(["chat", "--user", member])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(typed.as_bytes()).unwrap();
    drop(stdin); // end of input: chat answers what it has, then exits
    output_within(child, Duration::from_secs(30)).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_hearth_is_refused_and_a_killed_one_does_not_block_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let env = test_env(&[]);
    let database = folder.path().join("hearth.db");
    let first = Hearth::spawn(&config, &env);
    let first_address = first.base_url.trim_start_matches("http://").to_string();

    let second = run_to_end({
        let mut command = hearth(&config, &[]);
        command.arg("run");
        command
    })
    .await;
    assert!(!second.status.success(), "the second hearth must not run");
    let stderr = text(&second.stderr);
    assert!(
        stderr.contains(&database.display().to_string()),
        "names the database: {stderr}"
    );
    assert!(
        stderr.contains(&format!("pid {}", first.pid())),
        "names the running process: {stderr}"
    );
    assert!(
        stderr.contains(&format!("http api at {first_address}")),
        "{stderr}"
    );
    assert!(stderr.contains("hearth chat"), "says what to do: {stderr}");

    // A migration never runs under a running hearth either.
    let migrate = run_to_end({
        let mut command = hearth(&config, &[]);
        command.arg("migrate");
        command
    })
    .await;
    assert!(!migrate.status.success());
    assert!(
        text(&migrate.stderr).contains(&format!("pid {}", first.pid())),
        "{}",
        text(&migrate.stderr)
    );

    first.kill();
    let lock_file = folder.path().join("hearth.db.lock");
    assert!(lock_file.exists(), "kill -9 leaves the lock file behind");
    let restarted = Hearth::spawn(&config, &env);
    let health = reqwest::get(format!("{}/healthz", restarted.base_url))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let holder: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock_file).unwrap()).unwrap();
    assert_eq!(holder["pid"], restarted.pid());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_beside_a_running_hearth_talks_through_it_and_reruns_nothing() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    // Bob's message stays accepted while the model hangs on it (no timeout retries it).
    let overrides = [("HEARTH__LLMS__MAIN__TIMEOUT_SECONDS", "600")];
    let running = Hearth::spawn(&config, &test_env(&overrides));
    llm.push(Step::Hang);
    let bob = {
        let url = format!("{}/inbound", running.base_url);
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(url)
                .header("X-API-Key", API_KEY)
                .json(&json!({"user_id": "bob", "text": "a slow question"}))
                .send()
                .await;
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while llm.request_count() == 0 {
        assert!(
            Instant::now() < deadline,
            "bob's message never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let output = chat(&config, &overrides, "alice", "hello there\n").await;
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    let address = running.base_url.trim_start_matches("http://");
    assert!(
        stdout.contains(&format!("talking to the running hearth at {address}")),
        "{stdout}"
    );
    assert!(stdout.contains("hearth> echo: hello there"), "{stdout}");

    // A second queue would have taken bob's accepted message up again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(llm.request_count(), 2, "bob's hung call, then alice's line");
    let messages = &llm.requests()[1].body["messages"];
    let last = messages.as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], "hello there");

    let database = folder.path().join("hearth.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", database.display()))
        .await
        .unwrap();
    let rows =
        sqlx::query("SELECT channel, member_id, text, status, reply FROM inbox ORDER BY seq")
            .fetch_all(&pool)
            .await
            .unwrap();
    let inbox: Vec<(String, String, String, String, Option<String>)> = rows
        .iter()
        .map(|row| {
            (
                row.get("channel"),
                row.get("member_id"),
                row.get("text"),
                row.get("status"),
                row.get("reply"),
            )
        })
        .collect();
    assert_eq!(
        inbox,
        vec![
            (
                "http".into(),
                "bob".into(),
                "a slow question".into(),
                "accepted".into(),
                None
            ),
            (
                "http".into(),
                "alice".into(),
                "hello there".into(),
                "answered".into(),
                Some("echo: hello there".into())
            ),
        ],
        "the running hearth's inbox answered alice's line"
    );
    bob.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_answered_yes_in_chat_resumes_the_running_hearths_turn() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let running = Hearth::spawn(&config, &test_env(&[CONFIRM_PROFILE_UPDATE]));
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "6 Birch Row"}),
        )]),
        Step::Reply("Done.".into()),
    ]);

    let output = chat(
        &config,
        &[CONFIRM_PROFILE_UPDATE],
        "alice",
        "I moved to 6 Birch Row\nyes\n",
    )
    .await;
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("talking to the running hearth"), "{stdout}");
    assert!(
        stdout.contains("6 Birch Row"),
        "the prompt shows the call: {stdout}"
    );
    assert!(stdout.contains("hearth> (answer yes or no)"), "{stdout}");
    assert!(stdout.contains("hearth> Done."), "{stdout}");
    assert_eq!(llm.request_count(), 2, "asked once, resumed once");
    assert_eq!(llm.tool_result_seen(1), "saved address = 6 Birch Row");
    // The chat spoke with a token of alice's made for it, revoked at its end.
    let tokens = run_to_end({
        let mut command = hearth(&config, &[]);
        command.args(["token", "list"]);
        command
    })
    .await;
    assert_eq!(
        text(&tokens.stdout).trim(),
        "no tokens",
        "{}",
        text(&tokens.stderr)
    );
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_answer_is_shown_when_the_running_hearth_has_it() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let overrides = [("HEARTH__LLM_RETRY__MAX_ATTEMPTS", "1")];
    let _running = Hearth::spawn(&config, &test_env(&overrides));
    // The first call fails: the member is told the answer is delayed (202), and the
    // queue's retry answers it.
    llm.push(Step::Error {
        status: 500,
        retry_after: None,
        body: "down".into(),
    });

    let output = chat(&config, &overrides, "alice", "are you there?\n").await;
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    let notice = stdout
        .find("hearth> Sorry, I can't reach my language model")
        .unwrap_or_else(|| panic!("no delay notice: {stdout}"));
    let answer = stdout
        .find("hearth> echo: are you there?")
        .unwrap_or_else(|| panic!("no answer: {stdout}"));
    assert!(notice < answer, "{stdout}");
    assert_eq!(llm.request_count(), 2, "the failed call and its retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_hearth_without_http_chat_and_run_are_refused() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    // A chat with no hearth running is a hearth itself, serving only its terminal.
    let mut first = hearth(&config, &[])
        .args(["chat", "--user", "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = first.stdout.take().unwrap();
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let mode = lines.recv_timeout(Duration::from_secs(30)).unwrap();
    let database = folder.path().join("hearth.db");
    assert_eq!(
        mode,
        format!(
            "no hearth is running on {}; starting one in this terminal",
            database.display()
        )
    );
    let listening = lines.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(listening.starts_with("hearth is listening"), "{listening}");

    let second = chat(&config, &[], "bob", "hello\n").await;
    assert!(!second.status.success());
    let stderr = text(&second.stderr);
    assert!(stderr.contains("does not serve the http api"), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.id())), "{stderr}");
    assert!(stderr.contains(&database.display().to_string()), "{stderr}");

    let run = run_to_end({
        let mut command = hearth(&config, &[]);
        command.arg("run");
        command
    })
    .await;
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains(&format!("pid {}, no http api", first.id())),
        "{stderr}"
    );
    assert_eq!(llm.request_count(), 0, "neither refused process ran a turn");

    // The first chat still works, and ends cleanly at the end of its input.
    let mut stdin = first.stdin.take().unwrap();
    stdin.write_all(b"still here\n").unwrap();
    drop(stdin);
    let output = output_within(first, Duration::from_secs(30)).await;
    assert!(output.status.success());
    let rest: Vec<String> = lines.iter().collect();
    assert!(
        rest.iter()
            .any(|line| line.contains("hearth> echo: still here")),
        "{rest:?}"
    );
}

#[actix::test]
async fn in_one_process_the_lock_is_released_by_stop_and_by_drop() {
    let app = Hearth::start("http://127.0.0.1:9/v1", &[]).await;
    let loaded = load(&app.folder().join("hearth.yaml"), &test_env(&[]));
    let options = || StartOptions {
        serve: true,
        extra_channels: Default::default(),
        stores: None,
    };
    match app::start(&loaded, options()).await {
        Err(StartError::InstanceLock(InstanceLockError::Held { holder, .. })) => {
            assert_eq!(holder.map(|holder| holder.pid), Some(std::process::id()));
        }
        Err(error) => panic!("refused for another reason: {error}"),
        Ok(_) => panic!("a second start on a database in use"),
    }
    let folder = app.stop().await.folder();
    let again = app::start(&loaded, options())
        .await
        .unwrap_or_else(|error| panic!("not released by stop: {error}"));
    drop(again);
    let restarted = Hearth::start_in(folder, "http://127.0.0.1:9/v1", &[]).await;
    restarted.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_hearth_ends_its_running_turn_and_closes_the_database_before_letting_go() {
    let llm = ScriptedLlmServer::start();
    let gate = Gate::new();
    llm.push(Step::Gated(
        gate.clone(),
        Box::new(Step::Reply("Done before the stop.".into())),
    ));
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    // The request stops waiting for the reply after a second; the turn runs on.
    let env = test_env(&[("HEARTH__HTTP__REPLY_TIMEOUT_SECONDS", "1")]);
    let mut process = Hearth::spawn(&config, &env);
    let base_url = process.base_url.clone();
    let (status, accepted) = process
        .post_json(
            "/inbound",
            json!({"user_id": "alice", "text": "take your time"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while llm.in_flight() != 1 {
        assert!(Instant::now() < deadline, "the turn never asked the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    process.terminate();
    // It takes no more messages at once...
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while client
        .get(format!("{base_url}/healthz"))
        .send()
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "hearth kept serving after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ...but holds the database while its turn runs.
    let database = folder.path().join("hearth.db");
    match InstanceLock::acquire(database.clone(), false).await {
        Err(InstanceLockError::Held { holder, .. }) => {
            assert_eq!(holder.map(|holder| holder.pid), Some(process.pid()));
        }
        Ok(_) => panic!("the database was let go while a turn still ran"),
        Err(error) => panic!("{error}"),
    }
    gate.open();
    let deadline = Instant::now() + Duration::from_secs(60);
    let exit = loop {
        if let Some(status) = process.exited() {
            break status;
        }
        assert!(Instant::now() < deadline, "hearth did not stop");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "{exit:?}");

    // The turn's answer was stored, and the database closed: its log folded in.
    assert!(
        !folder.path().join("hearth.db-wal").exists(),
        "the database was left open"
    );
    let pool = sqlx::SqlitePool::connect_with(
        sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&database)
            .read_only(true),
    )
    .await
    .unwrap();
    let row = sqlx::query("SELECT status, reply FROM inbox WHERE id = ?")
        .bind(&id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(row.get::<String, _>("status"), "answered");
    assert_eq!(
        row.get::<Option<String>, _>("reply").as_deref(),
        Some("Done before the stop.")
    );
    pool.close().await;
    // And the lock went last, with the process.
    drop(InstanceLock::acquire(database, false).await.unwrap());
}

#[actix::test]
async fn stop_closes_the_database_it_opened_before_letting_go_of_it() {
    let app = Hearth::start("http://127.0.0.1:9/v1", &[]).await;
    let state = app.app().stores.channel_state.clone();
    state
        .put_state("test", "written", "before the stop")
        .await
        .unwrap();
    let database = app.folder().join("hearth.db");
    let log = app.folder().join("hearth.db-wal");
    assert!(log.exists(), "writes go to the write-ahead log first");

    let folder = app.stop().await.folder();
    // Every connection closed: the log was folded into the file and removed.
    assert!(!log.exists(), "stop left the database open");
    let refused = state.put_state("test", "written", "after the stop").await;
    assert!(refused.is_err(), "a write after the stop: {refused:?}");
    drop(InstanceLock::acquire(database, false).await.unwrap());
    // What was written before the stop is there.
    let again = Hearth::start_in(folder, "http://127.0.0.1:9/v1", &[]).await;
    assert_eq!(
        again
            .app()
            .stores
            .channel_state
            .get_state("test", "written")
            .await
            .unwrap()
            .as_deref(),
        Some("before the stop")
    );
    again.stop().await;
}
