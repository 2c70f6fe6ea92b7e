//! Calendar texts read once: a profile's searches fetch the same subscription (and the same
//! CalDAV resources) again and again, and reading the iCalendar text is most of a search's
//! cost. What a text read to (its events grouped by UID, or why it could not be read) is
//! kept under the SHA-256 of the text, so the same text fetched again is not parsed again;
//! a changed text is a new key and read afresh. Bounded: at most [`MAX_CACHED_TEXTS`] texts
//! and [`MAX_CACHED_BYTES`] of text, the least recently used let go first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::events::{EventData, ReadError, read_events};

/// At most this many texts' readings are kept per profile (a CalDAV calendar's events are
/// a text each).
pub const MAX_CACHED_TEXTS: usize = 4_096;
/// At most this much text (in bytes) has its reading kept per profile; the events read
/// from it take about as much again.
pub const MAX_CACHED_BYTES: usize = 16 * 1024 * 1024;

/// One text's events grouped by UID (a main event with its changed occurrences, main
/// event first), or why it could not be read.
pub type ReadGroups = Result<Arc<[Vec<EventData>]>, ReadError>;

/// The readings of recently fetched texts, shared by one profile's searches.
#[derive(Debug, Default)]
pub struct ReadCache {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_digest: HashMap<[u8; 32], Entry>,
    bytes: usize,
    /// Counts lookups, for which entry was used last.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    read: ReadGroups,
    bytes: usize,
    last_used: u64,
}

impl ReadCache {
    /// `text` read into its events grouped by UID: kept from an earlier reading of the same
    /// text, or read now (outside the lock) and kept.
    pub fn read(&self, text: &str) -> ReadGroups {
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        if let Some(read) = self.lock().get(&digest) {
            return read;
        }
        let read: ReadGroups = read_events(text).map(|events| by_uid(events).into());
        if text.len() <= MAX_CACHED_BYTES {
            self.lock().insert(digest, read.clone(), text.len());
        }
        read
    }

    /// How many texts' readings are kept, and how many bytes of text.
    pub fn size(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.by_digest.len(), kept.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // A panic while holding the lock leaves nothing half-written worth refusing.
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Kept {
    fn get(&mut self, digest: &[u8; 32]) -> Option<ReadGroups> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.by_digest.get_mut(digest)?;
        entry.last_used = clock;
        Some(entry.read.clone())
    }

    fn insert(&mut self, digest: [u8; 32], read: ReadGroups, bytes: usize) {
        self.clock += 1;
        let entry = Entry {
            read,
            bytes,
            last_used: self.clock,
        };
        if let Some(old) = self.by_digest.insert(digest, entry) {
            self.bytes -= old.bytes;
        }
        self.bytes += bytes;
        if self.by_digest.len() > MAX_CACHED_TEXTS || self.bytes > MAX_CACHED_BYTES {
            self.let_go_of_the_oldest();
        }
    }

    /// Lets go of the least recently used readings until three quarters of each bound
    /// remain, so that a run of new texts does not sort the whole cache at every insert.
    fn let_go_of_the_oldest(&mut self) {
        let mut by_age: Vec<([u8; 32], u64)> = self
            .by_digest
            .iter()
            .map(|(digest, entry)| (*digest, entry.last_used))
            .collect();
        by_age.sort_unstable_by_key(|(_, last_used)| *last_used);
        for (digest, _) in by_age {
            if self.by_digest.len() <= MAX_CACHED_TEXTS * 3 / 4
                && self.bytes <= MAX_CACHED_BYTES * 3 / 4
            {
                break;
            }
            if let Some(entry) = self.by_digest.remove(&digest) {
                self.bytes -= entry.bytes;
            }
        }
    }
}

/// Events grouped by UID (a main event with its changed occurrences), each group's main
/// event first; events without a UID stand alone.
pub(super) fn by_uid(events: Vec<EventData>) -> Vec<Vec<EventData>> {
    let mut groups: Vec<Vec<EventData>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for event in events {
        if event.uid.is_empty() {
            groups.push(vec![event]);
            continue;
        }
        match index.get(&event.uid) {
            Some(at) => groups[*at].push(event),
            None => {
                index.insert(event.uid.clone(), groups.len());
                groups.push(vec![event]);
            }
        }
    }
    for group in &mut groups {
        group.sort_by_key(|event| event.recurrence_id.is_some());
    }
    groups
}

#[cfg(test)]
#[path = "read_cache_tests.rs"]
mod tests;
