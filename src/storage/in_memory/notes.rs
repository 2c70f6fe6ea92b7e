//! The in-memory `Notes`: the same rules as SQLite, in the `InMemoryStore`'s notes mutex.
//! Search matches words as SQLite's FTS5 index splits them (runs of letters and digits,
//! case folded, diacritics kept) and ranks simply: a word in a title counts ten times one
//! in a content, then newest first.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::MemberId;
use crate::ports::{
    Note, NoteList, NoteRef, NoteVisibility, NoteWrite, Notes, Saved, StorageError, note_title_key,
    search_words,
};

/// How much more a word in a title counts than one in a content, as SQLite's bm25 weights.
const TITLE_WEIGHT: usize = 10;

#[derive(Default)]
pub(super) struct NotesState {
    /// Number → note; numbers are never given again.
    notes: BTreeMap<i64, Note>,
    last_id: i64,
}

impl InMemoryStore {
    fn notes_state(&self) -> MutexGuard<'_, NotesState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.notes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every note, by number (family memory indexes them).
    pub(super) fn every_note(&self) -> Vec<Note> {
        self.notes_state().notes.values().cloned().collect()
    }
}

fn readable(note: &Note, reader: &MemberId) -> bool {
    note.visibility == NoteVisibility::Family || note.author == *reader
}

fn title_key(note: &Note) -> String {
    note.title.trim().to_lowercase()
}

impl NotesState {
    /// The note with title key `key` that `reader` may read: their private one first.
    fn by_title(&self, key: &str, reader: &MemberId) -> Option<i64> {
        let mut found = self
            .notes
            .values()
            .filter(|note| readable(note, reader) && title_key(note) == key);
        let first = found.next()?;
        if first.visibility == NoteVisibility::Private {
            return Some(first.id);
        }
        Some(
            found
                .find(|note| note.visibility == NoteVisibility::Private)
                .unwrap_or(first)
                .id,
        )
    }

    fn find(&self, which: &NoteRef, reader: &MemberId) -> Result<Option<i64>, StorageError> {
        Ok(match which {
            NoteRef::Id(id) => self
                .notes
                .get(id)
                .filter(|note| readable(note, reader))
                .map(|note| note.id),
            NoteRef::Title(title) => self.by_title(&note_title_key(title)?, reader),
        })
    }

    /// The note a save updates: see `NoteWrite::visibility`.
    fn to_update(&self, key: &str, write: &NoteWrite) -> Option<i64> {
        match write.visibility {
            None => self.by_title(key, &write.writer),
            Some(visibility) => self
                .notes
                .values()
                .find(|note| {
                    note.visibility == visibility
                        && title_key(note) == key
                        && (visibility == NoteVisibility::Family || note.author == write.writer)
                })
                .map(|note| note.id),
        }
    }
}

/// The words of `text` as FTS5's unicode61 tokenizer splits them, case folded.
fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// How often the search words occur among `words`: whole words, the last as a prefix too.
fn hits(words: &[String], searched: &[String]) -> Vec<usize> {
    let last = searched.len().saturating_sub(1);
    searched
        .iter()
        .enumerate()
        .map(|(index, wanted)| {
            words
                .iter()
                .filter(|word| {
                    *word == wanted || (index == last && word.starts_with(wanted.as_str()))
                })
                .count()
        })
        .collect()
}

#[async_trait]
impl Notes for InMemoryStore {
    async fn save(&self, write: &NoteWrite) -> Result<Saved, StorageError> {
        let key = note_title_key(&write.title)?;
        let mut state = self.notes_state();
        if let Some(id) = state.to_update(&key, write)
            && let Some(note) = state.notes.get_mut(&id)
        {
            note.title = write.title.trim().to_owned();
            note.content = write.content.clone();
            note.updated_by = write.writer.clone();
            note.updated_at_ms = write.at_ms;
            return Ok(Saved::Updated(note.clone()));
        }
        state.last_id += 1;
        let note = Note {
            id: state.last_id,
            title: write.title.trim().to_owned(),
            content: write.content.clone(),
            visibility: write.visibility.unwrap_or_default(),
            author: write.writer.clone(),
            updated_by: write.writer.clone(),
            created_at_ms: write.at_ms,
            updated_at_ms: write.at_ms,
        };
        state.notes.insert(note.id, note.clone());
        Ok(Saved::Added(note))
    }

    async fn get(&self, reader: &MemberId, which: &NoteRef) -> Result<Option<Note>, StorageError> {
        let state = self.notes_state();
        Ok(state
            .find(which, reader)?
            .and_then(|id| state.notes.get(&id).cloned()))
    }

    async fn search(
        &self,
        reader: &MemberId,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Note>, StorageError> {
        let searched = search_words(query)?;
        let state = self.notes_state();
        // (how many of the words it holds, score, note)
        let mut found: Vec<(usize, usize, &Note)> = state
            .notes
            .values()
            .filter(|note| readable(note, reader))
            .filter_map(|note| {
                let in_title = hits(&words_of(&note.title).collect::<Vec<_>>(), &searched);
                let in_content = hits(&words_of(&note.content).collect::<Vec<_>>(), &searched);
                let each: Vec<usize> = in_title
                    .iter()
                    .zip(&in_content)
                    .map(|(title, content)| title * TITLE_WEIGHT + content)
                    .collect();
                let score: usize = each.iter().sum();
                let held = each.iter().filter(|hits| **hits > 0).count();
                (score > 0).then_some((held, score, note))
            })
            .collect();
        // The tiers of the SQLite adapter: every word; for three or more, all but one; any.
        let every = searched.len();
        let most = found.iter().map(|(held, _, _)| *held).max().unwrap_or(0);
        let wanted = if most == every || (every >= 3 && most == every - 1) {
            most
        } else {
            1
        };
        found.retain(|(held, _, _)| *held >= wanted);
        found.sort_by(|(_, a_score, a), (_, b_score, b)| {
            b_score
                .cmp(a_score)
                .then(b.updated_at_ms.cmp(&a.updated_at_ms))
                .then(b.id.cmp(&a.id))
        });
        Ok(found
            .into_iter()
            .take(limit)
            .map(|(_, _, note)| note.clone())
            .collect())
    }

    async fn list(&self, reader: &MemberId, limit: usize) -> Result<NoteList, StorageError> {
        let state = self.notes_state();
        let mut notes: Vec<&Note> = state
            .notes
            .values()
            .filter(|note| readable(note, reader))
            .collect();
        notes.sort_by(|a, b| b.updated_at_ms.cmp(&a.updated_at_ms).then(b.id.cmp(&a.id)));
        Ok(NoteList {
            total: u64::try_from(notes.len()).unwrap_or(u64::MAX),
            notes: notes.into_iter().take(limit).cloned().collect(),
        })
    }

    async fn delete(
        &self,
        reader: &MemberId,
        which: &NoteRef,
    ) -> Result<Option<Note>, StorageError> {
        let mut state = self.notes_state();
        Ok(state
            .find(which, reader)?
            .and_then(|id| state.notes.remove(&id)))
    }

    async fn set_visibility(
        &self,
        author: &MemberId,
        id: i64,
        visibility: NoteVisibility,
        at_ms: i64,
    ) -> Result<Option<Note>, StorageError> {
        let mut state = self.notes_state();
        let Some(this) = state.notes.get(&id).filter(|note| note.author == *author) else {
            return Ok(None);
        };
        let key = title_key(this);
        if let Some(other) = state.notes.values().find(|other| {
            other.id != id
                && other.visibility == visibility
                && title_key(other) == key
                && (visibility == NoteVisibility::Family || other.author == *author)
        }) {
            return Err(StorageError::Invalid(format!(
                "a {} note titled {:?} is there already",
                visibility.as_str(),
                other.title
            )));
        }
        let note = state.notes.get_mut(&id).expect("found above");
        note.visibility = visibility;
        note.updated_at_ms = at_ms;
        Ok(Some(note.clone()))
    }
}
