//! The outermost layer of a profile's tools stack: the tools of `confirm_tools` need
//! the asking family member's approval. This provider only says so
//! (`confirmation_prompt`); the turn then suspends durably and runs the exact call
//! shown once it is approved, so no approval ever waits in memory. A call whose own
//! work asks later (`ToolError::Suspended`) is resumed through the inner provider.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;

use super::{ToolContext, ToolError, ToolsProvider};
use crate::llm::ToolSpec;
use crate::ports::Decision;

pub struct ConfirmingToolsProvider {
    inner: Arc<dyn ToolsProvider>,
    confirm: BTreeSet<String>,
}

impl ConfirmingToolsProvider {
    pub fn new(inner: Arc<dyn ToolsProvider>, confirm: impl IntoIterator<Item = String>) -> Self {
        ConfirmingToolsProvider {
            inner,
            confirm: confirm.into_iter().collect(),
        }
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
    ) -> Option<String> {
        if self.confirm.contains(name) {
            return Some(
                self.inner
                    .render_call(name, arguments)
                    .unwrap_or_else(|| render_call_for_people(name, arguments)),
            );
        }
        self.inner.confirmation_prompt(name, arguments).await
    }

    fn render_call(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
        self.inner.render_call(name, arguments)
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
