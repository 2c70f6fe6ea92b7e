//! The `ToolsProvider` port and seed 004's stack: local tools, filtered by a
//! profile's `enable_local_tools`, composed with later providers (MCP, plugins).
//!
//! A call's own work may stop at a question for the family member (a delegated turn
//! reaching a tool that needs confirmation): it returns `ToolError::Suspended` with
//! what to ask and an opaque state, the turn suspends durably, and the answer comes
//! back through `ToolsProvider::resume` with that state.

mod composite;
mod confirming;
mod filtered;
mod local;
pub mod mcp;
mod profile_tools;

use async_trait::async_trait;

use crate::config::ApprovalSubject;
use crate::ids::{ConversationKey, MemberId};
use crate::llm::ToolSpec;
use crate::ports::Decision;

pub use composite::CompositeToolsProvider;
pub use confirming::{ConfirmingToolsProvider, render_call_for_people};
pub use filtered::FilteredToolsProvider;
pub use local::{LOCAL_TOOL_NAMES, LocalTool, LocalToolsProvider};
#[cfg(feature = "mcp")]
pub use mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, McpOptions, McpServers, ServerState,
};
pub use profile_tools::{ProfileGetTool, ProfileUpdateTool};

/// Who a tool call is made for: tools act only on the asking family member's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    pub member_id: MemberId,
    pub conversation_key: ConversationKey,
    pub profile_id: String,
    /// How long the member has to answer what a tool asks them (a plugin's confirmation, an
    /// MCP server's question): the profile's `confirmation_timeout_seconds`.
    pub question_timeout: std::time::Duration,
    /// The key of this one tool call, the same every time its turn is replayed; given to
    /// plugins and MCP servers so they can recognise a call they already ran.
    pub idempotency_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("no tool named {0:?} is available to this profile")]
    UnknownTool(String),
    #[error("tool {tool}: invalid arguments: {message}")]
    InvalidArguments { tool: String, message: String },
    #[error("tool {tool} failed: {message}")]
    Failed { tool: String, message: String },
    /// Not a failure: the call's work waits for the member's answer (see `ToolSuspension`).
    #[error("tool call stopped to ask the family member about {:?}", .0.action)]
    Suspended(Box<ToolSuspension>),
    #[error("tool {0:?} has no suspended call to resume")]
    NotResumable(String),
    /// Not a failure: the tool's output is already the answer for the member (a plugin
    /// whose result was written for people), so the turn ends with it.
    #[error("tool answered the family member directly")]
    ReplyDirectly(String),
}

impl ToolError {
    /// The model's arguments to `tool` are wrong: `message` says which and how.
    pub fn invalid(tool: &str, message: impl ToString) -> Self {
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            message: message.to_string(),
        }
    }

    /// `tool` could not do its work: `message` says why, in words for the model.
    pub fn failed(tool: &str, message: impl ToString) -> Self {
        ToolError::Failed {
            tool: tool.to_owned(),
            message: message.to_string(),
        }
    }
}

/// A tool call whose own work stopped at a confirmation: what to ask the member and
/// what the tool needs to continue. The turn stores it, so it must be plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSuspension {
    /// The question shown to the member.
    pub prompt: String,
    /// The action and its exact arguments the approval is for.
    pub action: String,
    pub arguments: serde_json::Value,
    /// Opaque to everyone but the tool; handed back to `ToolsProvider::resume`.
    pub state: serde_json::Value,
    pub expires_at_ms: i64,
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

    /// Continue a call that returned `ToolError::Suspended` with `state`, given the
    /// member's `decision` (`None`: already used once, hearth stopped while acting on it).
    /// It may suspend again.
    async fn resume(
        &self,
        name: &str,
        _state: &serde_json::Value,
        _decision: Option<Decision>,
        _context: &ToolContext,
    ) -> Result<String, ToolError> {
        Err(ToolError::NotResumable(name.to_string()))
    }

    /// When this call needs the family member's approval first: the question to show
    /// them. Only `ConfirmingToolsProvider` asks; others pass the question through.
    async fn confirmation_prompt(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
        _context: &ToolContext,
    ) -> Option<String> {
        None
    }

    /// What this call is in the terms of `confirm_tools` (a plugin capability, an MCP tool
    /// and whether its server's list is known). Only asked for tools this provider offers.
    async fn approval_subject(
        &self,
        name: &str,
        _arguments: &serde_json::Value,
    ) -> ApprovalSubject {
        ApprovalSubject::Local(name.to_string())
    }

    /// A tool's own way of showing a call to a person, for confirmation prompts: it may
    /// look up what the call would change (a calendar event as it is now) and say times in
    /// `context`'s member's zone.
    async fn render_call(
        &self,
        _name: &str,
        _arguments: &serde_json::Value,
        _context: &ToolContext,
    ) -> Option<String> {
        None
    }

    /// What the model must know at the start of every turn for `context`'s member and
    /// conversation (where a multi-step workflow stands), added to the system prompt.
    async fn turn_note(&self, _context: &ToolContext) -> Option<String> {
        None
    }

    /// What the model should have beside the member's message `text` this turn (what
    /// family memory holds on it), given with the message, after the history: it bears on
    /// this message only, so it is neither in the system prompt nor kept in the history.
    async fn message_note(&self, _context: &ToolContext, _text: &str) -> Option<String> {
        None
    }
}
