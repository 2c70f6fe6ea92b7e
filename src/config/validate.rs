//! The start-up checks of everything outside the profiles (bounds, URLs, family identities,
//! channels, MCP servers); the secrets they name are read by `env_secrets.rs`.

use std::collections::BTreeMap;

use reqwest::header::HeaderName;

use super::error::Problems;
use super::mcp_names::check_server_id;
use super::types::{HearthConfig, McpServerConfig, TelegramMode};

/// Checks the settings outside the profiles.
pub(crate) fn check_settings(config: &HearthConfig, problems: &mut Problems) {
    check_database(config, problems);
    check_bounds(config, problems);
    check_http(config, problems);
    check_llms(config, problems);
    super::transcription::check_transcription(config, problems);
    super::memory::check_memory(config, problems);
    check_family(config, problems);
    super::reminders::check_reminders(config, problems);
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
        Some("sqlite" | "postgres" | "postgresql") => {}
        _ => problems.push(
            "database_url",
            format!(
                "unsupported database url (scheme {:?}; expected \"sqlite://...\" or \"postgres://...\")",
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
    if let Some(connections) = config.database_max_connections {
        at_least_one(problems, "database_max_connections", connections.into());
    }
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
    at_least_one(problems, "http.session_days", u64::from(http.session_days));
    if let Some(url) = &http.public_url
        && !is_http_url(url)
    {
        problems.push(
            "http.public_url",
            format!(
                "{url:?} is not an http(s) url (expected e.g. \"https://hearth.home.example\")"
            ),
        );
    }
    for (index, proxy) in http.trusted_proxies.iter().enumerate() {
        if proxy.trim().parse::<std::net::IpAddr>().is_err() {
            problems.push(
                format!("http.trusted_proxies[{index}]"),
                format!("{proxy:?} is not an IP address (expected e.g. \"127.0.0.1\" or \"::1\")"),
            );
        }
    }
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
        // A blank id, or one holding '/', never comes this far: `MemberId` refuses it.
        if let Some(first) = seen_ids.insert(member.id.as_str(), index) {
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
