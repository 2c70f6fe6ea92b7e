//! The `hearth` binary's commands: `chat` (the console channel, with no hearth running;
//! beside one, see `one_hearth.rs`), `check-config`,
//! `migrate`, and a bad configuration refused before start.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::Row;

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;

fn hearth(config: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
    command.arg("--config").arg(config).envs(test_env(&[]));
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_talks_in_the_terminal_and_records_each_llm_call() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    llm.push(Step::Reply("Hello Alice, how can I help?".into()));
    let mut child = hearth(&config)
        .args(["chat", "--user", "alice"])
        .env(
            "HEARTH__LLMS__MAIN__COST_PER_MILLION_INPUT_TOKENS",
            "1000000",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello there\nsecond line\n").unwrap();
    drop(stdin); // end of input: hearth answers what it has, then exits
    let started = Instant::now();
    let output = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "chat did not exit after input ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let database = folder.path().join("hearth.db");
    assert!(
        stdout.starts_with(&format!(
            "no hearth is running on {}; starting one in this terminal\n",
            database.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("hearth> Hello Alice, how can I help?"),
        "{stdout}"
    );
    assert!(stdout.contains("hearth> echo: second line"), "{stdout}");
    // Both lines were one conversation, in order.
    let second = &llm.requests()[1].body["messages"];
    assert_eq!(second[1]["content"], "hello there");

    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", database.display()))
        .await
        .unwrap();
    let calls = sqlx::query(
        "SELECT llm_name, model, backend, outcome, input_tokens, output_tokens, cost_usd, \
         profile_id, conversation_key FROM llm_calls ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(calls.len(), 2);
    let first = &calls[0];
    assert_eq!(first.get::<String, _>("llm_name"), "main");
    assert_eq!(first.get::<String, _>("model"), "scripted-main");
    assert_eq!(first.get::<String, _>("backend"), "cloud");
    assert_eq!(first.get::<String, _>("outcome"), "ok");
    assert_eq!(first.get::<String, _>("profile_id"), "default_assistant");
    assert_eq!(first.get::<String, _>("conversation_key"), "console:alice");
    let input_tokens: i64 = first.get("input_tokens");
    assert!(input_tokens > 0 && first.get::<i64, _>("output_tokens") > 0);
    // One dollar per input token, as configured.
    assert_eq!(first.get::<f64, _>("cost_usd"), input_tokens as f64);
}

#[test]
fn chat_refuses_someone_who_is_not_family() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let output = hearth(&config)
        .args(["chat", "--user", "mallory"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"mallory\" is not a family member"),
        "{stderr}"
    );
    assert!(stderr.contains("alice, bob"), "{stderr}");
}

#[test]
fn check_config_prints_the_resolved_profiles() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let output = hearth(&config).arg("check-config").output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("focused_assistant"), "{stdout}");
    assert!(stdout.contains("/focus"), "{stdout}");
    assert!(
        stdout.contains("delegation_security_level: confirm"),
        "{stdout}"
    );
    // What each credential may do.
    assert!(
        stdout.contains(
            "the inbound key ($TEST_HEARTH_API_KEY): submits messages and reads replies as any member; answers no confirmation"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("a member's token (hearth token create --user NAME)"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(crate::support::hearth_app::API_KEY),
        "no secrets printed"
    );
}

/// The test config written in `folder` with the focused profile's `max_history_messages`
/// misspelt `max_histroy_messages`.
fn with_a_misspelt_key(folder: &std::path::Path) -> std::path::PathBuf {
    TestConfig::new(folder, "http://127.0.0.1:9/v1")
        .with(|config| {
            let focused = config.service_profiles[1]
                .processing_config
                .as_mut()
                .unwrap();
            let value = focused.remove("max_history_messages").unwrap();
            focused.insert("max_histroy_messages".into(), value);
        })
        .write(folder)
}

#[test]
fn a_bad_config_stops_before_start_naming_file_and_key() {
    let folder = tempfile::tempdir().unwrap();
    let config = with_a_misspelt_key(folder.path());
    let output = hearth(&config).arg("run").output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("hearth.yaml"), "{stderr}");
    assert!(
        stderr.contains("service_profiles[1].processing_config.max_histroy_messages"),
        "{stderr}"
    );
    assert!(!folder.path().join("hearth.db").exists(), "nothing started");
}

#[test]
fn migrate_creates_the_database() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let output = hearth(&config).arg("migrate").output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(folder.path().join("hearth.db").exists());
    // Twice is harmless.
    assert!(
        hearth(&config)
            .arg("migrate")
            .output()
            .unwrap()
            .status
            .success()
    );
}

#[actix::test]
async fn an_unreachable_homeserver_keeps_hearth_running_and_readiness_says_why() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let store = folder.path().join("matrix");
    let env = test_env(&[
        ("HEARTH__CHANNELS__MATRIX__ENABLED", "true"),
        (
            "HEARTH__CHANNELS__MATRIX__HOMESERVER_URL",
            "http://127.0.0.1:9",
        ),
        ("HEARTH__CHANNELS__MATRIX__USER_ID", "@hearth:localhost"),
        (
            "HEARTH__CHANNELS__MATRIX__PASSWORD_ENV",
            "TEST_MATRIX_PASSWORD",
        ),
        (
            "HEARTH__CHANNELS__MATRIX__STORE_PATH",
            store.to_str().unwrap(),
        ),
        (
            "HEARTH__CHANNELS__MATRIX__STORE_PASSPHRASE_ENV",
            "TEST_MATRIX_PASSPHRASE",
        ),
        ("TEST_MATRIX_PASSWORD", "secret"),
        ("TEST_MATRIX_PASSPHRASE", "passphrase"),
    ]);
    let hearth = Hearth::spawn(&config, &env);
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let response = client
            .get(format!("{}/readyz", hearth.base_url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        if status == 503 && body.contains("cannot log in") {
            assert!(body.contains("matrix"), "{body}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "readiness never said why: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Still serving while the homeserver is away.
    let health = client
        .get(format!("{}/healthz", hearth.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

#[test]
fn a_database_password_never_shows_in_a_start_up_error() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    for command in ["run", "migrate"] {
        let output = hearth(&config)
            .env(
                "HEARTH__DATABASE_URL",
                "postgres://hearth:hunter2-db-pass@127.0.0.1:9/hearth",
            )
            .arg(command)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("postgres://hearth:***@127.0.0.1:9/hearth"),
            "{stderr}"
        );
        assert!(!stderr.contains("hunter2-db-pass"), "{stderr}");
    }
}

/// A database at the first schema version only, as an older hearth left it.
async fn database_of_an_older_hearth(folder: &std::path::Path) -> std::path::PathBuf {
    let database = folder.join("hearth.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&database)
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let mut migrator = sqlx::migrate::Migrator::new(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/sqlite"
    )))
    .await
    .unwrap();
    migrator.migrations = migrator.migrations[..1].to_vec().into();
    migrator.run(&pool).await.unwrap();
    pool.close().await;
    database
}

async fn recorded_migrations(database: &std::path::Path) -> Vec<i64> {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(database)
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let versions = sqlx::query("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .map(|row| row.get::<i64, _>(0))
        .collect();
    pool.close().await;
    versions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_config_and_telemetry_never_migrate_or_write_the_database() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let database = database_of_an_older_hearth(folder.path()).await;
    let before = std::fs::read(&database).unwrap();
    let reading: [&[&str]; 2] = [
        &["check-config"],
        &["telemetry", "--conversation", "http:alice"],
    ];
    for command in reading {
        let output = hearth(&config).args(command).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{command:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "the database {} is at schema version 1, older than this hearth's",
                database.display()
            )),
            "{command:?}: {stderr}"
        );
        assert!(stderr.contains("run `hearth migrate` first"), "{stderr}");
        assert_eq!(
            std::fs::read(&database).unwrap(),
            before,
            "{command:?} changed the database"
        );
        assert_eq!(recorded_migrations(&database).await, [1]);
    }

    let migrate = hearth(&config).arg("migrate").output().unwrap();
    assert!(migrate.status.success(), "{migrate:?}");
    let migrated = recorded_migrations(&database).await;
    assert!(migrated.len() > 1, "{migrated:?}");
    let before = std::fs::read(&database).unwrap();
    for command in reading {
        let output = hearth(&config).args(command).output().unwrap();
        assert!(output.status.success(), "{command:?}: {output:?}");
        assert_eq!(std::fs::read(&database).unwrap(), before, "{command:?}");
    }
    assert_eq!(recorded_migrations(&database).await, migrated);
}

#[test]
fn check_config_takes_a_postgresql_url_and_never_prints_its_password() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let output = hearth(&config)
        .env(
            "HEARTH__DATABASE_URL",
            "postgres://hearth:hunter2-db-pass@127.0.0.1:9/hearth",
        )
        .arg("check-config")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    assert!(!said.contains("hunter2-db-pass"), "{said}");
}

#[test]
fn a_bad_config_prints_only_the_error_with_rust_backtrace_set() {
    let folder = tempfile::tempdir().unwrap();
    let config = with_a_misspelt_key(folder.path());
    for command in ["run", "check-config"] {
        let output = hearth(&config)
            .env("RUST_BACKTRACE", "1")
            .env("RUST_LIB_BACKTRACE", "1")
            .arg(command)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("Error: ")
                && stderr.contains("service_profiles[1].processing_config.max_histroy_messages"),
            "{stderr}"
        );
        assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
    }
}

#[test]
fn check_config_prints_the_reminder_settings_and_each_member_s_zone() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .member("alice", |alice| {
            alice.timezone = Some("America/New_York".into())
        })
        .default_tools("profile_get, profile_update, schedule_reminder")
        .with(|config| config.reminders.snooze_minutes = 15)
        .write(folder.path());
    let output = hearth(&config).arg("check-config").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout
            .contains("sent late within 60 min of their time, else told as missed; snooze 15 min"),
        "{stdout}"
    );
    assert!(stdout.contains("  alice: America/New_York"), "{stdout}");
    assert!(stdout.contains("  bob: the profile's timezone"), "{stdout}");
}

#[test]
fn a_member_s_zone_that_is_no_iana_name_stops_start_up_naming_the_key() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .member("bob", |bob| bob.timezone = Some("Europe/Berlni".into()))
        .write(folder.path());
    for command in ["run", "check-config"] {
        let output = hearth(&config).arg(command).output().unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("family[1].timezone"), "{stderr}");
        assert!(stderr.contains("Europe/Berlni"), "{stderr}");
    }
}
