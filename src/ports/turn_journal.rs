//! The turn journal: a running turn's progress, stored as it goes, so that a turn resumed
//! after hearth stopped, or tried again after an LLM failure, replays what it already did
//! and never runs a completed tool call again.
//!
//! The processing service saves the turn's state after each LLM round that asks for tool
//! calls, before each call (marking it in flight) and after it (with its result). The
//! entry of a message goes when its turn ends: answered, given up or suspended (the
//! suspended turn's state then lives with its confirmation), in the same transaction.
//!
//! Among workers, each write is fenced by the conversation's lease (`Fence`): the call
//! marked in flight is stored only while the worker still holds the lease at the
//! generation its turn started with, so a worker that stalled past its lease and wakes
//! never starts a call the new holder may have taken over.

use async_trait::async_trait;

use super::{Fence, StorageError};

#[async_trait]
pub trait TurnJournal: Send + Sync {
    /// The latest saved state of the turn of inbox message `inbox_id`, if it has one.
    async fn load_turn(&self, inbox_id: &str) -> Result<Option<serde_json::Value>, StorageError>;
    /// Replace it; durable before this returns.
    async fn save_turn(
        &self,
        inbox_id: &str,
        state: &serde_json::Value,
    ) -> Result<(), StorageError> {
        self.save_turn_fenced(inbox_id, state, None).await
    }
    /// `save_turn`, with a `fence` only while it is its lease's current generation (else
    /// `StorageError::Fenced`, and nothing is written): a worker that lost the
    /// conversation's lease neither records nor starts a tool call.
    async fn save_turn_fenced(
        &self,
        inbox_id: &str,
        state: &serde_json::Value,
        fence: Option<&Fence>,
    ) -> Result<(), StorageError>;
}
