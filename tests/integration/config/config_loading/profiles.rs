//! Seed 004's profile merging: its example merges as written, a profile drops confirmations
//! only by saying so, levels and built-in defaults, `recall` inherited and overridden, the
//! implicit default profile and which profile is the default.

use hearth::config::*;

use super::{MINIMAL, assert_problem, load_error, load_text};

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
fn recall_is_tool_unless_a_layer_says_otherwise_and_names_a_wrong_value() {
    let text = format!(
        "{MINIMAL}default_profile_settings:\n  processing_config: {{ recall: auto }}\nservice_profiles:\n  - id: first\n  - id: second\n    processing_config: {{ recall: off }}\n"
    );
    let loaded = load_text(&text, &[]);
    assert_eq!(loaded.profiles[0].processing.recall, Recall::Auto);
    assert_eq!(loaded.profiles[1].processing.recall, Recall::Off);
    assert_eq!(
        load_text(MINIMAL, &[]).profiles[0].processing.recall,
        Recall::Tool
    );
    let (message, file) = load_error(
        &format!(
            "{MINIMAL}service_profiles:\n  - id: first\n    processing_config: {{ recall: always }}\n"
        ),
        &[],
    );
    assert_problem(
        &message,
        &file,
        "service_profiles[0].processing_config.recall",
        "always",
    );
}

#[test]
fn built_in_defaults_apply_to_an_almost_empty_file() {
    let loaded = load_text(MINIMAL, &[]);
    let config = &loaded.config;
    assert_eq!(config.database_url, "sqlite://data/hearth.db");
    assert_eq!(config.database_max_connections, None);
    assert_eq!(config.database_connections(), 2);
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
