//! The newest chat-text entries of recently active conversations, kept in memory
//! so a turn reads its history without a database round trip.
//!
//! An adapter uses it where it sees every write of what it caches. SQLite: this process
//! is the database's only writer and every history write passes through `SqliteStore`,
//! which updates the cache after each commit (the tenure is always `None`). PostgreSQL:
//! a conversation's history is written by the turns of its lease's holder, each fenced by
//! the lease's generation, so what this worker read and wrote under one generation (the
//! entry's tenure) is the whole truth while that generation lasts; a read under another
//! generation, or none, goes to the database. The cache holds a conversation's newest
//! entries; `complete` says it holds all of them.

use std::collections::{HashMap, VecDeque};

use crate::ports::HistoryEntry;

/// Entries kept per conversation: above any sensible `max_history_messages`.
pub(crate) const ENTRIES_PER_CONVERSATION: usize = 32;
/// Conversations kept; the least recently used one is dropped beyond this.
const CONVERSATIONS: usize = 256;

struct CachedConversation {
    /// Chat-text entries, oldest first, at most `ENTRIES_PER_CONVERSATION`.
    entries: VecDeque<HistoryEntry>,
    /// True when `entries` is every chat-text entry the conversation has.
    complete: bool,
    /// The lease generation the entries were read and written under (`None`: the
    /// adapter is the database's only writer).
    tenure: Option<i64>,
    last_used: u64,
}

#[derive(Default)]
pub(crate) struct HistoryCache {
    conversations: HashMap<String, CachedConversation>,
    clock: u64,
    /// Writes told so far (`appended`, `appended_turn`, `forget`): a load of what was
    /// read before one of them is not kept (`load`).
    writes: u64,
}

impl HistoryCache {
    /// What `ConversationMemory::recent` returns under `tenure`, if the cache can tell
    /// for sure.
    pub fn recent(
        &mut self,
        conversation_key: &str,
        limit: usize,
        since_ms: i64,
        tenure: Option<i64>,
    ) -> Option<Vec<HistoryEntry>> {
        self.clock += 1;
        let clock = self.clock;
        let cached = self
            .conversations
            .get_mut(conversation_key)
            .filter(|cached| cached.tenure == tenure)?;
        cached.last_used = clock;
        let fresh: Vec<&HistoryEntry> = cached
            .entries
            .iter()
            .filter(|entry| entry.created_at_ms >= since_ms)
            .collect();
        // Entries not cached are older than every cached one: they can only matter when
        // all cached entries are recent enough and there are fewer than asked for.
        let oldest_is_too_old = cached
            .entries
            .front()
            .is_some_and(|oldest| oldest.created_at_ms < since_ms);
        if !(cached.complete || fresh.len() >= limit || oldest_is_too_old) {
            return None;
        }
        let skip = fresh.len().saturating_sub(limit);
        Some(fresh.into_iter().skip(skip).cloned().collect())
    }

    /// The writes told so far, taken before a read of the database for `load`.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Remember what the database returned, under `tenure`, for the newest
    /// `ENTRIES_PER_CONVERSATION` chat-text entries of a conversation (oldest first), read
    /// when `writes` said `read_after`: kept only when no write was told since (whose
    /// entries the read may have missed, the cache not holding the conversation then).
    pub fn load(
        &mut self,
        conversation_key: &str,
        newest: Vec<HistoryEntry>,
        tenure: Option<i64>,
        read_after: u64,
    ) {
        if self.writes != read_after {
            return;
        }
        if self.conversations.len() >= CONVERSATIONS
            && !self.conversations.contains_key(conversation_key)
            && let Some(least_used) = self
                .conversations
                .iter()
                .min_by_key(|(_, cached)| cached.last_used)
                .map(|(key, _)| key.clone())
        {
            self.conversations.remove(&least_used);
        }
        self.clock += 1;
        let complete = newest.len() < ENTRIES_PER_CONVERSATION;
        self.conversations.insert(
            conversation_key.to_string(),
            CachedConversation {
                entries: newest.into(),
                complete,
                tenure,
                last_used: self.clock,
            },
        );
    }

    /// The entries of the answered message `inbox_id`, just committed under `tenure`, each
    /// filed under that message as the database files them. Written without this cache's
    /// lock, they may already be here: a load that read the database after the commit and
    /// before this call saw them. Entries held under another tenure are forgotten: they no
    /// longer tell the whole history.
    pub fn appended_turn(
        &mut self,
        conversation_key: &str,
        inbox_id: &str,
        entries: &[HistoryEntry],
        tenure: Option<i64>,
    ) {
        self.writes += 1;
        if self
            .conversations
            .get(conversation_key)
            .is_some_and(|cached| cached.tenure != tenure)
        {
            self.forget(conversation_key);
            return;
        }
        let already_loaded = self
            .conversations
            .get(conversation_key)
            .is_some_and(|cached| {
                cached
                    .entries
                    .iter()
                    .any(|entry| entry.inbox_id.as_deref() == Some(inbox_id))
            });
        if !already_loaded {
            let filed: Vec<HistoryEntry> = entries
                .iter()
                .map(|entry| HistoryEntry {
                    inbox_id: Some(inbox_id.to_string()),
                    ..entry.clone()
                })
                .collect();
            self.appended(conversation_key, &filed);
        }
    }

    /// The conversation is read from the database next time (a write the cache cannot
    /// place under a tenure).
    pub fn forget(&mut self, conversation_key: &str) {
        self.writes += 1;
        self.conversations.remove(conversation_key);
    }

    /// Entries just committed to the database. A conversation not cached stays
    /// uncached: its next read loads it whole.
    pub fn appended(&mut self, conversation_key: &str, entries: &[HistoryEntry]) {
        self.writes += 1;
        let Some(cached) = self.conversations.get_mut(conversation_key) else {
            return;
        };
        for entry in entries.iter().filter(|entry| entry.is_chat_text()) {
            cached.entries.push_back(entry.clone());
            if cached.entries.len() > ENTRIES_PER_CONVERSATION {
                cached.entries.pop_front();
                cached.complete = false;
            }
        }
    }
}
