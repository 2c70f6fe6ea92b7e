//! Family memory (recall): what the family told hearth (chat entries, notes, documents),
//! kept as sources cut into chunks a member may search by words and by meaning. The
//! name is `FamilyMemory` because `ConversationMemory` already names a conversation's
//! history window.
//!
//! A source is read by the family, by one member, or by the members who have written in
//! its conversation (a private chat lists only its member; a group every member who spoke
//! there). Every read takes the reader and shows them only what they may read; an adapter
//! says it in its query, never by filtering what it read.
//!
//! A chunk is searched by its text folded (`fold_for_search`: accents and case away), so
//! "Müller" finds "muller" and "école" finds "ECOLE", and by its vector, kept per model
//! under the hash of its text, so the same text is never embedded twice for one model.
//! A member's query becomes words here (`memory_query_words`), never query syntax.

use async_trait::async_trait;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::{Note, StorageError};
use crate::ids::{ConversationKey, MemberId};
use crate::llm::Role;

/// Most words of one memory search; the rest are ignored, so a query stays small.
pub const MAX_MEMORY_QUERY_WORDS: usize = 16;

/// Candidates scored on tokio's blocking pool instead of the async thread above this many
/// (`nearest`).
const SCORED_IN_PLACE: usize = 4_096;

/// What a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// One chat-text entry of a conversation; its reference is the `messages` row's id.
    Chat,
    /// A note; its reference is the note's id.
    Note,
    /// A document a member sent; its reference is the document's id.
    Document,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 3] = [MemoryKind::Chat, MemoryKind::Note, MemoryKind::Document];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Chat => "chat",
            MemoryKind::Note => "note",
            MemoryKind::Document => "document",
        }
    }

    /// A stored kind; anything else is unreadable.
    pub fn parse(text: &str) -> Result<Self, StorageError> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| StorageError::Corrupt(format!("memory kind {text:?}")))
    }
}

/// Who may read a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryReaders {
    /// Every member.
    Family,
    /// The source's `member` alone.
    Member,
    /// The members who have written in the source's `conversation`.
    Conversation,
}

impl MemoryReaders {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryReaders::Family => "family",
            MemoryReaders::Member => "member",
            MemoryReaders::Conversation => "conversation",
        }
    }

    /// Stored readers; anything else is unreadable.
    pub fn parse(text: &str) -> Result<Self, StorageError> {
        match text {
            "family" => Ok(MemoryReaders::Family),
            "member" => Ok(MemoryReaders::Member),
            "conversation" => Ok(MemoryReaders::Conversation),
            other => Err(StorageError::Corrupt(format!("memory readers {other:?}"))),
        }
    }
}

/// One indexed thing, as `FamilyMemory::put_sources` writes it: unique by kind and
/// reference, a second put replacing the first and its chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySource {
    pub kind: MemoryKind,
    /// The `messages` row's id as text (chat), the note's id (note), the document's id.
    pub reference: String,
    /// The note's title, the document's file name; empty for a chat entry.
    pub title: String,
    pub readers: MemoryReaders,
    /// The member a `Member` source belongs to, a chat entry's author (none for the
    /// assistant's), a document's sender. A chat source with a member and a conversation
    /// lists the member as one of the conversation's readers.
    pub member: Option<MemberId>,
    /// The conversation of a chat entry, and of a `Conversation` source.
    pub conversation: Option<ConversationKey>,
    pub created_at_ms: i64,
    /// The texts searched, in order.
    pub chunks: Vec<String>,
}

impl MemorySource {
    /// Refuses a source no adapter may store: a `Member` source without its member, a
    /// `Conversation` source without its conversation, a chat entry's or a note's
    /// reference that is not a number (their rows' ids).
    pub fn check(&self) -> Result<(), StorageError> {
        let refused = |why: &str| {
            Err(StorageError::Invalid(format!(
                "memory source {} {:?}: {why}",
                self.kind.as_str(),
                self.reference
            )))
        };
        if self.readers == MemoryReaders::Member && self.member.is_none() {
            return refused("read by its member, but it names none");
        }
        if self.readers == MemoryReaders::Conversation && self.conversation.is_none() {
            return refused("read in its conversation, but it names none");
        }
        if matches!(self.kind, MemoryKind::Chat | MemoryKind::Note)
            && self.reference.parse::<i64>().is_err()
        {
            return refused("its reference is not a row's number");
        }
        Ok(())
    }

    /// Whether writing it lists its member as a reader of its conversation: a chat entry
    /// a member wrote there.
    pub fn lists_reader(&self) -> Option<(&ConversationKey, &MemberId)> {
        match (self.kind, &self.conversation, &self.member) {
            (MemoryKind::Chat, Some(conversation), Some(member)) => Some((conversation, member)),
            _ => None,
        }
    }
}

/// Which sources a search looks at: created in `[since_ms, until_ms)` (either open), of
/// `kinds` (empty: every kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub kinds: Vec<MemoryKind>,
}

impl MemoryFilter {
    /// Whether it looks at sources of `kind`.
    pub fn wants(&self, kind: MemoryKind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }

    /// Whether it looks at a source of `kind` created at `created_at_ms`.
    pub fn admits(&self, kind: MemoryKind, created_at_ms: i64) -> bool {
        self.wants(kind)
            && self.since_ms.is_none_or(|since| created_at_ms >= since)
            && self.until_ms.is_none_or(|until| created_at_ms < until)
    }
}

/// A chunk a search found, with its source.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    pub chunk_id: i64,
    pub kind: MemoryKind,
    pub reference: String,
    pub title: String,
    /// The chunk's text as said.
    pub text: String,
    pub member: Option<MemberId>,
    pub conversation: Option<ConversationKey>,
    pub created_at_ms: i64,
    /// Higher is better, within one search only: the database's text rank (bm25 on
    /// SQLite, `ts_rank` on PostgreSQL) or the cosine similarity.
    pub score: f64,
}

/// A chat-text entry of the history, to be indexed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatToIndex {
    /// Its `messages` row's id: a chat source's reference and the indexer's cursor.
    pub message_id: i64,
    pub conversation_key: ConversationKey,
    pub role: Role,
    pub text: String,
    /// For a user entry, the member of the inbox message it came with; none for the
    /// assistant's.
    pub member: Option<MemberId>,
    pub created_at_ms: i64,
}

/// How many sources and chunks of one kind the memory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindCounts {
    pub kind: MemoryKind,
    pub sources: u64,
    pub chunks: u64,
}

/// The chat-text entries of the history after a position of the indexer's cursor: what
/// it has still to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatsBehind {
    /// How many (delegated conversations' left out, as `chats_after` leaves them).
    pub entries: u64,
    /// The newest one's `messages` id; none when none is after the position.
    pub newest_id: Option<i64>,
    /// When the oldest one was written; none when none is after the position.
    pub oldest_at_ms: Option<i64>,
}

/// How much the memory holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStatus {
    pub sources: u64,
    pub chunks: u64,
    /// Vectors of the model asked about (0 without one).
    pub vectors: u64,
    /// Chunks without a vector of that model (0 without one).
    pub waiting: u64,
}

#[async_trait]
pub trait FamilyMemory: Send + Sync {
    /// Write each source (replacing the one with the same kind and reference, and its
    /// chunks), the conversation reader it lists (`MemorySource::lists_reader`), and move
    /// the named cursor to its position, in one transaction: all or, when one fails
    /// (`MemorySource::check`), nothing. `at_ms` is each source's `indexed_at_ms`: take it
    /// before reading what the sources hold, so a note changed meanwhile is indexed again.
    async fn put_sources(
        &self,
        sources: &[MemorySource],
        cursor: Option<(&str, i64)>,
        at_ms: i64,
    ) -> Result<(), StorageError>;

    /// The named cursor's position (0 before it first moves).
    async fn cursor(&self, name: &str) -> Result<i64, StorageError>;

    /// Chat-text entries of the history after the row `after_id`, oldest first, at most
    /// `limit`, stopping before the first entry created at or after `settled_before_ms`
    /// (so a cursor set to the last one returned never passes an entry still being
    /// written); delegated conversations' entries skipped.
    async fn chats_after(
        &self,
        after_id: i64,
        settled_before_ms: i64,
        limit: usize,
    ) -> Result<Vec<ChatToIndex>, StorageError>;

    /// At most `limit` notes whose source is missing or older than the note
    /// (`indexed_at_ms < updated_at_ms`), least recently changed first.
    async fn notes_to_index(&self, limit: usize) -> Result<Vec<Note>, StorageError>;

    /// At most `limit` sources whose chat entry or note no longer exists (retention,
    /// deletes) removed, and at most `limit` vectors no chunk's text has any more; how
    /// many of both.
    async fn remove_orphans(&self, limit: usize) -> Result<u64, StorageError>;

    /// The source of `kind` and `reference` removed, with its chunks; whether it was there.
    async fn remove(&self, kind: MemoryKind, reference: &str) -> Result<bool, StorageError>;

    /// A removed member's `Member` sources and their listings as a conversation's reader
    /// removed; how many of both.
    async fn remove_member(&self, member: &MemberId) -> Result<u64, StorageError>;

    /// At most `limit` chunks `reader` may read, admitted by `filter`, holding any of
    /// `words` (as `memory_query_words` makes them; anything else in them only separates
    /// words), best first. No words, no hits.
    async fn search_words(
        &self,
        reader: &MemberId,
        words: &[String],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<MemoryHit>, StorageError>;

    /// At most `limit` texts of chunks without a vector of `model`, each once per hash:
    /// `(hash, text)`, oldest chunk first.
    async fn vectors_missing(
        &self,
        model: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StorageError>;

    /// Keep each `(hash, vector)` as the vector of `model` for every chunk of that hash.
    async fn put_vectors(
        &self,
        model: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StorageError>;

    /// At most `limit` chunks `reader` may read, admitted by `filter`, that have a vector
    /// of `model`, by cosine similarity to `query`, most similar first (a vector of
    /// another length never matches).
    async fn search_vector(
        &self,
        reader: &MemberId,
        model: &str,
        query: &[f32],
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Vec<MemoryHit>, StorageError>;

    /// How many sources and chunks there are, and vectors of `model` and chunks waiting
    /// for one.
    async fn status(&self, model: Option<&str>) -> Result<MemoryStatus, StorageError>;

    /// The sources and chunks of each kind, in `MemoryKind::ALL`'s order (none: zeros).
    async fn counts_by_kind(&self) -> Result<Vec<KindCounts>, StorageError>;

    /// The chat-text entries `chats_after` would list after the row `after_id`, settled
    /// or not: how many, the newest's id, when the oldest was written.
    async fn chats_behind(&self, after_id: i64) -> Result<ChatsBehind, StorageError>;
}

/// `text` as memory searches it: compatibility-decomposed (NFKD), combining marks (accents)
/// dropped, lowercased. "Müller" is "muller", "École" "ecole", "ﬁ" "fi"; "ß" stays.
pub fn fold_for_search(text: &str) -> String {
    text.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        // A lowercase letter may bring a mark of its own back ("İ" is "i" and a dot).
        .filter(|c| !is_combining_mark(*c))
        .collect()
}

/// Words too common to find anything by, folded, in English, German, French and
/// Spanish, with the pieces elisions leave ("l'école": "l").
const STOP_WORDS: &[&str] = &[
    // English
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "did", "do", "for", "from", "how",
    "i", "in", "is", "it", "me", "my", "of", "on", "or", "our", "that", "the", "this", "to", "was",
    "we", "were", "what", "when", "where", "who", "with", "you", // German
    "am", "auf", "das", "dem", "den", "der", "des", "die", "du", "ein", "eine", "einen", "es",
    "ich", "im", "ist", "mit", "nicht", "oder", "und", "von", "wann", "was", "wer", "wie", "wir",
    "wo", "zu", // French
    "au", "aux", "avec", "c", "ce", "d", "dans", "de", "des", "est", "et", "j", "je", "l", "la",
    "le", "les", "n", "nous", "ou", "par", "pour", "qu", "quand", "que", "qui", "quoi", "s", "sur",
    "t", "un", "une", // Spanish
    "al", "como", "con", "cuando", "del", "donde", "el", "en", "las", "lo", "los", "mi", "o",
    "para", "por", "quien", "se", "su", "una", "y", "yo",
];

/// The words of a member's query as memory searches them: runs of letters and digits
/// (`ports::search_words`' words), folded (`fold_for_search`), without repeats and stop
/// words, in order, at most `MAX_MEMORY_QUERY_WORDS`. Quotes, `*`, `-`, `:` and brackets
/// only separate words. Empty when nothing but stop words is left.
pub fn memory_query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in fold_for_search(query)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty() && !STOP_WORDS.contains(word))
    {
        if !words.iter().any(|known| known == word) {
            words.push(word.to_owned());
        }
        if words.len() == MAX_MEMORY_QUERY_WORDS {
            break;
        }
    }
    words
}

/// The words an adapter searches for `words`: each folded and split again into runs of
/// letters and digits, so whatever a caller hands over is only words.
pub(crate) fn memory_search_terms(words: &[String]) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in words {
        for term in fold_for_search(word).split(|c: char| !c.is_alphanumeric()) {
            if !term.is_empty() && !terms.iter().any(|known| known == term) {
                terms.push(term.to_owned());
            }
        }
    }
    terms.truncate(MAX_MEMORY_QUERY_WORDS);
    terms
}

/// A chunk as stored: its text, folded, and the hash its vectors are kept under (SHA-256
/// of the text, hex).
pub(crate) fn stored_chunk(text: &str) -> (String, String) {
    (
        fold_for_search(text),
        crate::secrets::sha256_hex(text.as_bytes()),
    )
}

/// A vector as stored: its numbers as little-endian `f32`, one after the other.
pub(crate) fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector
        .iter()
        .flat_map(|number| number.to_le_bytes())
        .collect()
}

/// The cosine similarity of `query` and the stored vector `bytes`; `None` when their
/// lengths differ or either is all zeros.
fn cosine(query: &[f32], bytes: &[u8]) -> Option<f64> {
    if bytes.len() != query.len() * 4 {
        return None;
    }
    let (mut dot, mut stored_norm, mut query_norm) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (wanted, chunk) in query.iter().zip(bytes.chunks_exact(4)) {
        let stored = f64::from(f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]));
        let wanted = f64::from(*wanted);
        dot += wanted * stored;
        stored_norm += stored * stored;
        query_norm += wanted * wanted;
    }
    let norms = stored_norm.sqrt() * query_norm.sqrt();
    (norms > 0.0).then(|| dot / norms)
}

/// The `limit` candidates `(chunk id, stored vector)` most similar to `query`, most
/// similar first (then the newer chunk): `(chunk id, cosine)`. Many candidates are scored
/// on tokio's blocking pool, off the async thread.
pub(crate) async fn nearest(
    query: &[f32],
    candidates: Vec<(i64, Vec<u8>)>,
    limit: usize,
) -> Result<Vec<(i64, f64)>, StorageError> {
    let score = move |query: Vec<f32>, candidates: Vec<(i64, Vec<u8>)>| {
        let mut scored: Vec<(i64, f64)> = candidates
            .iter()
            .filter_map(|(id, bytes)| cosine(&query, bytes).map(|similarity| (*id, similarity)))
            .collect();
        scored.sort_by(|(a_id, a), (b_id, b)| b.total_cmp(a).then(b_id.cmp(a_id)));
        scored.truncate(limit);
        scored
    };
    if candidates.len() <= SCORED_IN_PLACE {
        return Ok(score(query.to_vec(), candidates));
    }
    let query = query.to_vec();
    tokio::task::spawn_blocking(move || score(query, candidates))
        .await
        .map_err(|error| StorageError::Database(format!("scoring vectors: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_drops_accents_and_case() {
        assert_eq!(fold_for_search("Müller"), "muller");
        assert_eq!(fold_for_search("ÉCOLE"), "ecole");
        assert_eq!(fold_for_search("Mañana, niño"), "manana, nino");
        assert_eq!(fold_for_search("Crème brûlée"), "creme brulee");
        assert_eq!(fold_for_search("İstanbul"), "istanbul");
        assert_eq!(fold_for_search("ﬁsh ２"), "fish 2");
        assert_eq!(fold_for_search("Straße"), "straße");
        // Already folded text stays as it is.
        assert_eq!(fold_for_search("muller"), "muller");
    }

    #[test]
    fn query_words_are_folded_words_without_stop_words() {
        assert_eq!(
            memory_query_words("What did Müller say about the école?"),
            ["muller", "say", "ecole"]
        );
        assert_eq!(
            memory_query_words("Wann ist der Termin bei der Zahnärztin?"),
            ["termin", "bei", "zahnarztin"]
        );
        assert_eq!(
            memory_query_words("Quand est l'anniversaire de Léa ?"),
            ["anniversaire", "lea"]
        );
        assert_eq!(
            memory_query_words("¿Dónde está la llave del coche?"),
            ["esta", "llave", "coche"]
        );
        assert!(memory_query_words("the and of").is_empty());
    }

    #[test]
    fn query_syntax_is_only_words() {
        assert_eq!(
            memory_query_words("\"wifi pass*\" NEAR(garage -door) title:code OR x AND y"),
            [
                "wifi", "pass", "near", "garage", "door", "title", "code", "x"
            ]
        );
        let many: String = (0..40).map(|number| format!("w{number} ")).collect();
        assert_eq!(memory_query_words(&many).len(), MAX_MEMORY_QUERY_WORDS);
        assert_eq!(memory_query_words("Müller müller MULLER"), ["muller"]);
    }

    #[test]
    fn search_terms_split_what_callers_hand_over() {
        let words = [
            "\"a:b*".to_string(),
            "NEAR(".to_string(),
            "Café".to_string(),
        ];
        assert_eq!(memory_search_terms(&words), ["a", "b", "near", "cafe"]);
    }

    #[test]
    fn vectors_rank_by_cosine() {
        let stored = |vector: &[f32]| vector_bytes(vector);
        let candidates = vec![
            (1, stored(&[1.0, 0.0])),
            (2, stored(&[0.0, 1.0])),
            (3, stored(&[1.0, 1.0])),
            (4, stored(&[1.0, 0.0, 0.0])),
            (5, stored(&[0.0, 0.0])),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let ranked = runtime
            .block_on(nearest(&[2.0, 0.0], candidates, 2))
            .unwrap();
        assert_eq!(ranked.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [1, 3]);
        assert!((ranked[0].1 - 1.0).abs() < 1e-9);
        assert!((ranked[1].1 - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    }
}
