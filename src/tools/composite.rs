//! Several providers offered as one; a call goes to the first provider offering that name.

use std::sync::Arc;

use async_trait::async_trait;

use super::{ToolContext, ToolError, ToolsProvider};
use crate::llm::ToolSpec;

pub struct CompositeToolsProvider {
    providers: Vec<Arc<dyn ToolsProvider>>,
}

impl CompositeToolsProvider {
    pub fn new(providers: Vec<Arc<dyn ToolsProvider>>) -> Self {
        CompositeToolsProvider { providers }
    }
}

#[async_trait]
impl ToolsProvider for CompositeToolsProvider {
    async fn tools(&self) -> Vec<ToolSpec> {
        let mut all = Vec::new();
        for provider in &self.providers {
            for tool in provider.tools().await {
                // The first provider wins a name clash, the same one `call` reaches.
                if !all.iter().any(|known: &ToolSpec| known.name == tool.name) {
                    all.push(tool);
                }
            }
        }
        all
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        for provider in &self.providers {
            // Tool lists can change at run time (MCP), so look the name up per call.
            if provider.tools().await.iter().any(|tool| tool.name == name) {
                return provider.call(name, arguments, context).await;
            }
        }
        Err(ToolError::UnknownTool(name.to_string()))
    }

    async fn confirmation_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Value,
    ) -> Option<String> {
        for provider in &self.providers {
            if provider.tools().await.iter().any(|tool| tool.name == name) {
                return provider.confirmation_prompt(name, arguments).await;
            }
        }
        None
    }

    fn render_call(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
        self.providers
            .iter()
            .find_map(|provider| provider.render_call(name, arguments))
    }
}
