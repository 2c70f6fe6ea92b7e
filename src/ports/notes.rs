//! The family's notes (seed 004's `add_or_update_note`): short texts a member keeps for the
//! family ("Wifi", "Alarm code", "Garden plan"), or for themselves.
//!
//! A note is `family` (every member reads it) or `private` (only its author does). Titles
//! are compared trimmed and case-insensitively (Unicode lowercase, computed here so every
//! adapter agrees): family notes are unique by title, a private note per author and title,
//! so a member's private "Wifi" and the family's "Wifi" are two notes.
//!
//! The port takes the reader (or author) it is told and shows them only what they may read:
//! family notes and their own private ones; a note they may not read is as if it did not
//! exist. Who may change or delete a family note is the domain's rule (`notes::`), not the
//! port's.

use async_trait::async_trait;

use super::StorageError;
use crate::ids::MemberId;

/// Most words of one search; the rest are ignored, so a query stays small.
pub const MAX_SEARCH_WORDS: usize = 16;

/// Who may read a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NoteVisibility {
    /// Every family member.
    #[default]
    Family,
    /// Only its author.
    Private,
}

impl NoteVisibility {
    pub fn as_str(self) -> &'static str {
        match self {
            NoteVisibility::Family => "family",
            NoteVisibility::Private => "private",
        }
    }

    /// A stored visibility; anything else is unreadable.
    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "family" => Ok(NoteVisibility::Family),
            "private" => Ok(NoteVisibility::Private),
            other => Err(StorageError::Corrupt(format!("note visibility {other:?}"))),
        }
    }
}

/// A stored note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Its number, never given again.
    pub id: i64,
    /// As last written, trimmed.
    pub title: String,
    pub content: String,
    pub visibility: NoteVisibility,
    /// The member who added it.
    pub author: MemberId,
    /// The member who last wrote it (the author until someone else updates it).
    pub updated_by: MemberId,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// What `Notes::save` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteWrite {
    pub title: String,
    pub content: String,
    /// `None`: the note with this title the writer may read (their private one first, then
    /// the family's), else a new family note. `Some`: the note with this title of that
    /// visibility (a private one is the writer's own), else a new one of it.
    pub visibility: Option<NoteVisibility>,
    /// The writer: the author of a note it adds.
    pub writer: MemberId,
    pub at_ms: i64,
}

/// Whether `Notes::save` added a note or updated one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    Added(Note),
    Updated(Note),
}

impl Saved {
    pub fn note(&self) -> &Note {
        match self {
            Saved::Added(note) | Saved::Updated(note) => note,
        }
    }
}

/// Which note a get or a delete names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteRef {
    /// By title, compared trimmed and case-insensitively: the reader's private note of that
    /// title first, then the family's.
    Title(String),
    /// By number.
    Id(i64),
}

/// One page of the notes a member may read, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoteList {
    pub notes: Vec<Note>,
    /// How many notes the member may read in all.
    pub total: u64,
}

#[async_trait]
pub trait Notes: Send + Sync {
    /// Update the note `write` names (see `NoteWrite::visibility`) or add it; says which.
    /// Refuses a blank title.
    async fn save(&self, write: &NoteWrite) -> Result<Saved, StorageError>;

    /// The note `which` names, if `reader` may read it.
    async fn get(&self, reader: &MemberId, which: &NoteRef) -> Result<Option<Note>, StorageError>;

    /// At most `limit` notes `reader` may read holding the words of `query` (their titles
    /// and contents, whole words, the last one also as the start of a word), best first: a
    /// title holding them before a content holding them. Notes holding every word come
    /// first; only when none does, for three words or more, notes holding all but one;
    /// only when none does either, notes holding any. Refuses a query without words
    /// (`search_words`).
    async fn search(
        &self,
        reader: &MemberId,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Note>, StorageError>;

    /// At most `limit` of the notes `reader` may read, last written first, and how many there
    /// are.
    async fn list(&self, reader: &MemberId, limit: usize) -> Result<NoteList, StorageError>;

    /// Make note `id` of `author` (theirs alone: another member's note is as if it did not
    /// exist) `visibility`, at `at_ms`; the note as changed, or `None`. Refuses
    /// (`StorageError::Invalid`, naming the title) when a note of that title and visibility
    /// is there already: the family's, or the author's own private one.
    async fn set_visibility(
        &self,
        author: &MemberId,
        id: i64,
        visibility: NoteVisibility,
        at_ms: i64,
    ) -> Result<Option<Note>, StorageError>;

    /// Delete the note `which` names, if `reader` may read it; the note deleted.
    async fn delete(
        &self,
        reader: &MemberId,
        which: &NoteRef,
    ) -> Result<Option<Note>, StorageError>;
}

/// The key a title is compared by: trimmed and lowercased. Refuses a blank title, since
/// nobody could ask for it again.
pub(crate) fn note_title_key(title: &str) -> Result<String, StorageError> {
    let trimmed = title.trim();
    if trimmed.is_empty() {
        return Err(StorageError::Invalid(format!(
            "note title {title:?} is blank"
        )));
    }
    Ok(trimmed.to_lowercase())
}

/// The words of a search, lowercased, in order, without repeats, at most
/// `MAX_SEARCH_WORDS`: runs of letters and digits, everything else (quotes, `*`, `-`, `:`,
/// brackets) only separates them, so nothing a member types is ever search syntax. Refuses
/// a query without a word.
pub fn search_words(query: &str) -> Result<Vec<String>, StorageError> {
    let mut words: Vec<String> = Vec::new();
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
        if words.len() == MAX_SEARCH_WORDS {
            break;
        }
    }
    if words.is_empty() {
        return Err(StorageError::Invalid(format!(
            "search {query:?} has no words to look for"
        )));
    }
    Ok(words)
}
