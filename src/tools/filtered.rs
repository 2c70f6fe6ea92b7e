//! Offers, runs and resumes only the allowed tools of an inner provider (a profile's
//! `enable_local_tools`).

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;

use super::{ToolContext, ToolError, ToolsProvider};
use crate::config::ApprovalSubject;
use crate::llm::ToolSpec;
use crate::ports::Decision;

pub struct FilteredToolsProvider {
    inner: Arc<dyn ToolsProvider>,
    allowed: BTreeSet<String>,
}

impl FilteredToolsProvider {
    pub fn new(inner: Arc<dyn ToolsProvider>, allowed: impl IntoIterator<Item = String>) -> Self {
        FilteredToolsProvider {
            inner,
            allowed: allowed.into_iter().collect(),
        }
    }
}

#[async_trait]
impl ToolsProvider for FilteredToolsProvider {
    async fn tools(&self) -> Vec<ToolSpec> {
        let mut tools = self.inner.tools().await;
        tools.retain(|tool| self.allowed.contains(&tool.name));
        tools
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        // The model may name a tool it was never offered; that must not reach the inner provider.
        if !self.allowed.contains(name) {
            return Err(ToolError::UnknownTool(name.to_string()));
        }
        self.inner.call(name, arguments, context).await
    }

    async fn resume(
        &self,
        name: &str,
        state: &serde_json::Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        // A tool no longer allowed (the configuration changed meanwhile) does not continue.
        if !self.allowed.contains(name) {
            return Err(ToolError::UnknownTool(name.to_string()));
        }
        self.inner.resume(name, state, decision, context).await
    }

    async fn confirmation_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Option<String> {
        if !self.allowed.contains(name) {
            return None;
        }
        self.inner
            .confirmation_prompt(name, arguments, context)
            .await
    }

    async fn approval_subject(&self, name: &str, arguments: &serde_json::Value) -> ApprovalSubject {
        if !self.allowed.contains(name) {
            return ApprovalSubject::Unknown(name.to_string());
        }
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
