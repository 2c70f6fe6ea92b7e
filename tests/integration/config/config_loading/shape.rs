//! The file's shape and the environment over it: `HEARTH__*` overrides win over the file and a
//! bad one names its variable; unknown keys, wrong types and missing keys named at their own
//! path, several at once; a missing file and broken YAML named.

use std::collections::BTreeMap;

use hearth::config::*;

use super::{MINIMAL, assert_problem, load_error, load_from, load_text};

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
                // Written as people write lists: the spaces are not part of the names.
                "profile_get, profile_update ",
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
