//! The in-memory `Outbox`: rows in id order, in the same mutex as the inbox, so a turn's
//! answer and its delivery are one change here too.

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ports::{Outbox, OutboxEntry, OutgoingMessage, SECRET_REMOVED, StorageError, now_ms};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Pending,
    Delivered,
    Abandoned,
}

#[derive(Default)]
pub(crate) struct OutboxState {
    rows: Vec<(OutboxEntry, Status)>,
    next_id: i64,
    /// When each delivered or given-up row was settled (retention).
    settled_at_ms: std::collections::HashMap<i64, i64>,
    /// The row stored under each once key (`enqueue_once`).
    once_keys: std::collections::HashMap<String, i64>,
    /// The rows carrying a secret (`enqueue_secret`), whose text goes once settled.
    secrets: std::collections::HashSet<i64>,
}

impl OutboxState {
    /// Store `message` as to deliver; its id.
    pub(super) fn push(&mut self, message: &OutgoingMessage) -> i64 {
        self.next_id += 1;
        self.rows.push((
            OutboxEntry {
                id: self.next_id,
                message: message.clone(),
                created_at_ms: now_ms(),
                attempts: 0,
                parts_delivered: 0,
            },
            Status::Pending,
        ));
        self.next_id
    }

    fn row(&mut self, id: i64) -> Option<&mut (OutboxEntry, Status)> {
        self.rows.iter_mut().find(|(entry, _)| entry.id == id)
    }

    fn settle(&mut self, id: i64, status: Status) {
        let secret = self.secrets.remove(&id);
        if let Some((entry, stored)) = self.row(id) {
            *stored = status;
            if secret {
                entry.message.text = SECRET_REMOVED.to_string();
            }
            self.settled_at_ms.insert(id, now_ms());
        }
    }

    /// Forget at most `batch` rows settled before `before_ms`, oldest first; how many.
    pub(super) fn prune_settled(&mut self, before_ms: i64, batch: usize) -> usize {
        let settled = &self.settled_at_ms;
        let old: Vec<i64> = self
            .rows
            .iter()
            .filter(|(entry, _)| settled.get(&entry.id).is_some_and(|at| *at < before_ms))
            .take(batch)
            .map(|(entry, _)| entry.id)
            .collect();
        self.rows.retain(|(entry, _)| !old.contains(&entry.id));
        self.once_keys.retain(|_, id| !old.contains(id));
        old.len()
    }
}

#[async_trait]
impl Outbox for InMemoryStore {
    async fn enqueue(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        Ok(self.lock().outbox.push(message))
    }

    async fn enqueue_secret(&self, message: &OutgoingMessage) -> Result<i64, StorageError> {
        let mut state = self.lock();
        let id = state.outbox.push(message);
        state.outbox.secrets.insert(id);
        Ok(id)
    }

    async fn enqueue_once(
        &self,
        once_key: &str,
        message: &OutgoingMessage,
    ) -> Result<Option<i64>, StorageError> {
        let mut state = self.lock();
        if state.outbox.once_keys.contains_key(once_key) {
            return Ok(None);
        }
        let id = state.outbox.push(message);
        state.outbox.once_keys.insert(once_key.to_string(), id);
        Ok(Some(id))
    }

    async fn undelivered(&self, channel: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        Ok(self
            .lock()
            .outbox
            .rows
            .iter()
            .filter(|(entry, status)| {
                *status == Status::Pending && entry.message.conversation.channel() == channel
            })
            .map(|(entry, _)| entry.clone())
            .collect())
    }

    async fn part_delivered(&self, id: i64, parts: u32) -> Result<(), StorageError> {
        if let Some((entry, _)) = self.lock().outbox.row(id) {
            entry.parts_delivered = parts;
        }
        Ok(())
    }

    async fn delivered(&self, id: i64, _platform_id: Option<&str>) -> Result<(), StorageError> {
        self.lock().outbox.settle(id, Status::Delivered);
        Ok(())
    }

    async fn attempt_failed(&self, id: i64, _error: &str) -> Result<u32, StorageError> {
        Ok(match self.lock().outbox.row(id) {
            Some((entry, _)) => {
                entry.attempts += 1;
                entry.attempts
            }
            None => 0,
        })
    }

    async fn abandon(&self, id: i64, _error: &str) -> Result<(), StorageError> {
        self.lock().outbox.settle(id, Status::Abandoned);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ConversationKey;
    use crate::ports::OutgoingKind;

    fn message(text: &str) -> OutgoingMessage {
        OutgoingMessage {
            conversation: ConversationKey::new("telegram", "1001").unwrap(),
            inbox_id: None,
            text: text.to_string(),
            kind: OutgoingKind::Reply,
            reply_to_event: None,
        }
    }

    #[tokio::test]
    async fn a_secret_is_kept_only_until_delivered_or_given_up() {
        let store = InMemoryStore::default();
        let delivered = store
            .enqueue_secret(&message("code ABCD-EFGH"))
            .await
            .unwrap();
        let given_up = store
            .enqueue_secret(&message("code WXYZ-2345"))
            .await
            .unwrap();
        let plain = store.enqueue(&message("hello")).await.unwrap();
        let pending = store.undelivered("telegram").await.unwrap();
        assert_eq!(pending[0].message.text, "code ABCD-EFGH", "sent as written");
        store.delivered(delivered, None).await.unwrap();
        store.abandon(given_up, "gone").await.unwrap();
        store.delivered(plain, None).await.unwrap();
        let state = store.lock();
        let text = |id: i64| {
            state
                .outbox
                .rows
                .iter()
                .find(|(entry, _)| entry.id == id)
                .map(|(entry, _)| entry.message.text.clone())
                .unwrap()
        };
        assert_eq!(text(delivered), SECRET_REMOVED);
        assert_eq!(text(given_up), SECRET_REMOVED);
        assert_eq!(text(plain), "hello");
    }
}
