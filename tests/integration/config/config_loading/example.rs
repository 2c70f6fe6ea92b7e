//! The shipped example configuration loads with its two secrets, names both when they are
//! missing, and prints its resolved profiles without a secret; a database password never shows.

use std::collections::BTreeMap;

use hearth::config::*;

use super::{EXAMPLE_SECRETS, assert_problem, environment, example_path, load_from};

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
        loaded
            .family_member(&"bob".parse().unwrap())
            .map(|bob| bob.role),
        Some(FamilyRole::Child)
    );
    assert_eq!(
        loaded
            .family_member(&"alice".parse().unwrap())
            .map(|alice| alice.role),
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
            .family_member(&"bob".parse().unwrap())
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
        [
            "profile_get",
            "profile_update",
            "route_to_plugin",
            "schedule_reminder",
            "list_reminders",
            "cancel_reminder",
            "snooze_reminder",
            "schedule_task",
            "add_or_update_note",
            "get_note",
            "search_notes",
            "list_notes",
            "delete_note",
            "search_calendar_events",
            "add_calendar_event",
            "modify_calendar_event",
            "delete_calendar_event",
            "search_memory"
        ]
    );
    assert!(!default.processing.include_notes_in_prompt);
    assert_eq!(default.processing.recall, Recall::Tool);
    // Narrowing the tools kept the default confirmations.
    assert_eq!(focused.tools.confirm_tools, default.tools.confirm_tools);
    // A calendar is written only after the member approves the exact change.
    for asking in [
        "add_calendar_event",
        "modify_calendar_event",
        "delete_calendar_event",
    ] {
        assert!(
            default
                .tools
                .confirm_tools
                .iter()
                .any(|tool| tool == asking),
            "{asking}"
        );
    }
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
