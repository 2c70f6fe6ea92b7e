//! hearth on PostgreSQL with the real binary: a conversation answered and remembered; a
//! hearth killed with kill -9 and its accepted message answered once by the next; a
//! family moved from SQLite with `hearth copy-store`, its conversation going on there and
//! no id SQLite ever gave given again; and the commands that read or write beside a
//! running worker.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, post_with_key, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::postgres::{PostgresServer, config_on};
use crate::support::test_config::TestConfig;

pub(crate) async fn post(base_url: &str, body: &Value) -> (u16, Value) {
    post_with_key(
        &reqwest::Client::new(),
        &format!("{base_url}/inbound"),
        body,
    )
    .await
}

/// The texts of the chat messages the model was sent in its last request.
fn last_request_texts(llm: &ScriptedLlmServer) -> Vec<String> {
    let requests = llm.requests();
    let last = requests.last().expect("the model was asked");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] != "system")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_hearths_accepted_message_is_answered_once_by_the_next() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    llm.set_recording(true);
    let folder = tempfile::tempdir().unwrap();
    let config = config_on(folder.path(), &llm.base_url(), &database_url);
    let env = test_env(&[]);

    let first = Hearth::spawn(&config, &env);
    let (status, body) = post(
        &first.base_url,
        &json!({"user_id": "alice", "text": "the boat is blue", "message_id": "m1"}),
    )
    .await;
    assert_eq!(
        (status, body["reply"].as_str()),
        (200, Some("echo: the boat is blue"))
    );

    // A message reaches the model, then the first hearth is killed outright.
    llm.push(Step::Hang);
    let pending = {
        let url = first.base_url.clone();
        tokio::spawn(async move {
            post(
                &url,
                &json!({"user_id": "alice", "text": "and the sail?", "message_id": "m2"}),
            )
            .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while llm.request_count() < 2 {
        assert!(
            Instant::now() < deadline,
            "the message never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill();
    let _ = pending.await;

    // The next one waits out the killed one's lease, then answers the message once, with
    // the conversation remembered.
    let second = Hearth::spawn_run(
        Path::new(env!("CARGO_BIN_EXE_hearth")),
        &config,
        &env,
        &crate::support::hearth_app::RunOptions {
            listen_within: Some(Duration::from_secs(40)),
            ..Default::default()
        },
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let answered = loop {
        // The same message id again: a duplicate, reported with the original's state.
        let (status, body) = post(
            &second.base_url,
            &json!({"user_id": "alice", "text": "and the sail?", "message_id": "m2"}),
        )
        .await;
        if body["status"] == "answered" {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "not answered after the restart: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(answered["reply"], "echo: and the sail?");
    assert_eq!(
        last_request_texts(&llm),
        [
            "the boat is blue",
            "echo: the boat is blue",
            "and the sail?"
        ]
    );
    let (status, again) = post(
        &second.base_url,
        &json!({"user_id": "alice", "text": "and the sail?", "message_id": "m2"}),
    )
    .await;
    assert_eq!((status, again["status"].as_str()), (200, Some("answered")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        llm.request_count(),
        3,
        "one hung call, one after the restart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_moves_from_sqlite_to_postgres_with_copy_store() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    llm.set_recording(true);
    let folder = tempfile::tempdir().unwrap();
    let sqlite_config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let sqlite_url = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let env = test_env(&[]);

    let on_sqlite = Hearth::spawn(&sqlite_config, &env);
    for (id, text) in [("s1", "the boat is blue"), ("s2", "the sail is red")] {
        let (status, _) = post(
            &on_sqlite.base_url,
            &json!({"user_id": "alice", "text": text, "message_id": id}),
        )
        .await;
        assert_eq!(status, 200);
    }

    // Refused while a hearth runs on the SQLite file.
    let database_url = server.fresh_database().await;
    let copy = |from: &str, to: &str| {
        Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["copy-store", "--from", from, "--to", to])
            .output()
            .unwrap()
    };
    let refused = copy(&sqlite_url, &database_url);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("in use by another hearth"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    on_sqlite.terminate();
    let mut on_sqlite = on_sqlite;
    let deadline = Instant::now() + Duration::from_secs(30);
    while on_sqlite.exited().is_none() {
        assert!(Instant::now() < deadline, "hearth did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Ids SQLite gave to rows deleted since (`AUTOINCREMENT` never gives them again) are
    // not given again on PostgreSQL either.
    let sqlite = sqlx::SqlitePool::connect(&sqlite_url).await.unwrap();
    for n in 0..3 {
        sqlx::query("INSERT INTO sign_in_failures (member_id, address, at_ms) VALUES ('alice', '192.0.2.1', ?)")
            .bind(n)
            .execute(&sqlite)
            .await
            .unwrap();
    }
    let newest: i64 = sqlx::query_scalar("SELECT MAX(id) FROM sign_in_failures")
        .fetch_one(&sqlite)
        .await
        .unwrap();
    sqlx::query("DELETE FROM sign_in_failures WHERE id > ?")
        .bind(newest - 2)
        .execute(&sqlite)
        .await
        .unwrap();
    sqlite.close().await;

    let copied = copy(&sqlite_url, &database_url);
    let said = String::from_utf8_lossy(&copied.stderr).into_owned();
    assert!(copied.status.success(), "{said}");
    let postgres = sqlx::PgPool::connect(&database_url).await.unwrap();
    let next: i64 = sqlx::query_scalar(
        "INSERT INTO sign_in_failures (member_id, address, at_ms) VALUES ('alice', '192.0.2.1', 9) \
         RETURNING id",
    )
    .fetch_one(&postgres)
    .await
    .unwrap();
    assert!(
        next > newest,
        "id {next} given again (SQLite gave up to {newest})"
    );
    sqlx::query("DELETE FROM sign_in_failures WHERE id = $1")
        .bind(next)
        .execute(&postgres)
        .await
        .unwrap();
    postgres.close().await;
    assert!(
        said.contains("inbox: 2 rows") && said.contains("messages: 4 rows"),
        "{said}"
    );

    // A second copy into the same database is refused: it is no longer empty.
    let again = copy(&sqlite_url, &database_url);
    let said = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(!again.status.success());
    assert!(
        said.contains("not empty") && said.contains("rows"),
        "{said}"
    );

    // The conversation goes on on PostgreSQL, remembered; a replayed id stays answered.
    let pg_folder = tempfile::tempdir().unwrap();
    let pg_config = config_on(pg_folder.path(), &llm.base_url(), &database_url);
    let on_postgres = Hearth::spawn(&pg_config, &env);
    let (status, replayed) = post(
        &on_postgres.base_url,
        &json!({"user_id": "alice", "text": "the sail is red", "message_id": "s2"}),
    )
    .await;
    assert_eq!(
        (status, replayed["status"].as_str()),
        (200, Some("answered"))
    );
    let requests_before = llm.request_count();
    let (status, body) = post(
        &on_postgres.base_url,
        &json!({"user_id": "alice", "text": "what colours?", "message_id": "p1"}),
    )
    .await;
    assert_eq!(
        (status, body["reply"].as_str()),
        (200, Some("echo: what colours?"))
    );
    assert_eq!(llm.request_count(), requests_before + 1);
    assert_eq!(
        last_request_texts(&llm),
        [
            "the boat is blue",
            "echo: the boat is blue",
            "the sail is red",
            "echo: the sail is red",
            "what colours?"
        ]
    );
}

/// `hearth <args>` of the real binary with `config`: whether it succeeded, and what it
/// printed on stdout and stderr together.
fn command(
    config: &Path,
    env: &std::collections::BTreeMap<String, String>,
    args: &[&str],
) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .args(args)
        .envs(env)
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_beside_a_running_worker_read_and_write_postgres() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = config_on(folder.path(), &llm.base_url(), &database_url);
    let env = test_env(&[]);

    // Before any migration: the read-only commands say what to run, and never migrate.
    let (succeeded, said) = command(&config, &env, &["doctor"]);
    assert!(!succeeded, "{said}");
    assert!(said.contains("run `hearth migrate` first"), "{said}");
    let (succeeded, said) = command(&config, &env, &["migrate"]);
    assert!(succeeded, "{said}");

    let running = Hearth::spawn(&config, &env);
    let (status, _) = post(
        &running.base_url,
        &json!({"user_id": "alice", "text": "hello", "message_id": "c1"}),
    )
    .await;
    assert_eq!(status, 200);

    let (_, said) = command(&config, &env, &["doctor"]);
    assert!(said.contains("(schema up to date)"), "{said}");
    assert!(
        !said.contains("password") && !said.contains("hunter2"),
        "{said}"
    );
    let (succeeded, said) = command(&config, &env, &["check-config"]);
    assert!(succeeded, "{said}");
    let (succeeded, said) = command(
        &config,
        &env,
        &["telemetry", "--conversation", "http:alice"],
    );
    assert!(succeeded, "{said}");
    // A link signs alice in on the running worker: written beside it, read by it.
    let (succeeded, link) = command(&config, &env, &["web-link", "--user", "alice"]);
    assert!(succeeded, "{link}");
    // Printed with the address the running worker serves at.
    let link = link
        .lines()
        .find(|line| line.contains("/sign-in/link/"))
        .unwrap();
    assert!(link.starts_with(&running.base_url), "{link}");
    let secret = link.rsplit('/').next().unwrap().to_string();
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let shown = plain
        .get(format!("{}/sign-in/link/{secret}", running.base_url))
        .send()
        .await
        .unwrap();
    let form_cookie = crate::support::web_page::cookie_set(&shown, "hearth_form");
    let form = crate::support::web_page::field(&shown.text().await.unwrap(), "form");
    let signed_in = plain
        .post(format!("{}/sign-in/link", running.base_url))
        .header("cookie", format!("hearth_form={form_cookie}"))
        .form(&[("form", form.as_str()), ("link", secret.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status().as_u16(), 303, "{link}");
    // A change to the family is made beside the running workers (they read it before
    // their next request); a member of the configuration is the file's to change.
    let (succeeded, said) = command(&config, &env, &["family", "set-role", "bob", "parent"]);
    assert!(!succeeded, "{said}");
    assert!(
        said.contains("Bob is in the configuration file") && !said.contains("to itself"),
        "{said}"
    );
}
