//! Secrets come from the environment only where they are used: the variables a config names,
//! and MCP servers' `env_from_env` and `headers_env`, a missing or misplaced one named by key
//! path and variable.

use hearth::config::*;

use super::{MINIMAL, assert_problem, load_error, load_text};

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

/// A stdio and a streamable HTTP server whose secrets come from the beside
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
