//! Conversation history: what was said, per conversation, read back bounded.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Fence, StorageError};
use crate::ids::ConversationKey;
use crate::llm::{Role, ToolCall};

/// One stored message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub role: Role,
    pub content: String,
    /// The profile that handled the turn.
    pub profile_id: String,
    /// The inbound message whose turn produced this entry.
    pub inbox_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub created_at_ms: i64,
}

impl HistoryEntry {
    /// Plain chat text (a user message, or an assistant answer without tool calls):
    /// the only entries replayed into later prompts, so a bounded read never
    /// separates a tool call from its result.
    pub fn is_chat_text(&self) -> bool {
        matches!(self.role, Role::User | Role::Assistant)
            && self.tool_calls.is_empty()
            && !self.content.is_empty()
    }
}

#[async_trait]
pub trait ConversationMemory: Send + Sync {
    /// The newest `limit` chat-text entries (see [`HistoryEntry::is_chat_text`]) created at or
    /// after `since_ms`, returned oldest first.
    async fn recent(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError>;
    /// `recent`, read by the turn holding the conversation's lease at `held`: an adapter
    /// shared by several workers may answer from what this worker read and wrote under the
    /// same generation, since no other worker can write the conversation's history while
    /// it lasts (and a turn that lost it is refused at its first fenced write).
    async fn recent_held(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
        since_ms: i64,
        held: Option<&Fence>,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let _ = held;
        self.recent(conversation_key, limit, since_ms).await
    }
    async fn append(
        &self,
        conversation_key: &ConversationKey,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError>;
}
