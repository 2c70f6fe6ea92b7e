//! Readiness of the parts that must work for hearth to serve: each component
//! (queue, channels) reports its state here; `GET /readyz` reads it.
//!
//! A detail is often an error's text, and an error's text can carry a credential (a url
//! with a password, a token a library echoed): every detail is redacted when it is set, so
//! `/readyz` can never show one.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::redaction::redact_url_password;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ComponentState {
    pub ready: bool,
    pub detail: String,
    /// A part hearth answers without (a calendar server): shown, never making hearth
    /// unready.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub degraded: bool,
}

#[derive(Default)]
pub struct Readiness {
    components: Mutex<BTreeMap<String, ComponentState>>,
    /// The values of the configuration's secrets, never shown.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Readiness")
            .field("components", &self.snapshot())
            .finish_non_exhaustive()
    }
}

/// Secrets shorter than this are not searched for: they would match ordinary words.
const SHORTEST_REDACTED_SECRET: usize = 4;

impl Readiness {
    /// Readiness whose details never show any of `secrets`.
    pub fn with_secrets<'a>(secrets: impl IntoIterator<Item = &'a String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|secret| secret.len() >= SHORTEST_REDACTED_SECRET)
            .cloned()
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        Readiness {
            components: Mutex::default(),
            secrets,
        }
    }

    /// `text` with every secret and every url's password replaced by `***`.
    pub fn redacted(&self, text: &str) -> String {
        let mut text = text
            .split(' ')
            .map(|word| {
                if word.contains("://") {
                    redact_url_password(word)
                } else {
                    word.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "***");
            }
        }
        text
    }

    pub fn set(&self, component: &str, ready: bool, detail: &str) {
        let detail = self.redacted(detail);
        self.components
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                component.to_string(),
                ComponentState {
                    ready,
                    detail,
                    degraded: false,
                },
            );
    }

    /// A part hearth answers without: `problem` is what is wrong with it now (`None`: it
    /// works). It stays ready either way; a problem shows as `degraded` with its detail.
    pub fn set_degraded(&self, component: &str, problem: Option<&str>) {
        let detail = match problem {
            Some(problem) => self.redacted(problem),
            None => "ok".to_owned(),
        };
        self.components
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                component.to_string(),
                ComponentState {
                    ready: true,
                    detail,
                    degraded: problem.is_some(),
                },
            );
    }

    pub fn snapshot(&self) -> BTreeMap<String, ComponentState> {
        self.components
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_never_show_a_secret_or_a_urls_password() {
        let secrets = vec!["bot-token-123".to_string(), "abc".to_string()];
        let readiness = Readiness::with_secrets(&secrets);
        readiness.set(
            "telegram",
            false,
            "getUpdates failed: error sending request for url \
             (http://hearth:hunter2@127.0.0.1:1/botbot-token-123/GetUpdates)",
        );
        let detail = readiness.snapshot()["telegram"].detail.clone();
        assert!(!detail.contains("hunter2"), "{detail}");
        assert!(!detail.contains("bot-token-123"), "{detail}");
        assert!(detail.contains("hearth:***@127.0.0.1"), "{detail}");
        // Too short to search for without hiding ordinary words.
        assert_eq!(readiness.redacted("abc def"), "abc def");
    }
}
