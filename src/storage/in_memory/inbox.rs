//! The in-memory `Inbox`: messages in acceptance order, in the store's main mutex beside the
//! outbox and the journal, so a turn's end is one change here too.

use async_trait::async_trait;

use super::{InMemoryStore, State};
use crate::ids::ConversationKey;
use crate::ports::{
    Acceptance, Fence, Inbound, InboundExtras, Inbox, InboxRecord, InboxStatus, OutgoingMessage,
    StorageError, TurnRecord,
};

/// The message `inbox_id` while it waits for an answer; the same error as SQLite otherwise.
pub(super) fn find_waiting<'a>(
    state: &'a mut State,
    inbox_id: &str,
) -> Result<&'a mut InboxRecord, StorageError> {
    state
        .inbox
        .iter_mut()
        .find(|record| {
            record.inbound.id == inbox_id
                && matches!(
                    record.status,
                    InboxStatus::Accepted | InboxStatus::Suspended
                )
        })
        .ok_or_else(|| {
            StorageError::Corrupt(format!(
                "inbox message {inbox_id:?} is unknown or not waiting for an answer"
            ))
        })
}

impl State {
    /// Store `inbound` as accepted unless its id or platform event was accepted before.
    pub(super) fn accept_inbound(&mut self, inbound: &Inbound) -> Acceptance {
        let duplicate = self.inbox.iter().find(|record| {
            record.inbound.id == inbound.id
                || (record.inbound.conversation.channel() == inbound.conversation.channel()
                    && record.inbound.platform_event_id.is_some()
                    && record.inbound.platform_event_id == inbound.platform_event_id)
        });
        if let Some(existing) = duplicate {
            return Acceptance::Duplicate(Box::new(self.read(existing)));
        }
        self.inbox.push(InboxRecord {
            inbound: inbound.clone(),
            status: InboxStatus::Accepted,
            attempts: 0,
            next_attempt_at_ms: None,
            reply: None,
            error: None,
            journaled: false,
        });
        Acceptance::New
    }

    /// `record` as a read returns it: whether its turn has a journal now.
    fn read(&self, record: &InboxRecord) -> InboxRecord {
        InboxRecord {
            journaled: self.journal.contains_key(&record.inbound.id),
            ..record.clone()
        }
    }
}

#[async_trait]
impl Inbox for InMemoryStore {
    async fn accept(&self, inbound: &Inbound) -> Result<Acceptance, StorageError> {
        Ok(self.lock().accept_inbound(inbound))
    }

    async fn unanswered(&self) -> Result<Vec<InboxRecord>, StorageError> {
        let state = self.lock();
        Ok(state
            .inbox
            .iter()
            .filter(|record| record.status == InboxStatus::Accepted)
            .map(|record| state.read(record))
            .collect())
    }

    async fn unanswered_in(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Vec<InboxRecord>, StorageError> {
        let state = self.lock();
        Ok(state
            .inbox
            .iter()
            .filter(|record| {
                record.status == InboxStatus::Accepted
                    && record.inbound.conversation == *conversation
            })
            .map(|record| state.read(record))
            .collect())
    }

    async fn complete_fenced(
        &self,
        inbox_id: &str,
        turn: &TurnRecord,
        fence: Option<&Fence>,
    ) -> Result<Option<i64>, StorageError> {
        let _held = self.coordination.hold(fence)?;
        let mut state = self.lock();
        let record = find_waiting(&mut state, inbox_id)?;
        record.status = InboxStatus::Answered;
        record.reply = Some(turn.reply.clone());
        record.error = None;
        state.journal.remove(inbox_id);
        state
            .finished_at_ms
            .insert(inbox_id.to_string(), crate::ports::now_ms());
        state.remember(&turn.conversation_key, &turn.messages);
        Ok(turn
            .outgoing
            .as_ref()
            .map(|message| state.outbox.push(message)))
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

    async fn store_transcript(
        &self,
        inbox_id: &str,
        text: &str,
        extras: &InboundExtras,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        let record = find_waiting(&mut state, inbox_id)?;
        record.inbound.text = text.to_string();
        record.inbound.extras = extras.clone();
        Ok(())
    }

    async fn give_up_fenced(
        &self,
        inbox_id: &str,
        error: &str,
        reply: &str,
        outgoing: Option<&OutgoingMessage>,
        fence: Option<&Fence>,
    ) -> Result<Option<i64>, StorageError> {
        let _held = self.coordination.hold(fence)?;
        let mut state = self.lock();
        let record = find_waiting(&mut state, inbox_id)?;
        record.status = InboxStatus::Failed;
        record.error = Some(error.to_string());
        record.reply = Some(reply.to_string());
        state.journal.remove(inbox_id);
        state
            .finished_at_ms
            .insert(inbox_id.to_string(), crate::ports::now_ms());
        Ok(outgoing.map(|message| state.outbox.push(message)))
    }

    async fn get(&self, inbox_id: &str) -> Result<Option<InboxRecord>, StorageError> {
        let state = self.lock();
        Ok(state
            .inbox
            .iter()
            .find(|record| record.inbound.id == inbox_id)
            .map(|record| state.read(record)))
    }

    async fn knows_event(
        &self,
        channel: &str,
        platform_event_id: &str,
    ) -> Result<bool, StorageError> {
        Ok(self.lock().inbox.iter().any(|record| {
            record.inbound.conversation.channel() == channel
                && record.inbound.platform_event_id.as_deref() == Some(platform_event_id)
        }))
    }

    async fn ping(&self) -> Result<(), StorageError> {
        Ok(())
    }
}
