//! The typed test configuration (`support::test_config`) loads as hearth reads a written
//! file, into the same configuration as the YAML text it stands for: the test config, and
//! what the helpers add to it (Telegram and Matrix accounts and channels, a profile said by
//! its parts, an MCP server, a PostgreSQL database, many Telegram members).

use std::path::{Path, PathBuf};

use hearth::config::render_resolved_profiles;

use crate::support::hearth_app::{load, telegram_family_config, test_env};
use crate::support::test_config::{ProfileParts, TestConfig, profile, tools};

/// The test config as YAML text (what `TestConfig::new` builds) for `folder`, with `more`'s
/// edits.
fn text(folder: &Path, llm_base_url: &str, more: &str) -> String {
    let database = folder.join("hearth.db");
    let text = format!(
        r#"
database_url: "sqlite://{database}"
http: {{ bind: "127.0.0.1:0", auth_enabled: true, auth_api_key_env: TEST_HEARTH_API_KEY, plugin_api_key_env: TEST_HEARTH_PLUGIN_KEY, admin_api_key_env: TEST_HEARTH_ADMIN_KEY, reply_timeout_seconds: 10 }}
queue: {{ max_parallel_conversations: 8, max_backlog: 256, retry_delay_seconds: 1, max_attempts: 4 }}
llm_retry: {{ max_attempts: 3, initial_backoff_ms: 10, max_backoff_ms: 50, max_retry_after_seconds: 5 }}
llms:
  main: {{ provider: openai, base_url: "{llm_base_url}", model: "scripted-main", backend: cloud, timeout_seconds: 5 }}
  backup: {{ provider: openai, base_url: "{llm_base_url}", model: "scripted-backup", backend: cloud, timeout_seconds: 5 }}
family:
  - {{ id: alice, name: Alice }}
  - {{ id: bob, name: Bob }}
default_service_profile_id: default_assistant
default_profile_settings:
  processing_config:
    prompts: {{ system_prompt: "You are a test assistant. Current time is {{current_time}}." }}
    timezone: "Europe/Berlin"
    max_history_messages: 10
    history_max_age_hours: 24
    llm_model: main
  tools_config:
    enable_local_tools: [profile_get, profile_update]
service_profiles:
  - id: default_assistant
  - id: focused_assistant
    slash_commands: ["/focus"]
    processing_config:
      prompts: {{ system_prompt: "You are focused." }}
      max_history_messages: 2
"#,
        database = database.display()
    );
    edit(&text, more)
}

/// `text` with `more`'s edits: each line `FIND => REPLACE` replaces (`\\n` in REPLACE a line
/// break), any other is appended.
fn edit(text: &str, more: &str) -> String {
    let mut text = text.to_owned();
    for line in more.lines().filter(|line| !line.trim().is_empty()) {
        match line.split_once(" => ") {
            Some((find, replace)) => {
                assert!(text.contains(find), "no {find:?} in the test config");
                text = text.replace(find, &replace.replace("\\n", "\n"));
            }
            None => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}

/// `typed` and the test config's text with `more` load into the same configuration (both
/// naming their files in `folder`, written in folders of their own).
fn same_as_text(folder: &Path, typed: TestConfig, more: &str, env: &[(&str, &str)]) {
    let (text_folder, typed_folder) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let text_path: PathBuf = text_folder.path().join("hearth.yaml");
    std::fs::write(&text_path, text(folder, "http://127.0.0.1:9/v1", more)).unwrap();
    let text = load(&text_path, &test_env(env));
    let typed = load(&typed.write(typed_folder.path()), &test_env(env));
    assert!(
        text.config == typed.config,
        "the typed config differs:\n{:#?}\n{:#?}",
        text.config,
        typed.config
    );
    assert_eq!(
        render_resolved_profiles(&text),
        render_resolved_profiles(&typed)
    );
    assert_eq!(text.default_profile_id, typed.default_profile_id);
}

#[test]
fn the_typed_test_config_loads_as_the_written_text_does() {
    let folder = tempfile::tempdir().unwrap();
    let typed = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1");
    same_as_text(folder.path(), typed, "", &[]);
}

#[test]
fn telegram_and_matrix_accounts_and_channels_load_as_their_text() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().display();
    let typed = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .on_telegram("alice", 1001)
        .on_telegram("bob", 1002)
        .child("bob")
        .named("carol", "Carol")
        .on_telegram("carol", 1003)
        .on_matrix("carol", "@carol:localhost")
        .telegram("http://127.0.0.1:7", folder.path())
        .matrix("http://127.0.0.1:8", "@hearth:localhost", folder.path());
    let text = format!(
        r#"{{ id: alice, name: Alice }} => {{ id: alice, name: Alice, telegram_user_id: 1001 }}
{{ id: bob, name: Bob }} => {{ id: bob, name: Bob, telegram_user_id: 1002, role: child }}
  - {{ id: bob, name: Bob, telegram_user_id: 1002, role: child }} =>   - {{ id: bob, name: Bob, telegram_user_id: 1002, role: child }}\n  - {{ id: carol, name: Carol, telegram_user_id: 1003, matrix_user_id: "@carol:localhost" }}
channels:
  telegram: {{ enabled: true, token_env: TEST_TELEGRAM_TOKEN, api_url: "http://127.0.0.1:7", poll_timeout_seconds: 1, attachments_dir: "{path}/attachments", max_attachment_bytes: 4096 }}
  matrix: {{ enabled: true, homeserver_url: "http://127.0.0.1:8", user_id: "@hearth:localhost", password_env: TEST_MATRIX_PASSWORD, store_path: "{path}/matrix", store_passphrase_env: TEST_MATRIX_STORE_PASSPHRASE, attachments_dir: "{path}/attachments" }}"#
    );
    let env = [
        ("TEST_TELEGRAM_TOKEN", "123:abc"),
        ("TEST_MATRIX_PASSWORD", "pw"),
        ("TEST_MATRIX_STORE_PASSPHRASE", "phrase"),
    ];
    same_as_text(folder.path(), typed, &text, &env);
}

#[test]
fn profiles_said_by_their_parts_and_an_mcp_server_load_as_their_text() {
    let folder = tempfile::tempdir().unwrap();
    let typed = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .default_tools("profile_get, profile_update, schedule_reminder")
        .default_confirm(&["profile_update"])
        .default_mcp_servers(&["files"])
        .default_processing("include_notes_in_prompt", true.into())
        .profile(
            profile("secure")
                .description("Changes what hearth knows about you.")
                .command("/secure")
                .confirming_commands()
                .processing(&[("confirmation_timeout_seconds", 300.into())])
                .local_tools(&["profile_get", "profile_update"])
                .confirm(&[]),
        )
        .profile(profile("toolbox").command("/tools").mcp_servers(&["files"]))
        .mcp_server(
            "files",
            "python3",
            &["-u".into(), "server.py".into()],
            |server| {
                server.env.insert("CALLS".into(), "calls.jsonl".into());
                server.init_timeout_seconds = Some(2);
            },
        );
    let text = r#"    enable_local_tools: [profile_get, profile_update] =>     enable_local_tools: [profile_get, profile_update, schedule_reminder]\n    confirm_tools: [profile_update]\n    enable_mcp_server_ids: [files]
    llm_model: main =>     llm_model: main\n    include_notes_in_prompt: true
  - id: secure
    description: "Changes what hearth knows about you."
    slash_commands: ["/secure"]
    confirm_slash_commands: true
    processing_config: { confirmation_timeout_seconds: 300 }
    tools_config: { enable_local_tools: [profile_get, profile_update], confirm_tools: [] }
  - id: toolbox
    slash_commands: ["/tools"]
    tools_config: { enable_mcp_server_ids: [files] }
mcp_servers:
  files: { command: python3, args: ["-u", "server.py"], env: { CALLS: calls.jsonl }, init_timeout_seconds: 2 }"#;
    same_as_text(folder.path(), typed, text, &[]);
}

#[test]
fn many_telegram_members_and_a_postgresql_database_load_as_their_text() {
    let folder = tempfile::tempdir().unwrap();
    let typed = telegram_family_config(
        folder.path(),
        "http://127.0.0.1:9/v1",
        "http://127.0.0.1:7",
        2,
        100,
    )
    .database("postgres://hearth@127.0.0.1:9/hearth");
    let database = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let text = format!(
        r#"family: => family:\n  - {{ id: m0, telegram_user_id: 100 }}\n  - {{ id: m1, telegram_user_id: 101 }}
database_url: "{database}" => database_url: "postgres://hearth@127.0.0.1:9/hearth"
channels:
  telegram: {{ enabled: true, token_env: TEST_TELEGRAM_TOKEN, api_url: "http://127.0.0.1:7", poll_timeout_seconds: 1 }}"#
    );
    same_as_text(
        folder.path(),
        typed,
        &text,
        &[("TEST_TELEGRAM_TOKEN", "123:abc")],
    );
}

#[test]
fn members_channels_and_profiles_are_added_by_method() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .on_telegram("alice", 1001)
        .on_telegram("carol", 1003)
        .parent("alice")
        .telegram("http://127.0.0.1:9", folder.path())
        .profile(hearth::config::ServiceProfileConfig {
            slash_commands: vec!["/secure".into()],
            tools_config: Some(tools(
                &["profile_get", "profile_update"],
                &["profile_update"],
            )),
            ..profile("secure")
        });
    let loaded = load(
        &config.write(folder.path()),
        &test_env(&[("TEST_TELEGRAM_TOKEN", "123:abc")]),
    );
    let family = &loaded.config.family;
    assert_eq!(family.len(), 3);
    assert_eq!(family[0].telegram_user_id, Some(1001));
    assert_eq!(family[0].role, hearth::config::FamilyRole::Parent);
    assert_eq!(
        (family[2].id.as_str(), family[2].telegram_user_id),
        ("carol", Some(1003))
    );
    assert!(loaded.config.channels.telegram.enabled);
    let secure = loaded.profiles.iter().find(|p| p.id == "secure").unwrap();
    assert_eq!(
        secure.tools.confirm_tools,
        vec!["profile_update".to_string()]
    );
}
