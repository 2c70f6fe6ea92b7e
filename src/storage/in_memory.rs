//! In-memory adapters of every storage port: the same behaviour as SQLite,
//! kept in a mutex, for tests and for running the actors without a file.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::ids::{ConfirmationId, ConversationKey, MemberId};
use crate::ports::{
    Acceptance, AnswerPlace, AnswerRefused, ChannelState, ConversationMemory, Decision, Fence,
    HistoryEntry, Inbound, InboundExtras, Inbox, InboxRecord, InboxStatus, OpenConfirmation,
    OutgoingMessage, PendingActions, PendingConfirmation, ProfileFacts, StorageError,
    TelemetryEvent, TelemetrySink, TurnJournal, TurnRecord, UserProfiles,
};

#[derive(Default)]
pub(super) struct State {
    /// Inbox records in acceptance order.
    pub(super) inbox: Vec<InboxRecord>,
    messages: HashMap<ConversationKey, Vec<HistoryEntry>>,
    profiles: HashMap<MemberId, ProfileFacts>,
    pub(super) events: Vec<TelemetryEvent>,
    /// Confirmations in creation order, with their state.
    confirmations: Vec<StoredConfirmation>,
    /// (channel, key) → value.
    channel_state: BTreeMap<(String, String), String>,
    /// Running turns' saved state, by inbox id.
    journal: HashMap<String, serde_json::Value>,
    /// The outbox, in id order (`in_memory_outbox.rs`).
    pub(super) outbox: super::in_memory_outbox::OutboxState,
    /// When each answered or failed message was finished (retention).
    finished_at_ms: HashMap<String, i64>,
    /// Reminders and scheduled tasks (`in_memory_schedules.rs`), beside the inbox and the
    /// outbox their firings write to.
    pub(super) schedules: super::in_memory_schedules::ScheduleState,
}

struct StoredConfirmation {
    confirmation: PendingConfirmation,
    decision: Option<Decision>,
    consumed: bool,
}

#[derive(Default)]
pub struct InMemoryStore {
    state: Mutex<State>,
    /// What the plugins' ports keep (`in_memory_plugins.rs`).
    pub(super) plugins: Mutex<super::in_memory_plugins::PluginState>,
    /// The members' script workflows (`in_memory_scripts.rs`).
    pub(super) script_workflows: Mutex<super::in_memory_scripts::WorkflowState>,
    /// The script runs that ended, oldest first (`in_memory_scripts.rs`).
    pub(super) script_runs: Mutex<Vec<crate::ports::ScriptRun>>,
    /// What the intents engine's ports keep (`in_memory_intents.rs`).
    pub(super) intents: Mutex<super::in_memory_intents::IntentsState>,
    /// The family's notes (`in_memory_notes.rs`).
    pub(super) notes: Mutex<super::in_memory_notes::NotesState>,
    /// The members who joined by invite (`in_memory_members.rs`).
    pub(super) members: Mutex<super::in_memory_members::MembersState>,
    /// Sign-in codes, links, web sessions and member tokens (`in_memory_web_access.rs`).
    pub(super) web_access: Mutex<super::in_memory_web_access::WebAccessState>,
    /// This store's workers and leases: its fenced writes are checked against them.
    coordination: Arc<super::in_memory_coordination::InMemoryCoordination>,
}

fn find_confirmation<'a>(
    state: &'a mut State,
    id: &ConfirmationId,
) -> Option<&'a mut StoredConfirmation> {
    state
        .confirmations
        .iter_mut()
        .find(|stored| stored.confirmation.id == *id)
}

impl InMemoryStore {
    /// The leases this store's fenced writes are checked against (its `Coordination`).
    pub fn coordination(&self) -> Arc<super::in_memory_coordination::InMemoryCoordination> {
        self.coordination.clone()
    }

    /// Every telemetry event recorded so far.
    pub fn events(&self) -> Vec<TelemetryEvent> {
        self.lock().events.clone()
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
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
        state
            .messages
            .entry(turn.conversation_key.clone())
            .or_default()
            .extend(turn.messages.iter().cloned());
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

#[async_trait]
impl ConversationMemory for InMemoryStore {
    async fn recent(
        &self,
        conversation_key: &ConversationKey,
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
        conversation_key: &ConversationKey,
        entries: &[HistoryEntry],
    ) -> Result<(), StorageError> {
        self.lock()
            .messages
            .entry(conversation_key.clone())
            .or_default()
            .extend(entries.iter().cloned());
        Ok(())
    }
}

#[async_trait]
impl UserProfiles for InMemoryStore {
    async fn get(&self, member_id: &MemberId) -> Result<ProfileFacts, StorageError> {
        Ok(self
            .lock()
            .profiles
            .get(member_id)
            .cloned()
            .unwrap_or_else(BTreeMap::new))
    }

    async fn set(
        &self,
        member_id: &MemberId,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        let facts = state.profiles.entry(member_id.clone()).or_default();
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

#[async_trait]
impl ChannelState for InMemoryStore {
    async fn get_state(&self, channel: &str, key: &str) -> Result<Option<String>, StorageError> {
        let state = self.lock();
        Ok(state
            .channel_state
            .get(&(channel.to_owned(), key.to_owned()))
            .cloned())
    }

    async fn put_state(&self, channel: &str, key: &str, value: &str) -> Result<(), StorageError> {
        self.lock()
            .channel_state
            .insert((channel.to_owned(), key.to_owned()), value.to_owned());
        Ok(())
    }

    async fn delete_state(&self, channel: &str, key: &str) -> Result<(), StorageError> {
        self.lock()
            .channel_state
            .remove(&(channel.to_owned(), key.to_owned()));
        Ok(())
    }

    async fn list_state(
        &self,
        channel: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError> {
        Ok(self
            .lock()
            .channel_state
            .iter()
            .filter(|((owner, key), _)| owner == channel && key.starts_with(prefix))
            .map(|((_, key), value)| (key.clone(), value.clone()))
            .collect())
    }
}

#[async_trait]
impl TurnJournal for InMemoryStore {
    async fn load_turn(&self, inbox_id: &str) -> Result<Option<serde_json::Value>, StorageError> {
        Ok(self.lock().journal.get(inbox_id).cloned())
    }

    async fn save_turn_fenced(
        &self,
        inbox_id: &str,
        state: &serde_json::Value,
        fence: Option<&Fence>,
    ) -> Result<(), StorageError> {
        let _held = self.coordination.hold(fence)?;
        let mut locked = self.lock();
        // As SQLite's foreign key: only a stored message has a turn.
        if !locked
            .inbox
            .iter()
            .any(|record| record.inbound.id == inbox_id)
        {
            return Err(StorageError::Database(format!(
                "no inbox message {inbox_id:?} to journal a turn for"
            )));
        }
        locked.journal.insert(inbox_id.to_string(), state.clone());
        Ok(())
    }
}

#[async_trait]
impl crate::ports::Retention for InMemoryStore {
    async fn prune(
        &self,
        what: crate::ports::Prunable,
        before_ms: i64,
        batch: usize,
    ) -> Result<usize, StorageError> {
        use crate::ports::Prunable;
        let mut state = self.lock();
        let state = &mut *state;
        let mut left = batch;
        let mut take = |old: bool| {
            let pruned = old && left > 0;
            if pruned {
                left -= 1;
            }
            !pruned
        };
        match what {
            Prunable::History => {
                for entries in state.messages.values_mut() {
                    entries.retain(|entry| take(entry.created_at_ms < before_ms));
                }
            }
            Prunable::Telemetry | Prunable::LlmCalls => state.events.retain(|event| {
                let (at, is_call) = match event {
                    TelemetryEvent::LlmCall(call) => (call.at_ms, true),
                    TelemetryEvent::Stage { at_ms, .. } => (*at_ms, false),
                };
                take(at < before_ms && is_call == (what == Prunable::LlmCalls))
            }),
            Prunable::FinishedInbox => {
                let finished = &state.finished_at_ms;
                let old: Vec<String> = state
                    .inbox
                    .iter()
                    .filter(|record| {
                        finished
                            .get(&record.inbound.id)
                            .is_some_and(|at| *at < before_ms)
                    })
                    .take(batch)
                    .map(|record| record.inbound.id.clone())
                    .collect();
                state
                    .inbox
                    .retain(|record| !old.contains(&record.inbound.id));
                state
                    .confirmations
                    .retain(|stored| !old.contains(&stored.confirmation.inbox_id));
                left = batch - old.len();
            }
            Prunable::DeliveredOutbox => {
                left = batch - state.outbox.prune_settled(before_ms, batch);
            }
            Prunable::FinishedPlans => {
                left = batch - self.prune_finished_plans(before_ms, batch);
            }
            Prunable::SettledFirings => {
                left = batch - state.schedules.prune_settled_firings(before_ms, batch);
            }
            Prunable::EndedSchedules => {
                left = batch - state.schedules.prune_ended_schedules(before_ms, batch);
            }
            Prunable::ScriptRuns => {
                left = batch - self.prune_script_runs(before_ms, batch);
            }
        }
        Ok(batch - left)
    }
}
