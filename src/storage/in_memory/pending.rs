//! The in-memory `PendingActions`: confirmations in creation order, in the store's main mutex
//! beside the inbox message each suspends and the outbox its prompts go to.

use async_trait::async_trait;

use super::inbox::find_waiting;
use super::{InMemoryStore, State, StoredConfirmation};
use crate::ids::{ConfirmationId, MemberId};
use crate::ports::{
    AnswerPlace, AnswerRefused, Decision, Fence, InboxStatus, OpenConfirmation, OutgoingMessage,
    PendingActions, PendingConfirmation, StorageError,
};

fn find_confirmation<'a>(
    state: &'a mut State,
    id: &ConfirmationId,
) -> Option<&'a mut StoredConfirmation> {
    state
        .confirmations
        .iter_mut()
        .find(|stored| stored.confirmation.id == *id)
}

#[async_trait]
impl PendingActions for InMemoryStore {
    async fn suspend_fenced(
        &self,
        confirmation: &PendingConfirmation,
        prompts: &[OutgoingMessage],
        fence: Option<&Fence>,
    ) -> Result<Vec<i64>, StorageError> {
        let _held = self.coordination.hold(fence)?;
        let mut state = self.lock();
        if state
            .confirmations
            .iter()
            .any(|stored| stored.confirmation.id == confirmation.id)
        {
            return Err(StorageError::Database(format!(
                "confirmation id {:?} is already used",
                confirmation.id
            )));
        }
        let record = find_waiting(&mut state, &confirmation.inbox_id)?;
        record.status = InboxStatus::Suspended;
        state.journal.remove(&confirmation.inbox_id);
        state.confirmations.push(StoredConfirmation {
            confirmation: confirmation.clone(),
            decision: None,
            consumed: false,
        });
        Ok(prompts
            .iter()
            .map(|message| state.outbox.push(message))
            .collect())
    }

    async fn answer(
        &self,
        confirmation_id: &ConfirmationId,
        member_id: &MemberId,
        place: &AnswerPlace,
        approve: bool,
        now_ms: i64,
    ) -> Result<Result<PendingConfirmation, AnswerRefused>, StorageError> {
        let mut state = self.lock();
        let Some(stored) = find_confirmation(&mut state, confirmation_id) else {
            return Ok(Err(AnswerRefused::Unknown));
        };
        // Asked elsewhere: as if it did not exist.
        if !stored.confirmation.admits_place(place) {
            return Ok(Err(AnswerRefused::Unknown));
        }
        if !stored.confirmation.answerable_by(member_id) {
            return Ok(Err(AnswerRefused::NotYours));
        }
        match stored.decision {
            Some(Decision::Expired) => return Ok(Err(AnswerRefused::Expired)),
            Some(_) if !stored.consumed => return Ok(Err(AnswerRefused::InProgress)),
            Some(_) => return Ok(Err(AnswerRefused::AlreadyAnswered)),
            None if stored.confirmation.expires_at_ms <= now_ms => {
                return Ok(Err(AnswerRefused::Expired));
            }
            None => {}
        }
        stored.decision = Some(if approve {
            Decision::Approved
        } else {
            Decision::Denied
        });
        Ok(Ok(stored.confirmation.clone()))
    }

    async fn expire_due(&self, now_ms: i64) -> Result<Vec<PendingConfirmation>, StorageError> {
        let mut state = self.lock();
        let mut expired = Vec::new();
        for stored in state.confirmations.iter_mut() {
            if stored.decision.is_none() && stored.confirmation.expires_at_ms <= now_ms {
                stored.decision = Some(Decision::Expired);
                expired.push(stored.confirmation.clone());
            }
        }
        // The same order as SQLite's: creation time, then id.
        expired.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(expired)
    }

    async fn consume(
        &self,
        confirmation_id: &ConfirmationId,
    ) -> Result<Option<Decision>, StorageError> {
        let mut state = self.lock();
        let Some(stored) = find_confirmation(&mut state, confirmation_id) else {
            return Ok(None);
        };
        if stored.consumed || stored.decision.is_none() {
            return Ok(None);
        }
        stored.consumed = true;
        Ok(stored.decision)
    }

    async fn interrupted(&self) -> Result<Vec<PendingConfirmation>, StorageError> {
        let state = self.lock();
        let suspended = |inbox_id: &str| {
            state.inbox.iter().any(|record| {
                record.inbound.id == inbox_id && record.status == InboxStatus::Suspended
            })
        };
        // The latest confirmation of its message (creation time, then id).
        let latest = |stored: &StoredConfirmation| {
            !state.confirmations.iter().any(|other| {
                other.confirmation.inbox_id == stored.confirmation.inbox_id
                    && (other.confirmation.created_at_ms, &other.confirmation.id)
                        > (stored.confirmation.created_at_ms, &stored.confirmation.id)
            })
        };
        let mut interrupted: Vec<PendingConfirmation> = state
            .confirmations
            .iter()
            .filter(|stored| {
                stored.consumed && suspended(&stored.confirmation.inbox_id) && latest(stored)
            })
            .map(|stored| stored.confirmation.clone())
            .collect();
        interrupted.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(interrupted)
    }

    async fn waiting_for(
        &self,
        inbox_id: &str,
    ) -> Result<Option<PendingConfirmation>, StorageError> {
        // The newest by creation time, then id, as SQLite's.
        Ok(self
            .lock()
            .confirmations
            .iter()
            .filter(|stored| stored.decision.is_none() && stored.confirmation.inbox_id == inbox_id)
            .max_by(|a, b| {
                (a.confirmation.created_at_ms, &a.confirmation.id)
                    .cmp(&(b.confirmation.created_at_ms, &b.confirmation.id))
            })
            .map(|stored| stored.confirmation.clone()))
    }

    async fn open(&self) -> Result<Vec<OpenConfirmation>, StorageError> {
        let mut open: Vec<OpenConfirmation> = self
            .lock()
            .confirmations
            .iter()
            .filter(|stored| !stored.consumed)
            .map(|stored| OpenConfirmation {
                confirmation: stored.confirmation.clone(),
                decision: stored.decision,
            })
            .collect();
        // The same order as SQLite's: creation time, then id.
        open.sort_by(|a, b| {
            (a.confirmation.created_at_ms, &a.confirmation.id)
                .cmp(&(b.confirmation.created_at_ms, &b.confirmation.id))
        });
        Ok(open)
    }
}
