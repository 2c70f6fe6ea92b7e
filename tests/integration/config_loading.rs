//! Loading `hearth.yaml` from real files: the example configuration, seed 004's profile merging,
//! `HEARTH__*` overrides, secrets from the environment, and the message of every validation
//! error (file name, key path, what is wrong), including several problems reported together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hearth::config::*;
use tempfile::TempDir;

const KNOWN_LOCAL_TOOLS: &[&str] = &[
    "profile_get",
    "profile_update",
    "delegate_to_service",
    "route_to_plugin",
    "check_order_status",
    "add_or_update_note",
    "modify_calendar_event",
];

/// Enough for a configuration to load: one LLM named `main` (no key) and the HTTP API without
/// auth. Cases add their own sections after it.
const MINIMAL: &str = r#"
http: { auth_enabled: false }
llms:
  main: { provider: openai, base_url: "http://127.0.0.1:8081/v1", model: test-model, backend: local }
"#;

/// A config file in its own temporary directory; the directory lives as long as the value.
struct ConfigFile {
    _directory: TempDir,
    path: PathBuf,
}

fn write_config(text: &str) -> ConfigFile {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("hearth.yaml");
    std::fs::write(&path, text).expect("write the config file");
    ConfigFile {
        _directory: directory,
        path,
    }
}

fn environment(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

fn load_from(path: &Path, env: &BTreeMap<String, String>) -> Result<LoadedConfig, ConfigError> {
    load_with_env(
        path,
        env,
        &LoadOptions {
            known_local_tools: KNOWN_LOCAL_TOOLS,
        },
    )
}

fn load_text(text: &str, env: &[(&str, &str)]) -> LoadedConfig {
    let file = write_config(text);
    load_from(&file.path, &environment(env))
        .unwrap_or_else(|error| panic!("the config should load, got:\n{error}"))
}

/// Loads a config that must fail; returns the message and the file's path as displayed.
fn load_error(text: &str, env: &[(&str, &str)]) -> (String, String) {
    let file = write_config(text);
    match load_from(&file.path, &environment(env)) {
        Ok(loaded) => panic!("the config should be refused, got {loaded:?}"),
        Err(error) => (error.to_string(), file.path.display().to_string()),
    }
}

/// Asserts that one line of the message is `file: key_path: ...` and contains `fragment`.
fn assert_problem(message: &str, file: &str, key_path: &str, fragment: &str) {
    let prefix = format!("{file}: {key_path}: ");
    assert!(
        message
            .lines()
            .any(|line| line.starts_with(&prefix) && line.contains(fragment)),
        "expected a line starting with {prefix:?} containing {fragment:?} in:\n{message}"
    );
}

fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/hearth.example.yaml")
}

const EXAMPLE_SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-test-openai"),
    ("HEARTH_API_KEY", "test-api-key"),
];

#[test]
fn the_example_file_loads_with_its_two_secrets() {
    let loaded = load_from(&example_path(), &environment(EXAMPLE_SECRETS))
        .unwrap_or_else(|error| panic!("{error}"));

    assert_eq!(loaded.config.database_url, "sqlite://data/hearth.db");
    assert_eq!(loaded.default_profile_id, "default_assistant");
    let ids: Vec<&str> = loaded
        .profiles
        .iter()
        .map(|profile| profile.id.as_str())
        .collect();
    assert_eq!(ids, ["default_assistant", "focused_assistant", "orders"]);
    let orders = loaded.profile("orders").expect("orders profile");
    assert_eq!(orders.processing.engine, Engine::Intents);
    assert_eq!(
        orders.processing.intents_file,
        "config/intents.example.yaml"
    );
    assert_eq!(
        loaded.family_member("bob").map(|bob| bob.role),
        Some(FamilyRole::Child)
    );
    assert_eq!(
        loaded.family_member("alice").map(|alice| alice.role),
        Some(FamilyRole::Parent)
    );
    assert_eq!(loaded.secret("OPENAI_API_KEY"), Some("sk-test-openai"));
    assert_eq!(loaded.secret("HEARTH_API_KEY"), Some("test-api-key"));
    assert_eq!(loaded.config.llms["main"].provider, LlmProviderKind::OpenAi);
    assert_eq!(loaded.config.llms["local"].backend, LlmBackend::Local);
    assert_eq!(loaded.config.llms["local"].api_key_env, None);
    assert!(!loaded.config.channels.telegram.enabled);
    assert!(!loaded.config.channels.matrix.enabled);
    assert_eq!(
        loaded
            .family_member("bob")
            .and_then(|bob| bob.telegram_user_id),
        Some(1002)
    );

    let focused = loaded
        .profile("focused_assistant")
        .expect("focused profile");
    assert_eq!(focused.slash_commands, ["/focus"]);
    assert_eq!(focused.processing.max_history_messages, 3);
    assert_eq!(
        focused.processing.delegation_security_level,
        DelegationLevel::Unrestricted
    );
    assert_eq!(focused.tools.enable_local_tools, ["profile_get"]);
    let default = loaded
        .profile("default_assistant")
        .expect("default profile");
    assert_eq!(
        default.tools.enable_local_tools,
        ["profile_get", "profile_update", "route_to_plugin"]
    );
    // Narrowing the tools kept the default confirmations.
    assert_eq!(focused.tools.confirm_tools, default.tools.confirm_tools);
    assert_eq!(
        default.processing.delegation_security_level,
        DelegationLevel::Confirm
    );
}

#[test]
fn the_example_file_without_secrets_names_both_variables() {
    let error = load_from(&example_path(), &BTreeMap::new()).expect_err("secrets are missing");
    let message = error.to_string();
    let file = example_path().display().to_string();
    assert_problem(&message, &file, "llms.main.api_key_env", "OPENAI_API_KEY");
    assert_problem(&message, &file, "http.auth_api_key_env", "HEARTH_API_KEY");
    assert_eq!(message.lines().count(), 2, "{message}");
}

#[test]
fn render_resolved_profiles_prints_profiles_and_no_secret() {
    let loaded = load_from(&example_path(), &environment(EXAMPLE_SECRETS)).expect("loads");
    let rendered = render_resolved_profiles(&loaded);

    let parsed: serde_yaml::Value = serde_yaml::from_str(&rendered).expect("valid YAML");
    assert_eq!(parsed["default_profile_id"], "default_assistant");
    assert_eq!(parsed["profiles"][1]["id"], "focused_assistant");
    assert_eq!(parsed["profiles"][1]["processing"]["timezone"], "UTC");
    assert_eq!(
        parsed["profiles"][1]["processing"]["delegation_security_level"],
        "unrestricted"
    );
    assert!(!rendered.contains("sk-test-openai"), "{rendered}");
    assert!(!rendered.contains("test-api-key"), "{rendered}");
    assert!(!format!("{loaded:?}").contains("sk-test-openai"));
}

#[test]
fn a_database_password_never_shows_in_debug_output() {
    let config = HearthConfig {
        database_url: "postgres://hearth:hunter2@db:5432/hearth".into(),
        ..HearthConfig::default()
    };
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(
        shown.contains("postgres://hearth:***@db:5432/hearth"),
        "{shown}"
    );
}

#[test]
fn a_postgresql_database_is_refused_until_it_is_supported() {
    for url in [
        "postgres://hearth:hunter2@db:5432/hearth",
        "postgresql://hearth:hunter2@db/hearth",
    ] {
        let (message, file) = load_error(MINIMAL, &[("HEARTH__DATABASE_URL", url)]);
        assert_problem(
            &message,
            &file,
            "database_url",
            "names PostgreSQL, which is not supported yet; use a sqlite:// url",
        );
        assert!(message.contains(&redact_url_password(url)), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}

#[test]
fn an_in_memory_database_is_refused() {
    let (message, file) = load_error(
        &format!("{MINIMAL}database_url: \"sqlite::memory:\"\n"),
        &[],
    );
    assert_problem(
        &message,
        &file,
        "database_url",
        "an in-memory SQLite database",
    );
}

/// Seed 004 §3.2's example, with the model names as `llms` entries (calendar_config left out:
/// it is not a key hearth knows).
const SEED_004_EXAMPLE: &str = r#"
http: { auth_enabled: false }
llms:
  claude-3-haiku-20240307: { provider: anthropic, base_url: "https://api.anthropic.com", model: claude-3-haiku-20240307, api_key_env: ANTHROPIC_API_KEY }
  gpt-4-turbo: { provider: openai, base_url: "https://api.openai.com/v1", model: gpt-4-turbo, api_key_env: OPENAI_API_KEY }
mcp_servers:
  time_server_1: { command: mcp-server-time }
default_profile_settings:
  processing_config:
    prompts:
      system_prompt: "You are a helpful assistant. Current time is {current_time}."
      summary_prompt: "Summarise."
    timezone: "UTC"
    max_history_messages: 5
    history_max_age_hours: 24
    llm_model: "claude-3-haiku-20240307"
  tools_config:
    enable_local_tools: ["add_or_update_note", "profile_get"]
    enable_mcp_server_ids: ["time_server_1"]
    confirm_tools: ["modify_calendar_event"]
service_profiles:
  - id: "default_assistant"
    description: "Main assistant using default settings."
  - id: "focused_assistant"
    description: "Assistant with a specific system prompt and fewer tools."
    processing_config:
      prompts:
        system_prompt: "You are a focused assistant. Current time is {current_time}."
      max_history_messages: 3
      llm_model: "gpt-4-turbo"
      delegation_security_level: "unrestricted"
    tools_config:
      enable_local_tools:
        - "add_or_update_note"
      enable_mcp_server_ids: []
    slash_commands:
      - "/focus"
      - "/ask_focused"
"#;

const SEED_004_SECRETS: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "anthropic-key"),
    ("OPENAI_API_KEY", "openai-key"),
];

#[test]
fn seed_004_example_merges_as_written() {
    let loaded = load_text(SEED_004_EXAMPLE, SEED_004_SECRETS);
    assert_eq!(loaded.default_profile_id, "default_assistant");

    let default = loaded.profile("default_assistant").expect("default");
    assert_eq!(
        default.description,
        "Main assistant using default settings."
    );
    assert_eq!(default.processing.max_history_messages, 5);
    assert_eq!(default.processing.llm_model, "claude-3-haiku-20240307");
    assert_eq!(
        default.processing.prompts["system_prompt"],
        "You are a helpful assistant. Current time is {current_time}."
    );
    assert_eq!(
        default.tools.enable_local_tools,
        ["add_or_update_note", "profile_get"]
    );
    assert_eq!(default.tools.enable_mcp_server_ids, ["time_server_1"]);

    let focused = loaded.profile("focused_assistant").expect("focused");
    // prompts merged: the profile's system prompt, the default's other prompt.
    assert_eq!(
        focused.processing.prompts["system_prompt"],
        "You are a focused assistant. Current time is {current_time}."
    );
    assert_eq!(focused.processing.prompts["summary_prompt"], "Summarise.");
    // scalars replaced or inherited.
    assert_eq!(focused.processing.max_history_messages, 3);
    assert_eq!(focused.processing.history_max_age_hours, 24);
    assert_eq!(focused.processing.llm_model, "gpt-4-turbo");
    assert_eq!(focused.processing.timezone, chrono_tz::UTC);
    assert_eq!(
        focused.processing.delegation_security_level,
        DelegationLevel::Unrestricted
    );
    // lists replaced, even by an empty list.
    assert_eq!(focused.tools.enable_local_tools, ["add_or_update_note"]);
    assert!(focused.tools.enable_mcp_server_ids.is_empty());
    // tools_config merges key by key: confirm_tools was not written, so it is kept.
    assert_eq!(focused.tools.confirm_tools, ["modify_calendar_event"]);
    assert_eq!(focused.slash_commands, ["/focus", "/ask_focused"]);
    assert_eq!(loaded.secret("ANTHROPIC_API_KEY"), Some("anthropic-key"));
    assert_eq!(loaded.secret("OPENAI_API_KEY"), Some("openai-key"));
}

#[test]
fn a_profile_drops_confirmations_only_by_saying_so() {
    let explicit = SEED_004_EXAMPLE.replace(
        "      enable_mcp_server_ids: []\n",
        "      enable_mcp_server_ids: []\n      confirm_tools: []\n",
    );
    let loaded = load_text(&explicit, SEED_004_SECRETS);
    let focused = loaded.profile("focused_assistant").expect("focused");
    assert!(focused.tools.confirm_tools.is_empty());

    // A key written with no value is "not set": it inherits, it does not clear.
    let null_value = SEED_004_EXAMPLE.replace(
        "      enable_mcp_server_ids: []\n",
        "      enable_mcp_server_ids: []\n      confirm_tools: ~\n",
    );
    let loaded = load_text(&null_value, SEED_004_SECRETS);
    let focused = loaded.profile("focused_assistant").expect("focused");
    assert_eq!(focused.tools.confirm_tools, ["modify_calendar_event"]);
}

#[test]
fn delegation_level_unset_everywhere_is_confirm_and_inherits_from_defaults() {
    let unset = format!(
        "{MINIMAL}service_profiles:\n  - id: first\n  - id: second\n    processing_config: {{ max_history_messages: 2 }}\n"
    );
    let loaded = load_text(&unset, &[]);
    for profile in &loaded.profiles {
        assert_eq!(
            profile.processing.delegation_security_level,
            DelegationLevel::Confirm,
            "{}",
            profile.id
        );
    }

    let from_defaults = format!(
        "{MINIMAL}default_profile_settings:\n  processing_config: {{ delegation_security_level: blocked }}\nservice_profiles:\n  - id: first\n"
    );
    let loaded = load_text(&from_defaults, &[]);
    assert_eq!(
        loaded.profiles[0].processing.delegation_security_level,
        DelegationLevel::Blocked
    );
}

#[test]
fn built_in_defaults_apply_to_an_almost_empty_file() {
    let loaded = load_text(MINIMAL, &[]);
    let config = &loaded.config;
    assert_eq!(config.database_url, "sqlite://data/hearth.db");
    assert_eq!(config.database_max_connections, 2);
    assert_eq!(config.http.bind, "127.0.0.1:8080");
    assert_eq!(config.http.max_body_bytes, 65536);
    assert_eq!(config.queue.max_parallel_conversations, 8);
    assert_eq!(config.queue.max_backlog, 256);
    assert_eq!(config.llm_max_concurrent_local, 1);
    assert_eq!(config.llm_max_concurrent_cloud, 4);
    assert_eq!(config.llm_retry.max_backoff_ms, 8000);
    assert_eq!(config.llms["main"].timeout_seconds, 60);
    assert_eq!(config.channels.telegram.api_url, "https://api.telegram.org");
    assert_eq!(config.channels.matrix.store_path, "data/matrix");
    assert_eq!(config.plugins_dir, "plugins");

    let processing = &loaded.profiles[0].processing;
    assert_eq!(
        processing.prompts["system_prompt"],
        "You are a helpful family assistant. Current time is {current_time}."
    );
    assert_eq!(processing.timezone, chrono_tz::UTC);
    assert_eq!(processing.max_history_messages, 10);
    assert_eq!(processing.history_max_age_hours, 24);
    assert_eq!(processing.llm_model, "main");
    assert_eq!(processing.max_tool_iterations, 5);
    assert_eq!(processing.confirmation_timeout_seconds, 300);
    assert_eq!(processing.engine, Engine::Agent);
}

#[test]
fn no_service_profiles_means_one_implicit_default_assistant() {
    let text = format!(
        "{MINIMAL}default_profile_settings:\n  processing_config: {{ timezone: Europe/Berlin }}\n  tools_config: {{ enable_local_tools: [profile_get] }}\n"
    );
    let loaded = load_text(&text, &[]);
    assert_eq!(loaded.profiles.len(), 1);
    assert_eq!(loaded.default_profile_id, "default_assistant");
    let profile = loaded
        .profile("default_assistant")
        .expect("implicit profile");
    assert_eq!(profile.processing.timezone, chrono_tz::Europe::Berlin);
    assert_eq!(profile.tools.enable_local_tools, ["profile_get"]);
    assert!(render_resolved_profiles(&loaded).contains("timezone: Europe/Berlin"));
}

#[test]
fn default_profile_is_the_first_one_unless_named() {
    let text = format!("{MINIMAL}service_profiles:\n  - id: first\n  - id: second\n");
    assert_eq!(load_text(&text, &[]).default_profile_id, "first");
    let named = format!("{text}default_service_profile_id: second\n");
    assert_eq!(load_text(&named, &[]).default_profile_id, "second");
}

#[test]
fn environment_overrides_win_over_the_file() {
    let text = format!(
        "{MINIMAL}queue: {{ max_parallel_conversations: 8 }}\nservice_profiles:\n  - id: first\n  - id: second\n    processing_config: {{ max_history_messages: 3 }}\n"
    );
    let loaded = load_text(
        &text,
        &[
            ("HEARTH__HTTP__BIND", "0.0.0.0:9000"),
            ("HEARTH__QUEUE__MAX_PARALLEL_CONVERSATIONS", "2"),
            ("HEARTH__LLMS__MAIN__MODEL", "override-model"),
            ("HEARTH__HTTP__AUTH_ENABLED", "false"),
            (
                "HEARTH__SERVICE_PROFILES__1__PROCESSING_CONFIG__MAX_HISTORY_MESSAGES",
                "7",
            ),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "profile_get,profile_update",
            ),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__PROMPTS__SYSTEM_PROMPT",
                "Be brief, kind, and exact.",
            ),
            // The CLI's path variable, not an override.
            ("HEARTH_CONFIG", "/somewhere/else.yaml"),
            // Empty counts as unset.
            ("HEARTH__DATABASE_URL", ""),
        ],
    );
    assert_eq!(loaded.config.http.bind, "0.0.0.0:9000");
    assert_eq!(loaded.config.queue.max_parallel_conversations, 2);
    assert_eq!(loaded.config.llms["main"].model, "override-model");
    assert_eq!(loaded.config.llms["main"].provider, LlmProviderKind::OpenAi);
    assert_eq!(loaded.config.database_url, "sqlite://data/hearth.db");
    let profile_ids: Vec<&str> = loaded.profiles.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(profile_ids, ["first", "second"]);
    assert_eq!(loaded.profiles[0].processing.max_history_messages, 10);
    assert_eq!(loaded.profiles[1].processing.max_history_messages, 7);
    for profile in &loaded.profiles {
        assert_eq!(
            profile.tools.enable_local_tools,
            ["profile_get", "profile_update"]
        );
        assert_eq!(
            profile.processing.prompts["system_prompt"],
            "Be brief, kind, and exact."
        );
    }
}

#[test]
fn a_bad_environment_override_names_its_variable() {
    let (message, file) = load_error(MINIMAL, &[("HEARTH__QUEUE__MAX_BACKLOG", "plenty")]);
    assert_problem(
        &message,
        &file,
        "queue.max_backlog",
        "HEARTH__QUEUE__MAX_BACKLOG",
    );

    let (message, file) = load_error(MINIMAL, &[("HEARTH__QUEUE__MAX_BACKLOG", "0")]);
    assert_problem(
        &message,
        &file,
        "queue.max_backlog",
        "set by environment variable HEARTH__QUEUE__MAX_BACKLOG",
    );
}

#[test]
fn unknown_keys_are_reported_at_their_own_path() {
    let (message, file) = load_error(&format!("{MINIMAL}databse_url: x\n"), &[]);
    assert_problem(&message, &file, "databse_url", "unknown key");
    assert!(
        message.contains("database_url"),
        "lists the known keys: {message}"
    );

    let (message, file) = load_error(
        "http: { auth_enabled: false }\nllms:\n  main: { provider: openai, base_url: \"http://x/v1\", modle: m }\n",
        &[],
    );
    assert_problem(&message, &file, "llms.main.modle", "unknown key");

    let text = format!(
        "{MINIMAL}service_profiles:\n  - id: first\n  - id: second\n    processing_config: {{ max_histroy_messages: 3, llm_modle: main }}\n"
    );
    let (message, file) = load_error(&text, &[]);
    assert_problem(
        &message,
        &file,
        "service_profiles[1].processing_config.max_histroy_messages",
        "unknown key (expected one of",
    );
    assert_problem(
        &message,
        &file,
        "service_profiles[1].processing_config.llm_modle",
        "unknown key",
    );

    let text = format!(
        "{MINIMAL}default_profile_settings:\n  processing_config: {{ timezon: UTC }}\n  tools_config: {{ confirm_tool: [] }}\nservice_profiles:\n  - id: first\n  - id: second\n"
    );
    let (message, file) = load_error(&text, &[]);
    assert_problem(
        &message,
        &file,
        "default_profile_settings.processing_config.timezon",
        "unknown key",
    );
    assert_problem(
        &message,
        &file,
        "default_profile_settings.tools_config.confirm_tool",
        "unknown key",
    );
    assert_eq!(
        message.lines().count(),
        2,
        "reported once, not per profile:\n{message}"
    );
}

#[test]
fn wrong_types_and_missing_keys_name_the_key() {
    let (message, file) = load_error(&format!("{MINIMAL}queue: {{ max_backlog: lots }}\n"), &[]);
    assert_problem(&message, &file, "queue.max_backlog", "lots");

    let (message, file) = load_error(
        "llms:\n  main: { base_url: \"http://x/v1\", model: m }\n",
        &[],
    );
    assert_problem(&message, &file, "llms.main.provider", "required");

    let (message, file) = load_error(
        "llms:\n  main: { provider: openia, base_url: \"http://x/v1\", model: m }\n",
        &[],
    );
    assert_problem(&message, &file, "llms.main.provider", "openia");
    assert!(message.contains("anthropic"), "{message}");

    let text = format!(
        "{MINIMAL}service_profiles:\n  - id: first\n    processing_config: {{ delegation_security_level: sometimes, max_history_messages: many }}\n"
    );
    let (message, file) = load_error(&text, &[]);
    assert_problem(
        &message,
        &file,
        "service_profiles[0].processing_config.delegation_security_level",
        "sometimes",
    );
    assert_problem(
        &message,
        &file,
        "service_profiles[0].processing_config.max_history_messages",
        "invalid type",
    );
}

#[test]
fn shape_mistakes_in_different_sections_are_reported_together() {
    let text = format!(
        "{MINIMAL}queue: {{ max_backlog: lots }}\nfamily:\n  - name: no id\nplugin_dir: plugins\n"
    );
    let (message, file) = load_error(&text, &[]);
    assert_problem(&message, &file, "queue.max_backlog", "lots");
    assert_problem(&message, &file, "family[0].id", "required");
    assert_problem(&message, &file, "plugin_dir", "unknown key");
    assert_eq!(message.lines().count(), 3, "{message}");
}

#[test]
fn a_missing_file_and_broken_yaml_name_the_file() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let missing = directory.path().join("nowhere.yaml");
    let error = load_from(&missing, &BTreeMap::new()).expect_err("missing file");
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: ", missing.display())),
        "{error}"
    );

    let (message, file) = load_error("http:\n  bind: \"127.0.0.1:80\n  auth_enabled: [\n", &[]);
    assert!(message.starts_with(&format!("{file}: ")), "{message}");
    assert!(message.contains("line"), "{message}");

    let (message, _) = load_error("queue: {}\nqueue: {}\n", &[]);
    assert!(message.contains("duplicate"), "{message}");

    let (message, _) = load_error("- just\n- a list\n", &[]);
    assert!(message.contains("mapping"), "{message}");
}

/// One validation rule: file text, environment, key path, fragment of the message.
type ValidationCase = (
    String,
    Vec<(&'static str, &'static str)>,
    &'static str,
    &'static str,
);

/// Each validation rule produces a line naming the file and the key path.
#[test]
fn each_validation_error_names_the_file_and_key_path() {
    let profiles_ab = "service_profiles:\n  - id: a\n  - id: b\n";
    let cases: Vec<ValidationCase> = vec![
        (
            format!("{MINIMAL}database_url: \"mysql://root:hunter2@db/hearth\"\n"),
            vec![],
            "database_url",
            "unsupported database url (scheme \"mysql\"",
        ),
        (
            format!("{MINIMAL}service_profiles:\n  - id: a\n  - id: a\n"),
            vec![],
            "service_profiles[1].id",
            "duplicate profile id \"a\"",
        ),
        (
            format!("{MINIMAL}service_profiles:\n  - id: \"\"\n"),
            vec![],
            "service_profiles[0].id",
            "empty",
        ),
        (
            format!("{MINIMAL}{profiles_ab}default_service_profile_id: c\n"),
            vec![],
            "default_service_profile_id",
            "\"c\" names no profile (profiles: a, b)",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    slash_commands: [/x]\n  - id: b\n    slash_commands: [/y, /x]\n"
            ),
            vec![],
            "service_profiles[1].slash_commands[1]",
            "already used by profile \"a\"",
        ),
        (
            format!("{MINIMAL}service_profiles:\n  - id: a\n    slash_commands: [focus]\n"),
            vec![],
            "service_profiles[0].slash_commands[0]",
            "not a slash command",
        ),
        (
            format!("{MINIMAL}service_profiles:\n  - id: a\n    slash_commands: [\"/two words\"]\n"),
            vec![],
            "service_profiles[0].slash_commands[0]",
            "whitespace",
        ),
        (
            format!(
                "{MINIMAL}{profiles_ab}  - id: c\n    processing_config: {{ llm_model: gpt-5 }}\n"
            ),
            vec![],
            "service_profiles[2].processing_config.llm_model",
            "\"gpt-5\" names no entry of llms (defined: main)",
        ),
        (
            format!(
                "{MINIMAL}default_profile_settings:\n  processing_config: {{ llm_fallback_model: backup }}\n"
            ),
            vec![],
            "default_profile_settings.processing_config.llm_fallback_model",
            "\"backup\" names no entry of llms",
        ),
        (
            "http: { auth_enabled: false }\nllms:\n  other: { provider: openai, base_url: \"http://x/v1\", model: m }\n".to_owned(),
            vec![],
            "default_profile_settings.processing_config.llm_model",
            "\"main\", which names no entry of llms (defined: other)",
        ),
        (
            "http: { auth_enabled: false }\nllms:\n  main: { provider: openai, base_url: \"https://x/v1\", model: m, api_key_env: MAIN_KEY }\n".to_owned(),
            vec![("MAIN_KEY", "")],
            "llms.main.api_key_env",
            "environment variable MAIN_KEY is unset or empty",
        ),
        (
            "http: { auth_enabled: false }\nllms:\n  main: { provider: openai, base_url: \"https://x/v1\", model: m, api_key_env: \"sk-secret-value\" }\n".to_owned(),
            vec![],
            "llms.main.api_key_env",
            "does not look like an environment variable name",
        ),
        (
            "llms:\n  main: { provider: openai, base_url: \"http://x/v1\", model: m }\n".to_owned(),
            vec![],
            "http.auth_api_key_env",
            "no variable is named",
        ),
        (
            "http: { auth_api_key_env: API_KEY }\nllms:\n  main: { provider: openai, base_url: \"http://x/v1\", model: m }\n".to_owned(),
            vec![],
            "http.auth_api_key_env",
            "environment variable API_KEY is unset or empty",
        ),
        (
            format!("{MINIMAL}channels:\n  telegram: {{ enabled: true, token_env: BOT_TOKEN }}\n"),
            vec![],
            "channels.telegram.token_env",
            "BOT_TOKEN",
        ),
        (
            format!("{MINIMAL}channels:\n  telegram: {{ enabled: true }}\n"),
            vec![],
            "channels.telegram.token_env",
            "no variable is named",
        ),
        (
            format!(
                "{MINIMAL}channels:\n  matrix: {{ enabled: true, homeserver_url: \"https://m.org\", user_id: \"@b:m.org\" }}\n"
            ),
            vec![],
            "channels.matrix",
            "neither password_env nor access_token_env",
        ),
        (
            format!(
                "{MINIMAL}channels:\n  matrix: {{ enabled: true, homeserver_url: \"https://m.org\", user_id: \"@b:m.org\", password_env: MATRIX_PASSWORD }}\n"
            ),
            vec![],
            "channels.matrix.password_env",
            "MATRIX_PASSWORD",
        ),
        (
            format!(
                "{MINIMAL}channels:\n  matrix: {{ enabled: true, homeserver_url: \"https://m.org\", user_id: \"@b:m.org\", access_token_env: TOKEN, store_passphrase_env: PASSPHRASE }}\n"
            ),
            vec![("TOKEN", "t")],
            "channels.matrix.store_passphrase_env",
            "PASSPHRASE",
        ),
        (
            format!(
                "{MINIMAL}default_profile_settings:\n  tools_config: {{ enable_local_tools: [profile_get, web_browse] }}\n"
            ),
            vec![],
            "default_profile_settings.tools_config.enable_local_tools[1]",
            "unknown local tool \"web_browse\"",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    tools_config: {{ confirm_tools: [time__now, plugin.buy, send_money] }}\n"
            ),
            vec![],
            "service_profiles[0].tools_config.confirm_tools[2]",
            "unknown local tool \"send_money\"",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    tools_config: {{ confirm_tools: [time__now] }}\n"
            ),
            vec![],
            "service_profiles[0].tools_config.confirm_tools[0]",
            "names MCP server \"time\", which is no entry of mcp_servers (defined: none)",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    tools_config: {{ confirm_tools: [\"plugin.a.b\"] }}\n"
            ),
            vec![],
            "service_profiles[0].tools_config.confirm_tools[0]",
            "is not a plugin capability: write <plugin>.<capability> or <plugin>.*",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    tools_config: {{ enable_mcp_server_ids: [time] }}\n"
            ),
            vec![],
            "service_profiles[0].tools_config.enable_mcp_server_ids[0]",
            "\"time\" names no entry of mcp_servers",
        ),
        (
            format!("{MINIMAL}family:\n  - id: alice\n  - id: bob\n  - id: alice\n"),
            vec![],
            "family[2].id",
            "duplicate family member id \"alice\" (also family[0])",
        ),
        (
            format!("{MINIMAL}family:\n  - id: \"\"\n"),
            vec![],
            "family[0].id",
            "empty",
        ),
        (
            format!(
                "{MINIMAL}family:\n  - {{ id: alice, telegram_user_id: 5 }}\n  - {{ id: bob, telegram_user_id: 5 }}\n"
            ),
            vec![],
            "family[1].telegram_user_id",
            "already family[0]",
        ),
        (
            format!("{MINIMAL}queue: {{ max_parallel_conversations: 0 }}\n"),
            vec![],
            "queue.max_parallel_conversations",
            "at least 1",
        ),
        (
            format!("{MINIMAL}queue: {{ max_backlog: 0 }}\n"),
            vec![],
            "queue.max_backlog",
            "at least 1",
        ),
        (
            format!("{MINIMAL}llm_max_concurrent_local: 0\n"),
            vec![],
            "llm_max_concurrent_local",
            "at least 1",
        ),
        (
            format!("{MINIMAL}llm_max_concurrent_cloud: 0\n"),
            vec![],
            "llm_max_concurrent_cloud",
            "at least 1",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    processing_config: {{ max_tool_iterations: 0 }}\n"
            ),
            vec![],
            "service_profiles[0].processing_config.max_tool_iterations",
            "at least 1",
        ),
        (
            format!(
                "{MINIMAL}service_profiles:\n  - id: a\n    processing_config: {{ timezone: Mars/Olympus_Mons }}\n"
            ),
            vec![],
            "service_profiles[0].processing_config.timezone",
            "unknown timezone \"Mars/Olympus_Mons\"",
        ),
        (
            format!("{MINIMAL}mcp_servers:\n  time: {{ args: [x] }}\n"),
            vec![],
            "mcp_servers.time",
            "either command",
        ),
    ];
    for (text, env, key_path, fragment) in cases {
        let (message, file) = load_error(&text, &env);
        assert_problem(&message, &file, key_path, fragment);
    }
}

#[test]
fn secrets_are_required_only_where_they_are_used() {
    // `unused` is named by no profile; telegram and matrix are off; http auth is off.
    let text = r#"
http: { auth_enabled: false, auth_api_key_env: API_KEY }
llms:
  main: { provider: openai, base_url: "http://127.0.0.1:8081/v1", model: m }
  unused: { provider: anthropic, base_url: "https://api.anthropic.com", model: c, api_key_env: UNUSED_KEY }
channels:
  telegram: { enabled: false, token_env: BOT_TOKEN }
  matrix: { enabled: false, password_env: MATRIX_PASSWORD }
"#;
    let loaded = load_text(text, &[]);
    assert!(loaded.secrets.is_empty(), "{:?}", loaded.secrets.keys());

    // Matrix with two ways to log in needs only one of them.
    let matrix = format!(
        "{MINIMAL}channels:\n  matrix: {{ enabled: true, homeserver_url: \"https://m.org\", user_id: \"@b:m.org\", password_env: MATRIX_PASSWORD, access_token_env: MATRIX_TOKEN, store_passphrase_env: MATRIX_STORE }}\n"
    );
    let loaded = load_text(
        &matrix,
        &[("MATRIX_TOKEN", "token"), ("MATRIX_STORE", "pass")],
    );
    assert_eq!(loaded.secret("MATRIX_TOKEN"), Some("token"));
    assert_eq!(loaded.secret("MATRIX_PASSWORD"), None);
    // Its key store is always encrypted: the passphrase's variable is required.
    let unprotected = matrix.replace(", store_passphrase_env: MATRIX_STORE", "");
    let (message, _) = load_error(&unprotected, &[("MATRIX_TOKEN", "token")]);
    assert!(
        message.contains("channels.matrix.store_passphrase_env"),
        "{message}"
    );

    // A fallback model's key is needed too.
    let fallback = r#"
http: { auth_enabled: false }
llms:
  main: { provider: openai, base_url: "http://127.0.0.1:8081/v1", model: m }
  backup: { provider: anthropic, base_url: "https://api.anthropic.com", model: c, api_key_env: BACKUP_KEY }
default_profile_settings:
  processing_config: { llm_fallback_model: backup }
"#;
    let (message, file) = load_error(fallback, &[]);
    assert_problem(&message, &file, "llms.backup.api_key_env", "BACKUP_KEY");
    assert_eq!(
        load_text(fallback, &[("BACKUP_KEY", "b")]).secret("BACKUP_KEY"),
        Some("b")
    );
}

#[test]
fn every_problem_is_reported_together_one_per_line() {
    let text = r#"
llms:
  main: { provider: openai, base_url: "https://api.openai.com/v1", model: m, api_key_env: OPENAI_API_KEY }
queue: { max_backlog: 0 }
family:
  - id: alice
  - id: alice
default_profile_settings:
  processing_config: { timezone: Nowhere/City }
  tools_config: { enable_local_tools: [teleport] }
service_profiles:
  - id: a
    slash_commands: [/go]
  - id: b
    slash_commands: [/go]
    processing_config: { llm_model: missing }
default_service_profile_id: z
"#;
    let (message, file) = load_error(text, &[]);
    let expected = [
        "queue.max_backlog",
        "family[1].id",
        "default_profile_settings.processing_config.timezone",
        "default_profile_settings.tools_config.enable_local_tools[0]",
        "service_profiles[1].slash_commands[0]",
        "service_profiles[1].processing_config.llm_model",
        "default_service_profile_id",
        "llms.main.api_key_env",
        "http.auth_api_key_env",
    ];
    for key_path in expected {
        assert_problem(&message, &file, key_path, "");
    }
    assert_eq!(message.lines().count(), expected.len(), "{message}");
    assert!(
        message
            .lines()
            .all(|line| line.starts_with(&format!("{file}: "))),
        "{message}"
    );
}

#[test]
fn an_intents_profile_needs_an_intents_file_name() {
    let (message, file) = load_error(
        &format!(
            "{MINIMAL}service_profiles:\n  - id: planner\n    processing_config: {{ engine: intents, intents_file: \"\" }}\n"
        ),
        &[],
    );
    assert_problem(
        &message,
        &file,
        "service_profiles[0].processing_config.intents_file",
        "must name a file, found an empty string",
    );
}

#[test]
fn an_mcp_server_id_that_tool_names_cannot_give_back_is_refused() {
    let long_id = "x".repeat(53);
    let text = format!(
        "{MINIMAL}mcp_servers:\n  home__assistant: {{ command: a }}\n  home.assistant: {{ command: b }}\n  trailing_: {{ command: c }}\n  {long_id}: {{ command: d }}\n  home_assistant: {{ command: e }}\n"
    );
    let (message, file) = load_error(&text, &[]);
    let allowed = "a server id is ascii letters, digits, - and _, without __, not ending in _, at most 52 characters";
    for (id, reason) in [
        ("home__assistant", "it contains __"),
        ("home.assistant", "'.' is not allowed in a tool name"),
        ("trailing_", "trailing _"),
        (long_id.as_str(), "it is 53 characters long"),
    ] {
        let key_path = format!("mcp_servers.{id}");
        assert_problem(&message, &file, &key_path, &format!("server id {id:?}"));
        assert_problem(&message, &file, &key_path, reason);
        assert_problem(&message, &file, &key_path, allowed);
    }
    // Every bad id at once; the good one is not among them.
    assert_eq!(message.lines().count(), 4, "{message}");
    assert!(!message.contains("\"home_assistant\""), "{message}");
}

/// A stdio and a streamable HTTP server whose secrets come from the environment, beside
/// settings written in the file.
const MCP_SECRETS: &str = r#"
mcp_servers:
  files:
    command: mcp-files
    env: { LOG_LEVEL: debug }
    env_from_env: { FILES_TOKEN: HEARTH_FILES_TOKEN }
  calendar:
    url: "https://calendar.example.org/mcp"
    headers: { X-Family: smith }
    headers_env: { Authorization: HEARTH_CALENDAR_AUTH }
"#;

#[test]
fn mcp_secrets_are_read_from_the_variables_env_from_env_and_headers_env_name() {
    let loaded = load_text(
        &format!("{MINIMAL}{MCP_SECRETS}"),
        &[
            ("HEARTH_FILES_TOKEN", "files-s3cret"),
            ("HEARTH_CALENDAR_AUTH", "Bearer calendar-s3cret"),
        ],
    );
    let files = &loaded.config.mcp_servers["files"];
    assert_eq!(files.env["LOG_LEVEL"], "debug");
    assert_eq!(files.env_from_env["FILES_TOKEN"], "HEARTH_FILES_TOKEN");
    assert_eq!(files.resolved_env["FILES_TOKEN"].expose(), "files-s3cret");
    let calendar = &loaded.config.mcp_servers["calendar"];
    assert_eq!(calendar.headers["X-Family"], "smith");
    assert_eq!(
        calendar.resolved_headers["Authorization"].expose(),
        "Bearer calendar-s3cret"
    );
    assert!(calendar.resolved_env.is_empty() && files.resolved_headers.is_empty());
    assert_eq!(loaded.secret("HEARTH_FILES_TOKEN"), Some("files-s3cret"));

    // The values never show in what is logged: the configuration's Debug, or check-config.
    let shown = format!(
        "{loaded:?}\n{:#?}\n{}",
        loaded.config.mcp_servers,
        render_resolved_profiles(&loaded)
    );
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("HEARTH_CALENDAR_AUTH"), "{shown}");
}

#[test]
fn a_missing_or_misplaced_mcp_secret_names_the_key_path_and_the_variable() {
    let (message, file) = load_error(
        &format!("{MINIMAL}{MCP_SECRETS}"),
        &[("HEARTH_FILES_TOKEN", "")],
    );
    assert_problem(
        &message,
        &file,
        "mcp_servers.files.env_from_env.FILES_TOKEN",
        "environment variable HEARTH_FILES_TOKEN is unset or empty",
    );
    assert_problem(
        &message,
        &file,
        "mcp_servers.calendar.headers_env.Authorization",
        "environment variable HEARTH_CALENDAR_AUTH is unset or empty",
    );
    assert_eq!(message.lines().count(), 2, "{message}");

    let misplaced = r#"
mcp_servers:
  web:
    url: "http://127.0.0.1:9/mcp"
    env_from_env:
      TOKEN: WEB_TOKEN
    headers:
      authorization: x
    headers_env:
      Authorization: WEB_AUTH
      "bad header": WEB_AUTH
  local:
    command: server
    env:
      TOKEN: literal
    env_from_env:
      TOKEN: LOCAL_TOKEN
      "A=B": LOCAL_TOKEN
    headers_env:
      Authorization: "Bearer abc"
"#;
    // The header's value holds a line break, which no HTTP header can carry.
    let env = [
        ("WEB_TOKEN", "t"),
        ("WEB_AUTH", "Bearer a\nInjected: yes"),
        ("LOCAL_TOKEN", "t"),
    ];
    let (message, file) = load_error(&format!("{MINIMAL}{misplaced}"), &env);
    for (key_path, fragment) in [
        (
            "mcp_servers.web.env_from_env",
            "only a stdio server (command) has an environment",
        ),
        (
            "mcp_servers.web.headers_env.Authorization",
            "header Authorization is also set in headers",
        ),
        (
            "mcp_servers.web.headers_env.Authorization",
            "environment variable WEB_AUTH cannot be sent as an http header",
        ),
        (
            "mcp_servers.web.headers_env.bad header",
            "\"bad header\" is not a valid http header name",
        ),
        (
            "mcp_servers.local.env_from_env.TOKEN",
            "variable TOKEN is also set in env",
        ),
        (
            "mcp_servers.local.env_from_env.A=B",
            "\"A=B\" cannot be an environment variable name",
        ),
        (
            "mcp_servers.local.headers_env",
            "only a streamable http server (url) is sent headers",
        ),
        (
            "mcp_servers.local.headers_env.Authorization",
            "does not look like an environment variable name",
        ),
    ] {
        assert_problem(&message, &file, key_path, fragment);
    }
    assert!(!message.contains("Injected"), "{message}");
    assert!(!message.contains("Bearer abc"), "{message}");
}
