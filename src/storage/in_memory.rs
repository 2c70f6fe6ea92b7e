//! In-memory adapters of every storage port: the same behaviour as SQLite,
//! kept in a mutex, for tests and for running the actors without a file.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::ports::{
    Acceptance, ConversationMemory, HistoryEntry, Inbound, Inbox, InboxRecord, InboxStatus,
    ProfileFacts, StorageError, TelemetryEvent, TelemetrySink, TurnRecord, UserProfiles,
};

#[derive(Default)]
struct State {
    /// Inbox records in acceptance order.
    inbox: Vec<InboxRecord>,
    messages: HashMap<String, Vec<HistoryEntry>>,
    profiles: HashMap<String, ProfileFacts>,
    events: Vec<TelemetryEvent>,
}

#[derive(Default)]
pub struct InMemoryStore {
    state: Mutex<State>,
}

impl InMemoryStore {
    /// Every telemetry event recorded so far.
    pub fn events(&self) -> Vec<TelemetryEvent> {
        self.lock().events.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The message `inbox_id` while it waits for an answer; the same error as SQLite otherwise.
fn find_waiting<'a>(
    state: &'a mut State,
    inbox_id: &str,
) -> Result<&'a mut InboxRecord, StorageError> {
    state
        .inbox
        .iter_mut()
        .find(|record| record.inbound.id == inbox_id && record.status == InboxStatus::Accepted)
        .ok_or_else(|| {
            StorageError::Corrupt(format!(
                "inbox message {inbox_id:?} is unknown or not waiting for an answer"
            ))
        })
}

#[async_trait]
impl Inbox for InMemoryStore {
    async fn accept(&self, inbound: &Inbound) -> Result<Acceptance, StorageError> {
        let mut state = self.lock();
        let duplicate = state.inbox.iter().find(|record| {
            record.inbound.id == inbound.id
                || (record.inbound.channel == inbound.channel
                    && record.inbound.platform_event_id.is_some()
                    && record.inbound.platform_event_id == inbound.platform_event_id)
        });
        if let Some(existing) = duplicate {
            return Ok(Acceptance::Duplicate(Box::new(existing.clone())));
        }
        state.inbox.push(InboxRecord {
            inbound: inbound.clone(),
            status: InboxStatus::Accepted,
            attempts: 0,
            next_attempt_at_ms: None,
            reply: None,
            error: None,
        });
        Ok(Acceptance::New)
    }

    async fn unanswered(&self) -> Result<Vec<InboxRecord>, StorageError> {
        Ok(self
            .lock()
            .inbox
            .iter()
            .filter(|record| record.status == InboxStatus::Accepted)
            .cloned()
            .collect())
    }

    async fn complete(&self, inbox_id: &str, turn: &TurnRecord) -> Result<(), StorageError> {
        let mut state = self.lock();
        let record = find_waiting(&mut state, inbox_id)?;
        record.status = InboxStatus::Answered;
        record.reply = Some(turn.reply.clone());
        record.error = None;
        state
            .messages
            .entry(turn.conversation_key.clone())
            .or_default()
            .extend(turn.messages.iter().cloned());
        Ok(())
    }

    async fn record_failure(
        &self,
        inbox_id: &str,
        error: &str,
        next_attempt_at_ms: i64,
    ) -> Result<u32, StorageError> {
        let mut state = self.lock();
        let record = find_waiting(&mut state, inbox_id)?;
        record.attempts += 1;
        record.error = Some(error.to_string());
        record.next_attempt_at_ms = Some(next_attempt_at_ms);
        Ok(record.attempts)
    }

    async fn give_up(&self, inbox_id: &str, error: &str, reply: &str) -> Result<(), StorageError> {
        let mut state = self.lock();
        let record = find_waiting(&mut state, inbox_id)?;
        record.status = InboxStatus::Failed;
        record.error = Some(error.to_string());
        record.reply = Some(reply.to_string());
        Ok(())
    }

    async fn get(&self, inbox_id: &str) -> Result<Option<InboxRecord>, StorageError> {
        Ok(self
            .lock()
            .inbox
            .iter()
            .find(|record| record.inbound.id == inbox_id)
            .cloned())
    }

    async fn ping(&self) -> Result<(), StorageError> {
        Ok(())
    }
}

#[async_trait]
impl ConversationMemory for InMemoryStore {
    async fn recent(
        &self,
        conversation_key: &str,
        limit: usize,
        since_ms: i64,
    ) -> Result<Vec<HistoryEntry>, StorageError> {
        let state = self.lock();
        let Some(entries) = state.messages.get(conversation_key) else {
            return Ok(Vec::new());
        };
        let mut newest: Vec<HistoryEntry> = entries
            .iter()
            .rev()
            .filter(|entry| entry.is_chat_text() && entry.created_at_ms >= since_ms)
            .take(limit)
            .cloned()
            .collect();
        newest.reverse();
        Ok(newest)
    }

    async fn append(
        &self,
        conversation_key: &str,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError> {
        self.lock()
            .messages
            .entry(conversation_key.to_string())
            .or_default()
            .extend(entries.iter().cloned());
        Ok(())
    }
}

#[async_trait]
impl UserProfiles for InMemoryStore {
    async fn get(&self, member_id: &str) -> Result<ProfileFacts, StorageError> {
        Ok(self
            .lock()
            .profiles
            .get(member_id)
            .cloned()
            .unwrap_or_else(BTreeMap::new))
    }

    async fn set(
        &self,
        member_id: &str,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        let facts = state.profiles.entry(member_id.to_string()).or_default();
        match value {
            Some(value) => {
                facts.insert(key.to_string(), value.to_string());
            }
            None => {
                facts.remove(key);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl TelemetrySink for InMemoryStore {
    fn record(&self, event: TelemetryEvent) {
        self.lock().events.push(event);
    }
}
