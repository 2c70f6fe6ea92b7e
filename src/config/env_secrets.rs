//! The secrets a configuration needs, read from the environment by the variable names its
//! `*_env` keys give, each missing one reported at its key; and the MCP servers given the
//! values of theirs.
//!
//! A secret is looked up only where it is needed: the key of an LLM that some profile uses,
//! of the transcription entry and of the embedding model `memory.embedding_model` names,
//! the HTTP API key when the API is on and authenticated, the tokens of enabled channels, the
//! `env_from_env` and `headers_env` variables of every MCP server (all of them are started).
//! An unused LLM or a disabled channel may name a variable that is not set on this host.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::header::HeaderValue;

use super::error::Problems;
use super::profiles::ResolvedProfile;
use super::secret::Secret;
use super::types::{HearthConfig, TelegramMode};

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
            secrets.require_or(
                &format!("llms.{name}.api_key_env"),
                variable,
                " (or try hearth without any key: `run --local-model` answers with a small local model)",
                problems,
            );
        }
    }
    // Used whenever they are configured; the local model stands in for neither.
    for (name, llm) in [config.transcription_llm(), config.embedding_llm()]
        .into_iter()
        .flatten()
    {
        if let Some(variable) = &llm.api_key_env {
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

    // Every profile's calendar account is reached; the key is the profile's merged one.
    for profile in profiles {
        if let Some(caldav) = &profile.processing.calendar.caldav {
            let key_path = format!(
                "profile {}: processing_config.calendar_config.caldav.password_env",
                profile.id
            );
            secrets.require(&key_path, &caldav.password_env, problems);
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
        self.require_or(key_path, variable, "", problems);
    }

    /// `require`, with `alternative` added to the problem of a variable that is not set.
    fn require_or(
        &mut self,
        key_path: &str,
        variable: &str,
        alternative: &str,
        problems: &mut Problems,
    ) {
        if !is_variable_name(variable) {
            // Never echo it: what was written here may be the secret itself.
            problems.push(
                key_path,
                "does not look like an environment variable name (letters, digits and _); this key names the variable that holds the secret, never the secret itself",
            );
        } else if !self.try_take(variable) {
            problems.push(
                key_path,
                format!("environment variable {variable} is unset or empty{alternative}"),
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
