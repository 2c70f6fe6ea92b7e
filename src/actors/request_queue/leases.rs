//! Conversations shared between the workers of one database. A conversation's turns run
//! on the worker holding its lease (`conversation:<key>`, `workers.rs`), one at a time and
//! in order; any worker accepts a message (its row is stored first), and one that does not
//! hold the conversation wakes the others, so the holder (or a worker free to take it)
//! runs it from the inbox.
//!
//! A take that finds the conversation held by another worker is believed for
//! `HELD_ELSEWHERE_KNOWN`: a message of it stored here meanwhile wakes the holder without
//! a take, and a wake-up for it (this worker's own among them) takes nothing here; the
//! holder runs it, or takes it again after handing it back, and a dead holder's
//! conversations are found by `look_for_orphans`.
//!
//! A message stored while its conversation is held here is stored with the conversation's
//! unanswered messages read in the same statement (`Inbox::accept_reading`, `push_stored`),
//! the reading a new turn of a held conversation is queued after.
//!
//! A lane runs only while its lease is held: a turn for a conversation not held waits in
//! `ConversationLeases::waiting` while the lease is taken, and is dropped when another
//! worker holds it (the holder runs the stored row; a confirmation's turn is found
//! answered by its holder). A lane that stays empty for `IDLE_HELD` hands its lease back
//! (the member's next message, which usually comes sooner, runs here without taking the
//! lease again), then reads the conversation's unanswered rows once more, so a message
//! stored meanwhile by another worker, who found the lease held, is never left behind. A worker killed outright loses
//! its leases when `LEASE_TIME` runs out; `look_for_orphans` (every `ORPHANS_LOOKED_FOR`)
//! finds the conversations with unanswered messages and nobody holding them.
//!
//! A lease is held at a generation (`ports::Fence`): the turns of the conversation run
//! under it (`TurnLease`), their journal writes and their end are conditional on it, and a
//! turn whose write finds the lease passed on stops, its end stored by nobody here
//! (`Finished::Moved`). When this worker stops trusting its leases (no heartbeat in time,
//! `workers::Tenure`), it lets go of every conversation at once: what waits in their lanes
//! goes (it is stored), running turns stop at their next step, and nothing is claimed until
//! a heartbeat succeeds again; a conversation taken again gets a new generation.
//!
//! What a member sends to a running turn reaches it wherever it runs: a message another
//! worker stored is handed to the question the turn asks that member (and its row closed),
//! and a `/cancel` taken by another worker wakes the holder to withdraw the question, then
//! runs in the conversation's lane once that worker claimed it (`cancelling.rs`).
//!
//! A confirmation answered on a worker not holding its conversation wakes the holder with
//! `Conversation`, then `Confirmed`; only the latter makes the holder read the answered
//! confirmations (`resume_answered`), so a message stored elsewhere costs it no such read.
//! One missed (or sent by a worker that does not know `Confirmed`) is found within
//! `STUCK_CHECK_EVERY`.
//!
//! Without a worker (a test's own stores), every conversation is this process's.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, StreamHandler};

use super::noted_questions::{member_in, read_member_in};
use super::{QueuedTurn, RequestQueue};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{Fence, InboxRecord, StorageError, Tenure, TurnRecord, WakeTopic, WakeUp};
use crate::turn::TurnLease;
use crate::workers::Worker;

/// How often a worker looks for conversations whose messages nobody runs (their worker
/// died): within seconds of its lease running out, without polling tightly.
pub const ORPHANS_LOOKED_FOR: Duration = Duration::from_secs(3);
/// A claim that failed on the database is tried again after this.
const CLAIM_RETRY: Duration = Duration::from_secs(1);
/// How long a conversation whose lane emptied stays held before its lease goes back.
const IDLE_HELD: Duration = Duration::from_secs(2);
/// How long a take that found a conversation held by another worker is believed: a
/// message of it stored here meanwhile only wakes the holder, without a take of its own.
const HELD_ELSEWHERE_KNOWN: Duration = Duration::from_secs(2);
/// How long a turn that ended here is remembered: a reading of the conversation begun
/// before its end was stored still lists its message, which must not run again.
const ENDED_REMEMBERED: Duration = Duration::from_secs(600);

/// Which conversations this worker holds, takes or hands back.
#[derive(Default)]
pub(super) struct ConversationLeases {
    worker: Option<Arc<Worker>>,
    /// The conversations held, each at its lease's generation, in term `term`.
    held: HashMap<ConversationKey, i64>,
    /// This worker's trust in its leases as last seen (`None` without a worker).
    tenure: Option<tokio::sync::watch::Receiver<Tenure>>,
    term: u64,
    claiming: HashSet<ConversationKey>,
    releasing: HashSet<ConversationKey>,
    /// Conversations whose last turn's end is being stored: not handed back before.
    settling: HashMap<ConversationKey, usize>,
    /// Turns of conversations not held (yet), in the order they came.
    waiting: HashMap<ConversationKey, Vec<QueuedTurn>>,
    /// Answers other workers stored to questions asked here, by inbox id: closed with the
    /// asking turn's next reply (their sender waits for it there).
    answers_from_elsewhere: HashMap<String, crate::ports::Inbound>,
    /// The messages whose turns ended here lately (answered, asked, given up), by inbox
    /// id, with when.
    ended_here: HashMap<String, tokio::time::Instant>,
    /// Held conversations whose lane emptied, with when it last did; those with a hand-back
    /// check armed are in `hand_back_armed`.
    idle_since: HashMap<ConversationKey, tokio::time::Instant>,
    hand_back_armed: HashSet<ConversationKey>,
    /// Conversations a take here found held by another worker, with when (believed for
    /// `HELD_ELSEWHERE_KNOWN`): a message of one stored here wakes the holder without a
    /// take, and a wake-up for one takes nothing here (the holder runs it, or takes it
    /// again after handing it back; a dead holder's are found by `look_for_orphans`).
    seen_held_elsewhere: HashMap<ConversationKey, tokio::time::Instant>,
}

impl ConversationLeases {
    pub(super) fn new(worker: Option<Arc<Worker>>) -> Self {
        let tenure = worker.as_ref().map(|worker| worker.tenure());
        let term = tenure.as_ref().map_or(0, |tenure| tenure.borrow().term);
        ConversationLeases {
            worker,
            tenure,
            term,
            ..Default::default()
        }
    }

    /// Whether this worker may claim conversations now: it trusts its leases (always
    /// without a worker).
    fn may_claim(&self) -> bool {
        self.tenure
            .as_ref()
            .is_none_or(|tenure| tenure.borrow().trusted())
    }

    /// The lease a turn of `key` runs under: `None` without a worker, or when `key` is not
    /// held here.
    pub(super) fn turn_lease(&self, key: &ConversationKey) -> Option<TurnLease> {
        let generation = *self.held.get(key)?;
        let tenure = self.tenure.clone()?;
        let fence = Fence {
            lease: lease_name(key),
            generation,
        };
        Some(TurnLease::new(fence, tenure, self.term))
    }

    /// Whether this process is one worker among others of its database.
    pub(super) fn among_workers(&self) -> bool {
        self.worker.is_some()
    }

    pub(super) fn settling(&mut self, key: &ConversationKey) {
        *self.settling.entry(key.clone()).or_default() += 1;
    }

    pub(super) fn settled(&mut self, key: &ConversationKey) {
        if let Some(count) = self.settling.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                self.settling.remove(key);
            }
        }
    }

    fn busy(&self, key: &ConversationKey) -> bool {
        self.claiming.contains(key) || self.releasing.contains(key)
    }

    /// Whether a take here lately found `key` held by another worker.
    fn seen_held_elsewhere(&self, key: &ConversationKey) -> bool {
        self.seen_held_elsewhere
            .get(key)
            .is_some_and(|at| at.elapsed() < HELD_ELSEWHERE_KNOWN)
    }

    fn saw_held_elsewhere(&mut self, key: &ConversationKey) {
        let seen = &mut self.seen_held_elsewhere;
        if seen.len() % 128 == 127 {
            seen.retain(|_, at| at.elapsed() < HELD_ELSEWHERE_KNOWN);
        }
        seen.insert(key.clone(), tokio::time::Instant::now());
    }
}

fn lease_name(key: &ConversationKey) -> String {
    format!("conversation:{key}")
}

impl RequestQueue {
    /// Whether the turn of inbox message `inbox_id` is here already: waiting, running or
    /// waiting for its retry.
    fn knows_turn(&self, key: &ConversationKey, inbox_id: &str) -> bool {
        self.leases.ended_here.contains_key(inbox_id)
            || self.lanes.any_waiting(key, |turn| {
                turn.inbound.id == inbox_id && turn.resume.is_none()
            })
            || self
                .running
                .get(key)
                .is_some_and(|running| running.inbound.id == inbox_id)
    }

    /// The turn of message `inbox_id` ended here for good (its end stored or being
    /// stored): a reading of the inbox that still lists it does not queue it again.
    pub(super) fn turn_ended_here(&mut self, inbox_id: &str) {
        if self.leases.worker.is_none() {
            return;
        }
        let now = tokio::time::Instant::now();
        let ended = &mut self.leases.ended_here;
        if ended.len() % 128 == 127 {
            ended.retain(|_, at| now.duration_since(*at) < ENDED_REMEMBERED);
        }
        ended.insert(inbox_id.to_owned(), now);
    }

    /// Queue a new `turn`. Alone on the database, in its lane at once. Among workers, it
    /// waits while the conversation's unanswered messages are read (when held here) or
    /// its lease is taken, so the lane runs them in the order they were stored, whichever
    /// worker stored them.
    pub(super) fn push_turn(&mut self, turn: QueuedTurn, ctx: &mut Context<Self>) {
        let key = turn.inbound.conversation.clone();
        if self.leases.worker.is_none() {
            self.lanes.push(&key, turn);
            return;
        }
        if turn.resume.is_none() && self.knows_turn(&key, &turn.inbound.id) {
            return;
        }
        self.leases
            .waiting
            .entry(key.clone())
            .or_default()
            .push(turn);
        if self.leases.held.contains_key(&key) {
            self.reload(key, ctx);
        } else if self.leases.busy(&key) {
            // The claim under way queues it.
        } else if self.leases.seen_held_elsewhere(&key) && !self.cancels.contains_key(&key) {
            // Its holder runs the stored row, woken; no take to find the same again.
            self.held_elsewhere(&key, ctx);
        } else {
            self.claim(key, ctx);
        }
    }

    /// Whether this process shares its database with other workers.
    pub(super) fn leases_shared(&self) -> bool {
        self.leases.among_workers()
    }

    /// The generation `key` is held at here, when this worker holds it among others:
    /// a message of it stored now is stored with its conversation's unanswered messages
    /// read (`Inbox::accept_reading`, for `push_stored`).
    pub(super) fn held_at(&self, key: &ConversationKey) -> Option<i64> {
        self.leases.held.get(key).copied()
    }

    /// Queue the `turn` of a message just stored. `read`: the conversation's unanswered
    /// messages, read in the statement that stored it while this worker held the
    /// conversation at that generation. Held at it still, that reading is the one
    /// `push_turn` would make again (the lease's generation unchanged, nobody else ran the
    /// conversation meanwhile, and what ended here since is known here), so it is queued
    /// at once; else `push_turn`.
    pub(super) fn push_stored(
        &mut self,
        turn: QueuedTurn,
        read: Option<(i64, Vec<InboxRecord>)>,
        ctx: &mut Context<Self>,
    ) {
        let key = turn.inbound.conversation.clone();
        match read {
            Some((generation, records)) if self.held_at(&key) == Some(generation) => {
                if self.knows_turn(&key, &turn.inbound.id) {
                    return;
                }
                // Stored by the statement that read, while held at `generation`: a run of
                // it elsewhere needs the lease at another generation, so its first run
                // here under this one finds no journal (a run under a generation that has
                // passed writes nothing: every journal write and its end are fenced).
                let mut turn = turn;
                turn.unjournaled = Some(Some(generation));
                self.leases
                    .waiting
                    .entry(key.clone())
                    .or_default()
                    .push(turn);
                self.queue_stored(&key, records, Some(generation));
            }
            _ => self.push_turn(turn, ctx),
        }
    }

    /// Into the lane of a held conversation, unless it is there already.
    fn queue_here(&mut self, turn: QueuedTurn) {
        let key = turn.inbound.conversation.clone();
        if turn.resume.is_none() && self.knows_turn(&key, &turn.inbound.id) {
            return;
        }
        self.lanes.push(&key, turn);
    }

    /// Read a held conversation's unanswered messages again and queue those not here
    /// yet, with the turns waiting for them, in the order they were stored.
    fn reload(&mut self, key: ConversationKey, ctx: &mut Context<Self>) {
        let inbox = self.inbox.clone();
        let wanted = key.clone();
        // Read under this generation: what it says of the journal holds for it.
        let generation = self.held_at(&key);
        ctx.spawn(
            async move { inbox.unanswered_in(&wanted).await }
                .into_actor(self)
                .map(move |records, act, ctx| {
                    // Handed back meanwhile: the claim after the release queues them.
                    if !act.leases.held.contains_key(&key) {
                        return;
                    }
                    match records {
                        Ok(records) => act.queue_stored(&key, records, generation),
                        Err(error) => {
                            tracing::warn!(conversation = %key, %error, "conversation not read; its turns wait");
                            let waiting = act.leases.waiting.remove(&key).unwrap_or_default();
                            for turn in waiting {
                                act.queue_here(turn);
                            }
                        }
                    }
                    act.pump(ctx);
                    act.release_if_idle(&key, ctx);
                }),
        );
    }

    /// `records` (stored, oldest first) and the turns waiting for `key`, queued in its lane;
    /// a message another worker stored that answers a question asked here goes to it.
    /// `generation`: the lease's generation `records` were read under, after its take. Held
    /// at it still, a record read without a journal and never tried has none for its first
    /// run under it (`QueuedTurn::unjournaled`): a run under an earlier generation journaled
    /// before the take (and the reading saw it) or is refused, and this generation's runs
    /// are this worker's, which runs each message once at a time (`knows_turn`).
    fn queue_stored(
        &mut self,
        key: &ConversationKey,
        records: Vec<InboxRecord>,
        generation: Option<i64>,
    ) {
        let fresh_under = generation.filter(|generation| self.held_at(key) == Some(*generation));
        let mut waiting = self.leases.waiting.remove(key).unwrap_or_default();
        for record in records {
            let id = &record.inbound.id;
            if self.leases.answers_from_elsewhere.contains_key(id) {
                continue;
            }
            let stored_elsewhere =
                !self.knows_turn(key, id) && !waiting.iter().any(|turn| turn.inbound.id == *id);
            if stored_elsewhere && self.answer_open_question(&record.inbound, None).is_some() {
                let id = id.clone();
                self.leases
                    .answers_from_elsewhere
                    .insert(id, record.inbound);
                continue;
            }
            let fresh = !record.journaled && record.attempts == 0;
            // A turn submitted here keeps its listener.
            let mut turn = match waiting
                .iter()
                .position(|turn| turn.resume.is_none() && turn.inbound.id == record.inbound.id)
            {
                Some(index) => waiting.remove(index),
                None => QueuedTurn::new(record.inbound, record.attempts),
            };
            if let Some(generation) = fresh_under
                && fresh
                && turn.unjournaled.is_none()
            {
                turn.unjournaled = Some(Some(generation));
            }
            self.queue_here(turn);
        }
        for turn in waiting {
            self.queue_here(turn);
        }
    }

    /// Take `key`'s lease; when taken, run its unanswered messages (and the turns waiting
    /// for it) here; when another worker holds it, leave them to that one.
    pub(super) fn claim(&mut self, key: ConversationKey, ctx: &mut Context<Self>) {
        let Some(worker) = self.leases.worker.clone() else {
            return;
        };
        // A turn of an earlier term still running here ends first; nothing is claimed while
        // this worker does not trust its leases (`tenure_changed` claims again).
        if self.leases.held.contains_key(&key)
            || self.leases.busy(&key)
            || self.running.contains_key(&key)
            || !self.leases.may_claim()
        {
            return;
        }
        self.leases.claiming.insert(key.clone());
        let inbox = self.inbox.clone();
        let wanted = key.clone();
        let term = self.leases.term;
        let work = async move {
            // Taken anew: whatever this worker held of it before is not trusted.
            let Some(generation) = worker.take(&lease_name(&wanted), None).await? else {
                return Ok(None);
            };
            let records = inbox.unanswered_in(&wanted).await?;
            Ok::<_, StorageError>(Some((generation, records)))
        };
        ctx.spawn(work.into_actor(self).map(move |claimed, act, ctx| {
            act.leases.claiming.remove(&key);
            // Taken in a term that has ended: as if not taken (the lease runs out, or the
            // next claim takes it at a new generation).
            let claimed = match claimed {
                Ok(Some(_)) if act.leases.term != term => Err(StorageError::Database(
                    "the lease was taken while this worker stopped trusting its leases".into(),
                )),
                other => other,
            };
            match claimed {
                Ok(Some((generation, records))) => act.claimed(key, generation, records, ctx),
                Ok(None) => {
                    act.leases.saw_held_elsewhere(&key);
                    act.held_elsewhere(&key, ctx);
                }
                Err(error) => {
                    tracing::warn!(conversation = %key, %error, "conversation not claimed; trying again");
                    ctx.run_later(CLAIM_RETRY, move |act, ctx| {
                        if act.leases.waiting.contains_key(&key) {
                            act.claim(key, ctx);
                        }
                    });
                }
            }
        }));
    }

    fn claimed(
        &mut self,
        key: ConversationKey,
        generation: i64,
        records: Vec<InboxRecord>,
        ctx: &mut Context<Self>,
    ) {
        self.leases.held.insert(key.clone(), generation);
        self.leases.seen_held_elsewhere.remove(&key);
        tracing::debug!(conversation = %key, generation, unanswered = records.len(), "conversation taken");
        self.queue_stored(&key, records, Some(generation));
        self.run_cancels_when_free(&key, ctx);
        // Answered confirmations of this conversation resume here now.
        self.resume_answered(ctx);
        self.pump(ctx);
        self.release_if_idle(&key, ctx);
    }

    fn held_elsewhere(&mut self, key: &ConversationKey, ctx: &mut Context<Self>) {
        let dropped = self.leases.waiting.remove(key).unwrap_or_default();
        for turn in &dropped {
            if let Some(resume) = &turn.resume {
                self.resuming.remove(&resume.confirmation.id);
            }
        }
        if !dropped.is_empty() {
            tracing::debug!(conversation = %key, turns = dropped.len(), "conversation held by another worker");
            self.wake(WakeUp::new(WakeTopic::Conversation, key.as_str()), ctx);
        }
        // An answered confirmation among them: the holder reads the answered ones.
        if dropped.iter().any(|turn| turn.resume.is_some()) {
            self.wake(WakeUp::new(WakeTopic::Confirmed, key.as_str()), ctx);
        }
        // A `/cancel` runs here once the holder's turn ended and its lease came back.
        if self.cancels.contains_key(key) {
            let key = key.clone();
            ctx.run_later(CLAIM_RETRY, move |act, ctx| {
                if act.cancels.contains_key(&key) {
                    act.claim(key, ctx);
                }
            });
        }
    }

    /// Whether `/cancel` in `key` must wait for its lease first (among workers, when
    /// another may run the conversation): claimed now, with the holder told to withdraw
    /// `member_id`'s question.
    pub(super) fn cancel_needs_lease(
        &mut self,
        key: &ConversationKey,
        member_id: &MemberId,
        ctx: &mut Context<Self>,
    ) -> bool {
        if self.runs_here(key) {
            return false;
        }
        // Whether a question is withdrawn elsewhere, for what `/cancel` answers; then the
        // holder is told, and the lease claimed for the rest.
        let asked = self.asked_elsewhere(key, member_id);
        let (key, member_id) = (key.clone(), member_id.clone());
        ctx.spawn(asked.into_actor(self).map(move |asked, act, ctx| {
            if matches!(asked, Ok(Some(_))) {
                act.question_withdrawn_elsewhere(&key, &member_id);
            }
            let subject = member_in(&key, &member_id);
            act.wake(WakeUp::new(WakeTopic::Cancel, subject), ctx);
            act.claim(key, ctx);
        }));
        true
    }

    /// `key`'s lease went to another worker while a turn ran (or this worker stopped
    /// trusting it): nothing of it runs here any more (the holder runs its stored
    /// messages).
    pub(super) fn conversation_moved(&mut self, key: &ConversationKey) {
        self.leases.held.remove(key);
        for turn in self.lanes.finish_and_drop(key) {
            if let Some(resume) = &turn.resume {
                self.resuming.remove(&resume.confirmation.id);
            }
        }
    }

    /// This worker's trust in its leases changed. A new term: every conversation held
    /// goes at once, what waits in their lanes dropped (it is stored; the worker taking the
    /// conversation runs it) and running turns left to stop at their next step. Trusted
    /// (again): the conversations with turns waiting here are claimed.
    fn tenure_changed(&mut self, tenure: Tenure, ctx: &mut Context<Self>) {
        if tenure.term != self.leases.term {
            self.leases.term = tenure.term;
            let lost: Vec<ConversationKey> = self.leases.held.drain().map(|(key, _)| key).collect();
            if !lost.is_empty() {
                tracing::warn!(
                    conversations = lost.len(),
                    term = tenure.term,
                    "this worker no longer trusts its leases: its conversations go to whichever worker takes them"
                );
            }
            for key in lost {
                for turn in self.lanes.drop_waiting(&key) {
                    if let Some(resume) = &turn.resume {
                        self.resuming.remove(&resume.confirmation.id);
                    }
                }
            }
        }
        if tenure.trusted_until.is_some() {
            let waiting: Vec<ConversationKey> = self.leases.waiting.keys().cloned().collect();
            for key in waiting {
                self.claim(key, ctx);
            }
        }
    }

    /// A turn of `key` ended while the conversation is not held here (its lease lost
    /// meanwhile): turns that came for it meanwhile are claimed again.
    pub(super) fn claim_if_waiting(&mut self, key: &ConversationKey, ctx: &mut Context<Self>) {
        if self.leases.worker.is_some()
            && !self.leases.held.contains_key(key)
            && self.leases.waiting.contains_key(key)
        {
            self.claim(key.clone(), ctx);
        }
    }

    /// Whether `key` runs here: always alone on the database; among workers, while held.
    pub(super) fn runs_here(&self, key: &ConversationKey) -> bool {
        self.leases.worker.is_none() || self.leases.held.contains_key(key)
    }

    /// A reply of a turn answering message `inbox_id`: when that message is an answer
    /// another worker stored, its row is answered with `reply` (the turn that asked keeps
    /// the history), so no worker runs it as a turn and its sender hears the reply.
    pub(super) fn close_answer_from_elsewhere(
        &mut self,
        inbox_id: &str,
        reply: &str,
        ctx: &mut Context<Self>,
    ) {
        let Some(inbound) = self.leases.answers_from_elsewhere.remove(inbox_id) else {
            return;
        };
        let inbox = self.inbox.clone();
        let turn = TurnRecord {
            conversation_key: inbound.conversation.clone(),
            messages: Vec::new(),
            reply: reply.to_owned(),
            outgoing: None,
        };
        ctx.spawn(
            async move { (inbox.complete(&inbound.id, &turn).await, inbound) }
                .into_actor(self)
                .map(|(completed, inbound), act, _ctx| match completed {
                    Ok(_) => act.turn_stored(&inbound, None),
                    Err(error) => {
                        tracing::warn!(inbox_id = %inbound.id, %error, "answer to a question not closed")
                    }
                }),
        );
    }

    /// Whether `key` is held here with nothing of it running, queued or being settled.
    fn idle(&self, key: &ConversationKey) -> bool {
        self.leases.held.contains_key(key)
            && !self.lanes.has_lane(key)
            && !self.running.contains_key(key)
            && !self.cancels.contains_key(key)
            && !self.leases.waiting.contains_key(key)
            && !self.leases.settling.contains_key(key)
    }

    /// A conversation whose lane emptied: its lease goes back once it stayed idle for
    /// `IDLE_HELD` (`hand_back_if_idle`).
    pub(super) fn release_if_idle(&mut self, key: &ConversationKey, ctx: &mut Context<Self>) {
        if self.leases.worker.is_none() || !self.idle(key) {
            return;
        }
        self.leases
            .idle_since
            .insert(key.clone(), tokio::time::Instant::now());
        if self.leases.hand_back_armed.insert(key.clone()) {
            self.hand_back_after(key.clone(), IDLE_HELD, ctx);
        }
    }

    fn hand_back_after(&mut self, key: ConversationKey, wait: Duration, ctx: &mut Context<Self>) {
        ctx.run_later(wait, move |act, ctx| {
            let since = act.leases.idle_since.get(&key).copied();
            match since {
                // Busy again meanwhile, or idle again more lately: not yet.
                Some(since) if act.idle(&key) && since.elapsed() < IDLE_HELD => {
                    let left = IDLE_HELD - since.elapsed();
                    act.hand_back_after(key, left, ctx);
                }
                Some(_) if act.idle(&key) => {
                    act.leases.hand_back_armed.remove(&key);
                    act.leases.idle_since.remove(&key);
                    act.hand_back_if_idle(&key, ctx);
                }
                _ => {
                    // Busy (its lane empties again later and arms a new check) or gone.
                    act.leases.hand_back_armed.remove(&key);
                    act.leases.idle_since.remove(&key);
                }
            }
        });
    }

    /// An idle conversation's lease goes back, then its unanswered messages are read once
    /// more (one stored meanwhile by another worker is claimed).
    fn hand_back_if_idle(&mut self, key: &ConversationKey, ctx: &mut Context<Self>) {
        let Some(worker) = self.leases.worker.clone() else {
            return;
        };
        if !self.idle(key) {
            return;
        }
        self.leases.held.remove(key);
        self.leases.releasing.insert(key.clone());
        let inbox = self.inbox.clone();
        let wanted = key.clone();
        let work = async move {
            worker.release(&lease_name(&wanted)).await?;
            inbox.unanswered_in(&wanted).await
        };
        let key = key.clone();
        ctx.spawn(work.into_actor(self).map(move |left, act, ctx| {
            act.leases.releasing.remove(&key);
            let more = match left {
                Ok(records) => !records.is_empty(),
                Err(error) => {
                    tracing::warn!(conversation = %key, %error, "conversation not handed back cleanly");
                    true
                }
            };
            if more || act.leases.waiting.contains_key(&key) {
                act.claim(key, ctx);
            }
        }));
    }

    /// A turn's end is stored: a caller waiting on another worker (`POST /inbound` there)
    /// reads it now. Only channels without an outbox have such callers.
    pub(super) fn turn_stored(&mut self, inbound: &crate::ports::Inbound, reply: Option<&str>) {
        let wake_ups = self.answered_wake_ups(inbound, reply);
        if let Some(worker) = self.leases.worker.clone()
            && !wake_ups.is_empty()
        {
            actix::spawn(async move {
                for wake_up in wake_ups {
                    worker.wake(wake_up).await;
                }
            });
        }
    }

    /// What tells the other workers that the turn of `inbound` ended: nothing alone on the
    /// database or for a channel with an outbox (no caller waits elsewhere); else its
    /// `reply` (when answered, and it fits in a wake-up), which answers a caller waiting
    /// elsewhere without a read, then `Answered`. Sent by the statement storing an answer
    /// where the store can (`Inbox::complete_waking`), else by `turn_stored`.
    pub(super) fn answered_wake_ups(
        &self,
        inbound: &crate::ports::Inbound,
        reply: Option<&str>,
    ) -> Vec<WakeUp> {
        if self.leases.worker.is_none()
            || self
                .durable_channels
                .contains(inbound.conversation.channel())
        {
            return Vec::new();
        }
        let replied = reply.and_then(|reply| {
            crate::ports::AnsweredWith {
                inbox_id: inbound.id.clone(),
                conversation: inbound.conversation.clone(),
                member_id: inbound.member_id.clone(),
                reply_to_event: inbound.platform_event_id.clone(),
                reply: reply.to_owned(),
            }
            .wake_up()
        });
        replied
            .into_iter()
            .chain([WakeUp::new(WakeTopic::Answered, inbound.id.clone())])
            .collect()
    }

    pub(super) fn wake(&self, wake_up: WakeUp, ctx: &mut Context<Self>) {
        if let Some(worker) = self.leases.worker.clone() {
            ctx.spawn(async move { worker.wake(wake_up).await }.into_actor(self));
        }
    }

    /// Listen to the other workers, and look for orphaned conversations now and then.
    pub(super) fn share_conversations(&mut self, ctx: &mut Context<Self>) {
        let Some(worker) = self.leases.worker.clone() else {
            return;
        };
        ctx.add_stream(worker.wake_ups());
        ctx.add_stream(worker.tenure_changes());
        ctx.run_interval(ORPHANS_LOOKED_FOR, |act, ctx| act.look_for_orphans(ctx));
    }

    fn look_for_orphans(&mut self, ctx: &mut Context<Self>) {
        if !self.leases.may_claim() {
            return;
        }
        let inbox = self.inbox.clone();
        ctx.spawn(
            async move { inbox.unanswered().await }
                .into_actor(self)
                .map(|unanswered, act, ctx| match unanswered {
                    Ok(records) => {
                        let keys: HashSet<ConversationKey> = records
                            .into_iter()
                            .map(|record| record.inbound.conversation)
                            .collect();
                        for key in keys {
                            if !act.leases.held.contains_key(&key) {
                                act.claim(key, ctx);
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "unanswered messages not looked at"),
                }),
        );
    }

    /// Another worker stored a message of `key` (or answered one of its confirmations, then
    /// `confirmed`): run it when held here, or claim it (a take reads the answered
    /// confirmations too).
    fn conversation_woken(&mut self, key: ConversationKey, ctx: &mut Context<Self>) {
        if self.leases.held.contains_key(&key) {
            self.reload(key, ctx);
        } else if self.leases.seen_held_elsewhere(&key)
            && !self.leases.waiting.contains_key(&key)
            && !self.cancels.contains_key(&key)
        {
            // Held by another worker as a take here found lately (often this worker's own
            // wake-up for it): that one runs it.
        } else {
            self.claim(key, ctx);
        }
    }
}

impl StreamHandler<Tenure> for RequestQueue {
    fn handle(&mut self, tenure: Tenure, ctx: &mut Self::Context) {
        self.tenure_changed(tenure, ctx);
    }

    /// The worker is gone: nothing changes any more.
    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl StreamHandler<WakeUp> for RequestQueue {
    fn handle(&mut self, wake_up: WakeUp, ctx: &mut Self::Context) {
        match wake_up.topic {
            WakeTopic::Conversation => match wake_up.subject.parse::<ConversationKey>() {
                Ok(key) => self.conversation_woken(key, ctx),
                Err(error) => tracing::warn!(%error, "a wake-up names no conversation"),
            },
            // Another worker answered a confirmation of a conversation held here: its turn
            // resumes here (a conversation not held was claimed on its `Conversation`).
            WakeTopic::Confirmed => match wake_up.subject.parse::<ConversationKey>() {
                Ok(key) if self.leases.held.contains_key(&key) => self.resume_answered(ctx),
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "a wake-up names no conversation"),
            },
            WakeTopic::Cancel => match read_member_in(&wake_up.subject) {
                Some((member_id, key)) => {
                    if self.cancel_question(&key, &member_id) {
                        tracing::info!(conversation = %key, "question withdrawn by a /cancel taken elsewhere");
                    }
                }
                None => {
                    tracing::warn!(subject = %wake_up.subject, "a cancel wake-up names no member and conversation")
                }
            },
            WakeTopic::Answered
            | WakeTopic::Replied
            | WakeTopic::Outbox
            | WakeTopic::Members
            | WakeTopic::Schedules => {}
        }
    }

    /// The wake-ups end only when the database closes: the queue goes on (its periodic
    /// look still finds everything).
    fn finished(&mut self, _ctx: &mut Self::Context) {}
}
