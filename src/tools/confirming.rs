//! The outermost layer of a profile's tools stack: the tools of `confirm_tools` need
//! the asking family member's approval. This provider only says so
//! (`confirmation_prompt`); the turn then suspends durably and runs the exact call
//! shown once it is approved, so no approval ever waits in memory. A call whose own
//! work asks later (`ToolError::Suspended`) is resumed through the inner provider.
//!
//! The rules fail closed: a call asks when an entry names it (`config/confirm_tools.rs`),
//! when no provider offers its name, when it is an MCP tool whose server's list is not
//! known (not listed yet, or changed and not listed again), and, for every tool of an MCP
//! server, when an entry names a tool that server does not list (a typo must not leave
//! the tool it meant unguarded).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{ToolContext, ToolError, ToolsProvider};
use crate::config::{ApprovalName, ApprovalSubject, namespaced_tool_name};
use crate::llm::ToolSpec;
use crate::ports::Decision;

pub struct ConfirmingToolsProvider {
    inner: Arc<dyn ToolsProvider>,
    rules: Vec<ApprovalName>,
    /// Entries already reported as naming no listed tool, so each is logged once.
    reported_unlisted: Mutex<BTreeSet<String>>,
}

impl ConfirmingToolsProvider {
    /// `confirm` is a profile's validated `confirm_tools`; an entry that does not parse (which
    /// validation refuses) is kept as a local name, which can only ask more, never less.
    pub fn new(inner: Arc<dyn ToolsProvider>, confirm: impl IntoIterator<Item = String>) -> Self {
        let rules = confirm
            .into_iter()
            .map(|entry| ApprovalName::parse(&entry).unwrap_or(ApprovalName::Local(entry)))
            .collect();
        ConfirmingToolsProvider {
            inner,
            rules,
            reported_unlisted: Mutex::new(BTreeSet::new()),
        }
    }

    /// Whether a call that is `subject` must be approved first.
    async fn asks(&self, subject: &ApprovalSubject) -> bool {
        match subject {
            ApprovalSubject::Unknown(_) => true,
            ApprovalSubject::Mcp { listed: false, .. } => true,
            ApprovalSubject::Mcp { server, .. } => {
                self.rules.iter().any(|rule| rule.matches(subject))
                    || self.names_an_unlisted_tool(server).await
            }
            _ => self.rules.iter().any(|rule| rule.matches(subject)),
        }
    }

    /// Whether an entry names a tool of MCP server `server` that the server does not list.
    async fn names_an_unlisted_tool(&self, server: &str) -> bool {
        let named: Vec<String> = self
            .rules
            .iter()
            .filter_map(|rule| match rule {
                ApprovalName::McpTool { server: of, tool } if of == server => {
                    Some(namespaced_tool_name(of, tool))
                }
                _ => None,
            })
            .collect();
        if named.is_empty() {
            return false;
        }
        let offered = self.inner.tools().await;
        let mut unlisted = false;
        for name in named {
            if offered.iter().any(|tool| tool.name == name) {
                continue;
            }
            unlisted = true;
            let mut reported = self
                .reported_unlisted
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if reported.insert(name.clone()) {
                tracing::warn!(
                    entry = %name,
                    server,
                    "confirm_tools names a tool this mcp server does not list; every tool of the \
                     server asks until the entry names one it lists"
                );
            }
        }
        unlisted
    }
}

#[async_trait]
impl ToolsProvider for ConfirmingToolsProvider {
    async fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools().await
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        self.inner.call(name, arguments, context).await
    }

    async fn resume(
        &self,
        name: &str,
        state: &serde_json::Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        self.inner.resume(name, state, decision, context).await
    }

    async fn confirmation_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Option<String> {
        let subject = self.inner.approval_subject(name, arguments).await;
        if self.asks(&subject).await {
            return Some(
                self.inner
                    .render_call(name, arguments, context)
                    .await
                    .unwrap_or_else(|| render_call_for_people(name, arguments)),
            );
        }
        self.inner
            .confirmation_prompt(name, arguments, context)
            .await
    }

    async fn approval_subject(&self, name: &str, arguments: &serde_json::Value) -> ApprovalSubject {
        self.inner.approval_subject(name, arguments).await
    }

    async fn render_call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Option<String> {
        self.inner.render_call(name, arguments, context).await
    }

    async fn turn_note(&self, context: &ToolContext) -> Option<String> {
        self.inner.turn_note(context).await
    }

    async fn message_note(&self, context: &ToolContext, text: &str) -> Option<String> {
        self.inner.message_note(context, text).await
    }
}

/// `Run profile_update?` and one line per argument, values as plain text.
pub fn render_call_for_people(name: &str, arguments: &serde_json::Value) -> String {
    let mut text = format!("Run {name}?");
    match arguments {
        serde_json::Value::Object(fields) if !fields.is_empty() => {
            for (key, value) in fields {
                let shown = match value {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                text.push_str(&format!("\n• {key}: {shown}"));
            }
        }
        serde_json::Value::Object(_) | serde_json::Value::Null => {}
        other => text.push_str(&format!("\n• {other}")),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_rendered_one_per_line() {
        let text = render_call_for_people(
            "profile_update",
            &serde_json::json!({"key": "address", "value": "1 Elm St", "n": 2}),
        );
        assert_eq!(
            text,
            "Run profile_update?\n• key: address\n• n: 2\n• value: 1 Elm St"
        );
    }
}
