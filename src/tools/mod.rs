//! The `ToolsProvider` port and seed 004's stack: local tools, filtered by a
//! profile's `enable_local_tools`, composed with later providers (MCP, plugins).

mod composite;
mod confirming;
mod filtered;
mod local;
pub mod mcp;
mod profile_tools;

use async_trait::async_trait;

use crate::llm::ToolSpec;

pub use composite::CompositeToolsProvider;
pub use confirming::{ConfirmingToolsProvider, render_call_for_people};
pub use filtered::FilteredToolsProvider;
pub use local::{LOCAL_TOOL_NAMES, LocalTool, LocalToolsProvider};
pub use mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, McpOptions, McpServers, ServerState,
};
pub use profile_tools::{ProfileGetTool, ProfileUpdateTool};

/// Who a tool call is made for: tools act only on the asking family member's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    pub member_id: String,
    pub conversation_key: String,
    pub profile_id: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("no tool named {0:?} is available to this profile")]
    UnknownTool(String),
    #[error("tool {tool}: invalid arguments: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("tool {tool} failed: {message}")]
    Failed { tool: String, message: String },
}

#[async_trait]
pub trait ToolsProvider: Send + Sync {
    /// The tools offered to the model right now.
    async fn tools(&self) -> Vec<ToolSpec>;
    /// Run one tool call; the returned text is the tool result the model reads.
    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError>;

    /// When this call needs the family member's approval first: the question to show
    /// them. Only `ConfirmingToolsProvider` asks; others pass the question through.
    async fn confirmation_prompt(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
    ) -> Option<String> {
        None
    }

    /// A tool's own way of showing a call to a person, for confirmation prompts.
    fn render_call(&self, _name: &str, _arguments: &serde_json::Value) -> Option<String> {
        None
    }
}
