//! The start-up checks of everything outside the profiles (bounds, URLs, family identities,
//! channels, MCP servers) and the collection of secrets from the environment.
//!
//! A secret is looked up only where it is needed: the key of an LLM that some profile uses,
//! the HTTP API key when the API is on and authenticated, the tokens of enabled channels, the
//! `env_from_env` and `headers_env` variables of every MCP server (all of them are started).
//! An unused LLM or a disabled channel may name a variable that is not set on this host.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::header::{HeaderName, HeaderValue};

use super::error::Problems;
use super::mcp_names::check_server_id;
use super::profiles::ResolvedProfile;
use super::secret::Secret;
use super::types::{HearthConfig, McpServerConfig, TelegramMode};

/// Checks the settings outside the profiles.
pub(crate) fn check_settings(config: &HearthConfig, problems: &mut Problems) {
    check_database(config, problems);
    check_bounds(config, problems);
    check_http(config, problems);
    check_llms(config, problems);
    check_family(config, problems);
    check_channels(config, problems);
    check_mcp_servers(config, problems);
    super::built_parts::check_built_parts(config, problems);
    if config.plugins_dir.trim().is_empty() {
        problems.push("plugins_dir", "must not be empty");
    }
    if config.scripts_dir.trim().is_empty() {
        problems.push("scripts_dir", "must not be empty");
    }
}

fn check_database(config: &HearthConfig, problems: &mut Problems) {
    // Only the scheme or the url without its password is ever quoted: a PostgreSQL URL
    // may carry one.
    let url = &config.database_url;
    if url.starts_with("sqlite:") && (url.contains(":memory:") || url.contains("mode=memory")) {
        problems.push(
            "database_url",
            "an in-memory SQLite database loses every message at exit; name a file, \
             e.g. \"sqlite://data/hearth.db\"",
        );
        return;
    }
    let scheme = config
        .database_url
        .split_once(':')
        .map(|(scheme, _)| scheme);
    match scheme {
        Some("sqlite") => {}
        // Start-up refuses it (the storage adapter is SQLite only), so check-config does too.
        Some("postgres" | "postgresql") => problems.push(
            "database_url",
            format!(
                "{} names PostgreSQL, which is not supported yet; use a sqlite:// url, \
                 e.g. \"sqlite://data/hearth.db\"",
                crate::redaction::redact_url_password(url)
            ),
        ),
        _ => problems.push(
            "database_url",
            format!(
                "unsupported database url (scheme {:?}; expected \"sqlite://...\")",
                scheme.unwrap_or("")
            ),
        ),
    }
}

fn at_least_one(problems: &mut Problems, key_path: &str, value: u64) {
    if value == 0 {
        problems.push(key_path, "must be at least 1, found 0");
    }
}

fn check_bounds(config: &HearthConfig, problems: &mut Problems) {
    at_least_one(
        problems,
        "database_max_connections",
        config.database_max_connections.into(),
    );
    at_least_one(
        problems,
        "llm_max_concurrent_local",
        widen_usize(config.llm_max_concurrent_local),
    );
    at_least_one(
        problems,
        "llm_max_concurrent_cloud",
        widen_usize(config.llm_max_concurrent_cloud),
    );
    let queue = &config.queue;
    at_least_one(
        problems,
        "queue.max_parallel_conversations",
        widen_usize(queue.max_parallel_conversations),
    );
    at_least_one(
        problems,
        "queue.max_backlog",
        widen_usize(queue.max_backlog),
    );
    at_least_one(problems, "queue.max_attempts", queue.max_attempts.into());
    at_least_one(
        problems,
        "delivery.max_age_hours",
        config.delivery.max_age_hours,
    );
    let retention = &config.retention;
    for (key, value) in [
        ("history_days", retention.history_days),
        ("telemetry_days", retention.telemetry_days),
        ("attachments_days", retention.attachments_days),
        ("answered_inbox_days", retention.answered_inbox_days),
        ("delivered_outbox_days", retention.delivered_outbox_days),
        ("interval_seconds", retention.interval_seconds),
    ] {
        at_least_one(problems, &format!("retention.{key}"), value);
    }
    let scripts = &config.scripts;
    for (key, value) in [
        ("state_ttl_hours", scripts.state_ttl_hours),
        ("default_timeout_seconds", scripts.default_timeout_seconds),
        ("max_output_bytes", scripts.max_output_bytes),
    ] {
        at_least_one(problems, &format!("scripts.{key}"), value);
    }
    let retry = &config.llm_retry;
    at_least_one(
        problems,
        "llm_retry.max_attempts",
        retry.max_attempts.into(),
    );
    if retry.initial_backoff_ms > retry.max_backoff_ms {
        problems.push(
            "llm_retry.initial_backoff_ms",
            format!(
                "{} is more than llm_retry.max_backoff_ms ({})",
                retry.initial_backoff_ms, retry.max_backoff_ms
            ),
        );
    }
}

fn check_http(config: &HearthConfig, problems: &mut Problems) {
    let http = &config.http;
    if !http.enabled {
        return;
    }
    let port = http
        .bind
        .rsplit_once(':')
        .map(|(_, port)| port.parse::<u16>());
    if !matches!(port, Some(Ok(_))) {
        problems.push(
            "http.bind",
            format!(
                "{:?} is not an address and port (expected e.g. \"127.0.0.1:8080\")",
                http.bind
            ),
        );
    }
    at_least_one(
        problems,
        "http.max_body_bytes",
        widen_usize(http.max_body_bytes),
    );
    at_least_one(
        problems,
        "http.reply_timeout_seconds",
        http.reply_timeout_seconds,
    );
    if http.auth_enabled && http.auth_api_key_env.is_none() {
        problems.push(
            "http.auth_api_key_env",
            "http.auth_enabled is true but no variable is named for the API key (set auth_api_key_env, or auth_enabled: false)",
        );
    }
}

fn widen_usize(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

fn is_http_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

fn check_llms(config: &HearthConfig, problems: &mut Problems) {
    for (name, llm) in &config.llms {
        let path = format!("llms.{name}");
        if !is_http_url(&llm.base_url) {
            problems.push(
                format!("{path}.base_url"),
                format!("{:?} is not an http(s) url", llm.base_url),
            );
        }
        if llm.model.trim().is_empty() {
            problems.push(format!("{path}.model"), "must not be empty");
        }
        at_least_one(
            problems,
            &format!("{path}.timeout_seconds"),
            llm.timeout_seconds,
        );
        if llm.max_tokens == Some(0) {
            problems.push(format!("{path}.max_tokens"), "must be at least 1, found 0");
        }
        for (key, cost) in [
            (
                "cost_per_million_input_tokens",
                llm.cost_per_million_input_tokens,
            ),
            (
                "cost_per_million_output_tokens",
                llm.cost_per_million_output_tokens,
            ),
        ] {
            if !cost.is_finite() || cost < 0.0 {
                problems.push(
                    format!("{path}.{key}"),
                    format!("must be a number of at least 0, found {cost}"),
                );
            }
        }
    }
}

/// One person, one identity: a chat account mapped to two members would make "who asked"
/// ambiguous, and every confirmation is bound to who asked.
fn check_family(config: &HearthConfig, problems: &mut Problems) {
    let mut seen_ids = BTreeMap::new();
    let mut seen_telegram_ids = BTreeMap::new();
    let mut seen_matrix_ids = BTreeMap::new();
    for (index, member) in config.family.iter().enumerate() {
        let path = format!("family[{index}]");
        if member.id.trim().is_empty() {
            problems.push(format!("{path}.id"), "a family member id must not be empty");
        } else if let Some(first) = seen_ids.insert(member.id.as_str(), index) {
            problems.push(
                format!("{path}.id"),
                format!(
                    "duplicate family member id {:?} (also family[{first}])",
                    member.id
                ),
            );
            seen_ids.insert(member.id.as_str(), first);
        }
        if let Some(telegram_id) = member.telegram_user_id
            && let Some(first) = seen_telegram_ids.insert(telegram_id, index)
        {
            problems.push(
                format!("{path}.telegram_user_id"),
                format!("telegram user {telegram_id} is already family[{first}]"),
            );
            seen_telegram_ids.insert(telegram_id, first);
        }
        if let Some(matrix_id) = &member.matrix_user_id {
            if !(matrix_id.starts_with('@') && matrix_id.contains(':')) {
                problems.push(
                    format!("{path}.matrix_user_id"),
                    format!("{matrix_id:?} is not a matrix user id (expected \"@name:server\")"),
                );
            } else if let Some(first) = seen_matrix_ids.insert(matrix_id.as_str(), index) {
                problems.push(
                    format!("{path}.matrix_user_id"),
                    format!("matrix user {matrix_id:?} is already family[{first}]"),
                );
                seen_matrix_ids.insert(matrix_id.as_str(), first);
            }
        }
    }
}

fn check_channels(config: &HearthConfig, problems: &mut Problems) {
    let telegram = &config.channels.telegram;
    if telegram.enabled {
        if telegram.token_env.is_none() {
            problems.push(
                "channels.telegram.token_env",
                "telegram is enabled but no variable is named for the bot token",
            );
        }
        if !is_http_url(&telegram.api_url) {
            problems.push(
                "channels.telegram.api_url",
                format!("{:?} is not an http(s) url", telegram.api_url),
            );
        }
        if !(1..=50).contains(&telegram.poll_timeout_seconds) {
            problems.push(
                "channels.telegram.poll_timeout_seconds",
                format!(
                    "{} is out of range: the Bot API allows 1 to 50 seconds",
                    telegram.poll_timeout_seconds
                ),
            );
        }
        if telegram.attachments_dir.trim().is_empty() {
            problems.push("channels.telegram.attachments_dir", "must not be empty");
        }
        if telegram.mode == TelegramMode::Webhook {
            match &telegram.webhook_url {
                None => problems.push(
                    "channels.telegram.webhook_url",
                    "webhook mode needs the public https url Telegram posts updates to",
                ),
                Some(url) if !is_http_url(url) => problems.push(
                    "channels.telegram.webhook_url",
                    format!("{url:?} is not an http(s) url"),
                ),
                Some(_) => {}
            }
            if telegram.webhook_secret_env.is_none() {
                problems.push(
                    "channels.telegram.webhook_secret_env",
                    "webhook mode needs a variable holding the secret token Telegram sends back",
                );
            }
            if !config.http.enabled {
                problems.push(
                    "channels.telegram.mode",
                    "webhook mode needs the HTTP API (http.enabled: true) to receive updates",
                );
            }
        }
    }
    let matrix = &config.channels.matrix;
    if matrix.enabled {
        match &matrix.homeserver_url {
            None => problems.push(
                "channels.matrix.homeserver_url",
                "matrix is enabled but no homeserver url is set",
            ),
            Some(url) if !is_http_url(url) => problems.push(
                "channels.matrix.homeserver_url",
                format!("{url:?} is not an http(s) url"),
            ),
            Some(_) => {}
        }
        if matrix.user_id.is_none() {
            problems.push(
                "channels.matrix.user_id",
                "matrix is enabled but the bot's user id is not set",
            );
        }
        if matrix.password_env.is_none() && matrix.access_token_env.is_none() {
            problems.push(
                "channels.matrix",
                "matrix is enabled but neither password_env nor access_token_env is set",
            );
        }
        if matrix.store_passphrase_env.is_none() {
            problems.push(
                "channels.matrix.store_passphrase_env",
                "matrix is enabled but no variable is named for the passphrase that encrypts \
                 its key store",
            );
        }
        if matrix.attachments_dir.trim().is_empty() {
            problems.push("channels.matrix.attachments_dir", "must not be empty");
        }
        if matrix.store_path.trim().is_empty() {
            problems.push("channels.matrix.store_path", "must not be empty");
        }
    }
}

fn check_mcp_servers(config: &HearthConfig, problems: &mut Problems) {
    for (server_id, server) in &config.mcp_servers {
        let path = format!("mcp_servers.{server_id}");
        // A tool call reaches its server only through the server id in the tool's name: a
        // server whose id cannot be read back from there would have tools nobody can call.
        if let Err(error) = check_server_id(server_id) {
            problems.push(path.clone(), error.to_string());
        }
        check_mcp_env_and_headers(&path, server, problems);
        for (key, seconds) in [
            ("init_timeout_seconds", server.init_timeout_seconds),
            ("call_timeout_seconds", server.call_timeout_seconds),
        ] {
            if let Some(seconds) = seconds {
                at_least_one(problems, &format!("{path}.{key}"), seconds);
            }
        }
        match (&server.command, &server.url) {
            (None, None) => problems.push(
                path,
                "needs either command (a stdio server) or url (a streamable http server)",
            ),
            (Some(_), Some(_)) => problems.push(
                path,
                "has both command and url; a server is either started (command) or reached (url)",
            ),
            (None, Some(url)) if !is_http_url(url) => problems.push(
                format!("{path}.url"),
                format!("{url:?} is not an http(s) url"),
            ),
            _ => {}
        }
    }
}

/// `env` and `env_from_env` are only used by a started server, `headers` and `headers_env` only
/// by a reached one: on the other kind they would silently do nothing.
fn check_mcp_env_and_headers(path: &str, server: &McpServerConfig, problems: &mut Problems) {
    let stdio_keys = [
        ("env", server.env.len()),
        ("env_from_env", server.env_from_env.len()),
    ];
    let http_keys = [
        ("headers", server.headers.len()),
        ("headers_env", server.headers_env.len()),
    ];
    let unused = match (&server.command, &server.url) {
        (None, Some(_)) => Some((
            stdio_keys,
            "only a stdio server (command) has an environment; this one is reached at its url",
        )),
        (Some(_), None) => Some((
            http_keys,
            "only a streamable http server (url) is sent headers; this one is started by its command",
        )),
        // Neither or both: reported as such by the caller.
        _ => None,
    };
    if let Some((keys, why)) = unused {
        for (key, entries) in keys {
            if entries > 0 {
                problems.push(format!("{path}.{key}"), why);
            }
        }
    }
    for name in server.env_from_env.keys() {
        let key_path = format!("{path}.env_from_env.{name}");
        if name.is_empty() || name.contains(['=', '\0']) {
            problems.push(
                key_path,
                format!("{name:?} cannot be an environment variable name (it is empty or holds = or a nul)"),
            );
        } else if server.env.contains_key(name) {
            problems.push(
                key_path,
                format!("variable {name} is also set in env; set it in one place"),
            );
        }
    }
    for (key, headers) in [
        ("headers", &server.headers),
        ("headers_env", &server.headers_env),
    ] {
        for name in headers.keys() {
            if HeaderName::from_bytes(name.as_bytes()).is_err() {
                problems.push(
                    format!("{path}.{key}.{name}"),
                    format!("{name:?} is not a valid http header name"),
                );
            }
        }
    }
    for name in server.headers_env.keys() {
        // Header names are case-insensitive: `Authorization` and `authorization` are one.
        if server
            .headers
            .keys()
            .any(|literal| literal.eq_ignore_ascii_case(name))
        {
            problems.push(
                format!("{path}.headers_env.{name}"),
                format!("header {name} is also set in headers; set it in one place"),
            );
        }
    }
}

/// Reads every secret the configuration needs from `env`, by the variable names its `*_env`
/// keys give, and reports each one that is missing.
pub(crate) fn collect_secrets(
    config: &HearthConfig,
    profiles: &[ResolvedProfile],
    env: &BTreeMap<String, String>,
    problems: &mut Problems,
) -> BTreeMap<String, String> {
    let mut secrets = SecretLookup {
        env,
        found: BTreeMap::new(),
    };

    let used_llms: BTreeSet<&str> = profiles
        .iter()
        .flat_map(|profile| {
            std::iter::once(profile.processing.llm_model.as_str())
                .chain(profile.processing.llm_fallback_model.as_deref())
        })
        .collect();
    for name in used_llms {
        if let Some(variable) = config
            .llms
            .get(name)
            .and_then(|llm| llm.api_key_env.as_deref())
        {
            secrets.require(&format!("llms.{name}.api_key_env"), variable, problems);
        }
    }

    let http = &config.http;
    if http.enabled && http.auth_enabled {
        let scopes = [
            ("http.auth_api_key_env", &http.auth_api_key_env),
            ("http.plugin_api_key_env", &http.plugin_api_key_env),
            ("http.admin_api_key_env", &http.admin_api_key_env),
        ];
        let mut seen: Vec<(&str, String)> = Vec::new();
        for (key_path, variable) in scopes {
            let Some(variable) = variable else { continue };
            secrets.require(key_path, variable, problems);
            // Each scope has its own key: one key opening two scopes would open both.
            let Some(value) = secrets.value(variable).map(str::to_owned) else {
                continue;
            };
            if let Some((other, _)) = seen.iter().find(|(_, seen)| *seen == value) {
                problems.push(
                    key_path,
                    format!("holds the same key as {other}; each scope needs its own key"),
                );
            }
            seen.push((key_path, value));
        }
    }
    if http.metrics_auth && !(http.auth_enabled && http.admin_api_key_env.is_some()) {
        problems.push(
            "http.metrics_auth",
            "metrics_auth needs the admin key: set http.admin_api_key_env (and auth_enabled)",
        );
    }

    let telegram = &config.channels.telegram;
    if telegram.enabled
        && let Some(variable) = &telegram.token_env
    {
        secrets.require("channels.telegram.token_env", variable, problems);
        if telegram.mode == TelegramMode::Webhook
            && let Some(variable) = &telegram.webhook_secret_env
        {
            secrets.require("channels.telegram.webhook_secret_env", variable, problems);
        }
    }

    let matrix = &config.channels.matrix;
    if matrix.enabled {
        // Either way of logging in will do; only when neither variable is set is it a problem.
        let login_keys: Vec<(&str, &str)> = [
            ("channels.matrix.password_env", &matrix.password_env),
            ("channels.matrix.access_token_env", &matrix.access_token_env),
        ]
        .into_iter()
        .filter_map(|(key, variable)| variable.as_deref().map(|variable| (key, variable)))
        .collect();
        let any_login_present = login_keys
            .iter()
            .any(|(_, variable)| secrets.try_take(variable));
        if !any_login_present {
            for (key, variable) in login_keys {
                secrets.require(key, variable, problems);
            }
        }
        if let Some(variable) = &matrix.store_passphrase_env {
            secrets.require("channels.matrix.store_passphrase_env", variable, problems);
        }
        if let Some(variable) = &matrix.recovery_key_env {
            secrets.require("channels.matrix.recovery_key_env", variable, problems);
        }
    }

    for (server_id, server) in &config.mcp_servers {
        for (key, variables) in [
            ("env_from_env", &server.env_from_env),
            ("headers_env", &server.headers_env),
        ] {
            for (name, variable) in variables {
                let key_path = format!("mcp_servers.{server_id}.{key}.{name}");
                secrets.require(&key_path, variable, problems);
            }
        }
    }
    secrets.found
}

/// Gives each MCP server the values of its `env_from_env` and `headers_env` variables, from
/// the `secrets` that [`collect_secrets`] found (it has reported the missing ones), so that
/// the code that starts or reaches the server needs no environment of its own.
pub(crate) fn resolve_mcp_secrets(
    config: &mut HearthConfig,
    secrets: &BTreeMap<String, String>,
    problems: &mut Problems,
) {
    let resolve = |variables: &BTreeMap<String, String>| -> BTreeMap<String, Secret> {
        variables
            .iter()
            .filter_map(|(name, variable)| {
                Some((name.clone(), Secret::new(secrets.get(variable)?.as_str())))
            })
            .collect()
    };
    for (server_id, server) in &mut config.mcp_servers {
        server.resolved_env = resolve(&server.env_from_env);
        server.resolved_headers = resolve(&server.headers_env);
        for (name, value) in &server.resolved_headers {
            if HeaderValue::from_str(value.expose()).is_err() {
                // Only the variable is named: its value is the secret.
                problems.push(
                    format!("mcp_servers.{server_id}.headers_env.{name}"),
                    format!(
                        "the value of environment variable {} cannot be sent as an http header (only visible ascii characters and spaces can)",
                        server.headers_env[name]
                    ),
                );
            }
        }
    }
}

struct SecretLookup<'a> {
    env: &'a BTreeMap<String, String>,
    found: BTreeMap<String, String>,
}

impl SecretLookup<'_> {
    /// Takes the variable's value if it is set and not empty.
    fn try_take(&mut self, variable: &str) -> bool {
        match self.env.get(variable) {
            Some(value) if !value.is_empty() => {
                self.found.insert(variable.to_owned(), value.clone());
                true
            }
            _ => false,
        }
    }

    /// The value of a variable already taken.
    fn value(&self, variable: &str) -> Option<&str> {
        self.found.get(variable).map(String::as_str)
    }

    fn require(&mut self, key_path: &str, variable: &str, problems: &mut Problems) {
        if !is_variable_name(variable) {
            // Never echo it: what was written here may be the secret itself.
            problems.push(
                key_path,
                "does not look like an environment variable name (letters, digits and _); this key names the variable that holds the secret, never the secret itself",
            );
        } else if !self.try_take(variable) {
            problems.push(
                key_path,
                format!("environment variable {variable} is unset or empty"),
            );
        }
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
}
