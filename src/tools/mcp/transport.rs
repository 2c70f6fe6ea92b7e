//! What connecting to one configured MCP server is made of: a stdio server's command, with
//! only a few of hearth's variables (`INHERITED_ENV`) beside its own `env` and `env_from_env`;
//! a streamable HTTP server's headers, `headers` as written and `headers_env` as read at load
//! time (marked sensitive); and why a connection failed (`ConnectError`). The supervisor
//! (`server.rs`) connects with them.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::service::{ClientInitializeError, ServiceError};
use tokio::process::Command;

use crate::config::McpServerConfig;

/// What a stdio server inherits from hearth's environment; everything else (bot tokens, API
/// keys) stays out of third-party servers unless its `env_from_env` names it.
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR",
];

#[derive(Debug, thiserror::Error)]
pub(super) enum ConnectError {
    #[error("could not start {command:?}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("header {0:?} is not a valid http header name and value")]
    BadHeader(String),
    #[error("neither command nor url is configured")]
    NotConfigured,
    /// A config that did not come from loading: its `*_env` secrets were never read, and
    /// starting without them would only fail later and less clearly.
    #[error("{0} was not read from the environment (load the configuration to resolve it)")]
    Unresolved(String),
    #[error("no answer to initialize and tools/list within {}s", .0.as_secs_f32())]
    InitTimeout(Duration),
    #[error("initialize failed: {0}")]
    Initialize(Box<ClientInitializeError>),
    #[error("tools/list failed: {0}")]
    ListTools(#[from] ServiceError),
}

impl From<ClientInitializeError> for ConnectError {
    fn from(error: ClientInitializeError) -> Self {
        // Boxed: the error is large and the usual outcome is success.
        ConnectError::Initialize(Box::new(error))
    }
}

/// The command that starts a stdio server: its `args`, the few variables it inherits from
/// hearth (`INHERITED_ENV`), its own `env`, and its `env_from_env` values read at load time.
pub(super) fn child_command(
    config: &McpServerConfig,
    command: &str,
) -> Result<Command, ConnectError> {
    if let Some(name) = unresolved(&config.env_from_env, &config.resolved_env) {
        return Err(ConnectError::Unresolved(format!("env_from_env.{name}")));
    }
    let mut child = Command::new(command);
    child
        .args(&config.args)
        .env_clear()
        .envs(
            INHERITED_ENV
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|value| (*name, value))),
        )
        .envs(&config.env)
        .envs(
            config
                .resolved_env
                .iter()
                .map(|(name, value)| (name, value.expose())),
        );
    Ok(child)
}

/// The first name of `named` (an `*_env` map) without a resolved value.
fn unresolved<'a, V>(
    named: &'a BTreeMap<String, String>,
    resolved: &BTreeMap<String, V>,
) -> Option<&'a str> {
    named
        .keys()
        .find(|name| !resolved.contains_key(*name))
        .map(String::as_str)
}

/// `headers` as written and `headers_env` as read at load time, for every request.
pub(super) fn headers(
    config: &McpServerConfig,
) -> Result<std::collections::HashMap<HeaderName, HeaderValue>, ConnectError> {
    if let Some(name) = unresolved(&config.headers_env, &config.resolved_headers) {
        return Err(ConnectError::Unresolved(format!("headers_env.{name}")));
    }
    let literal = config
        .headers
        .iter()
        .map(|(name, value)| (name, value.as_str()));
    let resolved = config
        .resolved_headers
        .iter()
        .map(|(name, value)| (name, value.expose()));
    literal
        .chain(resolved)
        .map(|(name, value)| {
            // The value may be a secret: the error names only the header.
            let parsed_name = HeaderName::try_from(name.as_str());
            let parsed_value = HeaderValue::try_from(value);
            match (parsed_name, parsed_value) {
                (Ok(name), Ok(mut value)) => {
                    value.set_sensitive(true);
                    Ok((name, value))
                }
                _ => Err(ConnectError::BadHeader(name.clone())),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    fn names(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn written_and_resolved_headers_are_both_sent_and_secrets_marked_sensitive() {
        let config = McpServerConfig {
            url: Some("http://127.0.0.1:9/mcp".to_owned()),
            headers: names(&[("X-Family", "smith")]),
            headers_env: names(&[("Authorization", "CALENDAR_AUTH")]),
            resolved_headers: BTreeMap::from([(
                "Authorization".to_owned(),
                Secret::new("Bearer s3cret"),
            )]),
            ..McpServerConfig::default()
        };
        let sent = headers(&config).expect("valid headers");
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[&HeaderName::from_static("x-family")], "smith");
        let authorization = &sent[&HeaderName::from_static("authorization")];
        assert_eq!(authorization, "Bearer s3cret");
        // reqwest and hyper leave sensitive values out of their own debug output.
        assert!(authorization.is_sensitive());
        assert!(!format!("{authorization:?}").contains("s3cret"));
    }

    #[test]
    fn a_config_whose_secrets_were_never_read_is_refused() {
        // Built by hand instead of loaded: without its secret the server would fail later
        // and less clearly (an unauthorised request, a tool that cannot log in).
        let config = McpServerConfig {
            url: Some("http://127.0.0.1:9/mcp".to_owned()),
            headers_env: names(&[("Authorization", "CALENDAR_AUTH")]),
            ..McpServerConfig::default()
        };
        let error = headers(&config).expect_err("not resolved");
        assert_eq!(
            error.to_string(),
            "headers_env.Authorization was not read from the environment \
             (load the configuration to resolve it)"
        );
        let stdio = McpServerConfig {
            env_from_env: names(&[("TOKEN", "HEARTH_TOKEN")]),
            ..McpServerConfig::default()
        };
        assert_eq!(
            unresolved(&stdio.env_from_env, &stdio.resolved_env),
            Some("TOKEN")
        );
    }
}
