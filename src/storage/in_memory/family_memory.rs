//! The in-memory `FamilyMemory`: sources, chunks, conversation readers, vectors and cursors
//! in the store's `family_memory` mutex, reading the history and the notes of the same
//! store. Words are matched as SQLite's FTS5 splits the folded text (runs of letters and
//! digits) and ranked simply: how often a chunk holds the words, then newest. Only one of
//! the store's mutexes is held at a time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::MemberId;
use crate::llm::Role;
use crate::ports::{
    ChatToIndex, ChatsBehind, FamilyMemory, KindCounts, MemoryFilter, MemoryHit, MemoryKind,
    MemoryReaders, MemorySource, MemoryStatus, Note, StorageError, memory_search_terms, nearest,
    stored_chunk, vector_bytes,
};

#[derive(Default)]
pub(super) struct MemoryState {
    /// Number → source (its chunks left out) and when it was indexed.
    sources: BTreeMap<i64, (MemorySource, i64)>,
    /// Number → chunk; numbers are never given again, as the tables' ids.
    chunks: BTreeMap<i64, Chunk>,
    last_source: i64,
    last_chunk: i64,
    /// (conversation key, member): the members who have written in a conversation.
    readers: BTreeSet<(String, MemberId)>,
    /// (hash, model) → the vector as stored.
    vectors: HashMap<(String, String), Vec<u8>>,
    cursors: HashMap<String, i64>,
}

struct Chunk {
    source: i64,
    text: String,
    folded: String,
    hash: String,
}

impl InMemoryStore {
    fn memory_state(&self) -> MutexGuard<'_, MemoryState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.family_memory
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl MemoryState {
    fn find(&self, kind: MemoryKind, reference: &str) -> Option<i64> {
        let mut found = self.sources.iter();
        let (id, _) =
            found.find(|(_, (source, _))| source.kind == kind && source.reference == reference)?;
        Some(*id)
    }

    fn remove_source(&mut self, id: i64) -> bool {
        self.chunks.retain(|_, chunk| chunk.source != id);
        self.sources.remove(&id).is_some()
    }

    fn readable(&self, source: &MemorySource, reader: &MemberId) -> bool {
        match source.readers {
            MemoryReaders::Family => true,
            MemoryReaders::Member => source.member.as_ref() == Some(reader),
            MemoryReaders::Conversation => source.conversation.as_ref().is_some_and(|key| {
                (self.readers).contains(&(key.as_str().to_owned(), reader.clone()))
            }),
        }
    }

    /// The chunks `reader` may read that `filter` admits, with their sources.
    fn visible<'a>(
        &'a self,
        reader: &'a MemberId,
        filter: &'a MemoryFilter,
    ) -> impl Iterator<Item = (i64, &'a Chunk, &'a MemorySource)> + 'a {
        self.chunks.iter().filter_map(move |(id, chunk)| {
            let (source, _) = self.sources.get(&chunk.source)?;
            (self.readable(source, reader) && filter.admits(source.kind, source.created_at_ms))
                .then_some((*id, chunk, source))
        })
    }

    fn put(&mut self, source: &MemorySource, at_ms: i64) {
        let id = match self.find(source.kind, &source.reference) {
            Some(id) => {
                self.remove_source(id);
                id
            }
            None => {
                self.last_source += 1;
                self.last_source
            }
        };
        for text in &source.chunks {
            let (folded, hash) = stored_chunk(text);
            self.last_chunk += 1;
            let chunk = Chunk {
                source: id,
                text: text.clone(),
                folded,
                hash,
            };
            self.chunks.insert(self.last_chunk, chunk);
        }
        if let Some((conversation, member)) = source.lists_reader() {
            (self.readers).insert((conversation.as_str().to_owned(), member.clone()));
        }
        let kept = MemorySource {
            chunks: Vec::new(),
            ..source.clone()
        };
        self.sources.insert(id, (kept, at_ms));
    }
}

fn hit(id: i64, chunk: &Chunk, source: &MemorySource, score: f64) -> MemoryHit {
    MemoryHit {
        chunk_id: id,
        kind: source.kind,
        reference: source.reference.clone(),
        title: source.title.clone(),
        text: chunk.text.clone(),
        member: source.member.clone(),
        conversation: source.conversation.clone(),
        created_at_ms: source.created_at_ms,
        score,
    }
}

#[async_trait]
impl FamilyMemory for InMemoryStore {
    async fn put_sources(
        &self,
        sources: &[MemorySource],
        cursor: Option<(&str, i64)>,
        at_ms: i64,
    ) -> Result<(), StorageError> {
        // Every source checked before any is written: all or nothing.
        sources.iter().try_for_each(MemorySource::check)?;
        let mut state = self.memory_state();
        for source in sources {
            state.put(source, at_ms);
        }
        if let Some((name, position)) = cursor {
            state.cursors.insert(name.to_owned(), position);
        }
        Ok(())
    }

    async fn cursor(&self, name: &str) -> Result<i64, StorageError> {
        Ok(self.memory_state().cursors.get(name).copied().unwrap_or(0))
    }

    async fn chats_after(
        &self,
        after_id: i64,
        settled_before_ms: i64,
        limit: usize,
    ) -> Result<Vec<ChatToIndex>, StorageError> {
        let state = self.lock();
        let mut after: Vec<_> = (state.messages.iter())
            .flat_map(|(key, entries)| entries.iter().map(move |(id, entry)| (*id, key, entry)))
            .filter(|(id, _, _)| *id > after_id)
            .collect();
        after.sort_by_key(|(id, _, _)| *id);
        let unsettled = after
            .iter()
            .find(|(_, _, entry)| entry.created_at_ms >= settled_before_ms)
            .map_or(i64::MAX, |(id, _, _)| *id);
        let member_of = |inbox_id: &Option<String>| {
            let inbox_id = inbox_id.as_deref()?;
            let mut records = state.inbox.iter();
            let record = records.find(|record| record.inbound.id == inbox_id)?;
            Some(record.inbound.member_id.clone())
        };
        Ok(after
            .into_iter()
            .filter(|(id, key, entry)| {
                *id < unsettled && entry.is_chat_text() && !key.is_delegated()
            })
            .take(limit)
            .map(|(id, key, entry)| ChatToIndex {
                message_id: id,
                conversation_key: key.clone(),
                role: entry.role,
                text: entry.content.clone(),
                member: (entry.role == Role::User)
                    .then(|| member_of(&entry.inbox_id))
                    .flatten(),
                created_at_ms: entry.created_at_ms,
            })
            .collect())
    }

    async fn notes_to_index(&self, limit: usize) -> Result<Vec<Note>, StorageError> {
        let mut notes = self.every_note();
        let state = self.memory_state();
        notes.retain(|note| {
            let source = state.find(MemoryKind::Note, &note.id.to_string());
            source.is_none_or(|id| state.sources[&id].1 < note.updated_at_ms)
        });
        notes.sort_by_key(|note| (note.updated_at_ms, note.id));
        notes.truncate(limit);
        Ok(notes)
    }

    async fn remove_orphans(&self, limit: usize) -> Result<u64, StorageError> {
        let messages: HashSet<String> = (self.lock().messages.values())
            .flat_map(|entries| entries.iter().map(|(id, _)| id.to_string()))
            .collect();
        let notes: HashSet<String> = (self.every_note().iter())
            .map(|note| note.id.to_string())
            .collect();
        let mut state = self.memory_state();
        let orphans: Vec<i64> = (state.sources.iter())
            .filter(|(_, (source, _))| match source.kind {
                MemoryKind::Chat => !messages.contains(&source.reference),
                MemoryKind::Note => !notes.contains(&source.reference),
                MemoryKind::Document => false,
            })
            .map(|(id, _)| *id)
            .take(limit)
            .collect();
        for id in &orphans {
            state.remove_source(*id);
        }
        let used: HashSet<&String> = state.chunks.values().map(|chunk| &chunk.hash).collect();
        let unused: Vec<(String, String)> = (state.vectors.keys())
            .filter(|(hash, _)| !used.contains(hash))
            .take(limit)
            .cloned()
            .collect();
        for key in &unused {
            state.vectors.remove(key);
        }
        Ok((orphans.len() + unused.len()) as u64)
    }

    async fn remove(&self, kind: MemoryKind, reference: &str) -> Result<bool, StorageError> {
        let mut state = self.memory_state();
        Ok(match state.find(kind, reference) {
            Some(id) => state.remove_source(id),
            None => false,
        })
    }

    async fn remove_member(&self, member: &MemberId) -> Result<u64, StorageError> {
        let mut state = self.memory_state();
        let theirs: Vec<i64> = (state.sources.iter())
            .filter(|(_, (source, _))| {
                source.readers == MemoryReaders::Member && source.member.as_ref() == Some(member)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &theirs {
            state.remove_source(*id);
        }
        let listed = state.readers.len();
        state.readers.retain(|(_, reader)| reader != member);
        Ok((theirs.len() + listed - state.readers.len()) as u64)
    }

    async fn search_words(
        &self,
        reader: &MemberId,
        words: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<MemoryHit>, StorageError> {
        let terms = memory_search_terms(words);
        let state = self.memory_state();
        let mut hits: Vec<MemoryHit> = state
            .visible(reader, filter)
            .filter_map(|(id, chunk, source)| {
                let held = (chunk.folded.split(|c: char| !c.is_alphanumeric()))
                    .filter(|word| terms.iter().any(|term| term == word))
                    .count();
                (held > 0).then(|| hit(id, chunk, source, held as f64))
            })
            .collect();
        hits.sort_by(|a, b| {
            (b.score.total_cmp(&a.score))
                .then(b.created_at_ms.cmp(&a.created_at_ms))
                .then(b.chunk_id.cmp(&a.chunk_id))
        });
        hits.truncate(limit);
        Ok(hits)
    }

    async fn vectors_missing(
        &self,
        model: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StorageError> {
        let state = self.memory_state();
        let mut missing: Vec<(String, String)> = Vec::new();
        for chunk in state.chunks.values() {
            let key = (chunk.hash.clone(), model.to_owned());
            if missing.len() < limit
                && !state.vectors.contains_key(&key)
                && !missing.iter().any(|(hash, _)| *hash == chunk.hash)
            {
                missing.push((chunk.hash.clone(), chunk.text.clone()));
            }
        }
        Ok(missing)
    }

    async fn put_vectors(
        &self,
        model: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StorageError> {
        let mut state = self.memory_state();
        for (hash, vector) in vectors {
            let key = (hash.clone(), model.to_owned());
            state.vectors.insert(key, vector_bytes(vector));
        }
        Ok(())
    }

    async fn search_vector(
        &self,
        reader: &MemberId,
        model: &str,
        query: &[f32],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<MemoryHit>, StorageError> {
        let candidates: Vec<(i64, Vec<u8>)> = {
            let state = self.memory_state();
            (state.visible(reader, filter))
                .filter_map(|(id, chunk, _)| {
                    let vector = state.vectors.get(&(chunk.hash.clone(), model.to_owned()))?;
                    Some((id, vector.clone()))
                })
                .collect()
        };
        let nearest = nearest(query, candidates, limit).await?;
        let state = self.memory_state();
        Ok(nearest
            .into_iter()
            .filter_map(|(id, score)| {
                let chunk = state.chunks.get(&id)?;
                let (source, _) = state.sources.get(&chunk.source)?;
                Some(hit(id, chunk, source, score))
            })
            .collect())
    }

    async fn status(&self, model: Option<&str>) -> Result<MemoryStatus, StorageError> {
        let state = self.memory_state();
        let has = |chunk: &Chunk, model: &str| {
            (state.vectors).contains_key(&(chunk.hash.clone(), model.to_owned()))
        };
        let count = |number: usize| number as u64;
        Ok(MemoryStatus {
            sources: count(state.sources.len()),
            chunks: count(state.chunks.len()),
            vectors: model.map_or(0, |model| {
                count(state.vectors.keys().filter(|(_, of)| of == model).count())
            }),
            waiting: model.map_or(0, |model| {
                count(state.chunks.values().filter(|c| !has(c, model)).count())
            }),
        })
    }

    async fn counts_by_kind(&self) -> Result<Vec<KindCounts>, StorageError> {
        let state = self.memory_state();
        Ok(MemoryKind::ALL
            .into_iter()
            .map(|kind| {
                let of_kind = |source: i64| state.sources[&source].0.kind == kind;
                KindCounts {
                    kind,
                    sources: (state.sources.values())
                        .filter(|(source, _)| source.kind == kind)
                        .count() as u64,
                    chunks: (state.chunks.values())
                        .filter(|chunk| of_kind(chunk.source))
                        .count() as u64,
                }
            })
            .collect())
    }

    async fn chats_behind(&self, after_id: i64) -> Result<ChatsBehind, StorageError> {
        let state = self.lock();
        let behind: Vec<(i64, i64)> = (state.messages.iter())
            .filter(|(key, _)| !key.is_delegated())
            .flat_map(|(_, entries)| entries.iter())
            .filter(|(id, entry)| *id > after_id && entry.is_chat_text())
            .map(|(id, entry)| (*id, entry.created_at_ms))
            .collect();
        Ok(ChatsBehind {
            entries: behind.len() as u64,
            newest_id: behind.iter().map(|(id, _)| *id).max(),
            oldest_at_ms: behind.iter().map(|(_, at)| *at).min(),
        })
    }
}
