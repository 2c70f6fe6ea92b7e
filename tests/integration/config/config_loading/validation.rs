//! Validation: every error names the file and the key path and says what is wrong, all of
//! them reported together, one per line; databases hearth cannot use, an intents profile
//! without its file and an MCP server id tool names cannot give back are refused.

use super::{MINIMAL, assert_problem, load_error, load_text};

/// One validation rule: file text, key path, fragment of the message.
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
            format!("{MINIMAL}service_profiles:\n  - id: home/kids\n"),
            vec![],
            "service_profiles[0].id",
            "\"home/kids\" cannot name a delegated conversation",
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
fn a_postgresql_database_is_accepted() {
    for url in [
        "postgres://hearth:hunter2@db:5432/hearth",
        "postgresql://hearth:hunter2@db/hearth",
    ] {
        let loaded = load_text(MINIMAL, &[("HEARTH__DATABASE_URL", url)]);
        assert_eq!(loaded.config.database_url, url);
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
