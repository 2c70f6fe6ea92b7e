//! What the `MemoryIndexer` is asked: a pass now (`IndexNow`), answered with what the pass
//! did (`PassReport`), sent by tests and by whatever wants what it just stored found at
//! once rather than at the next pass; and to stop (`StopIndexing`), sent by
//! `RunningApp::stop` before the database closes. Handled in `memory_indexer/mod.rs`.

use actix::Message;

/// Run a pass as soon as none runs: one started after this arrived, so whatever was
/// stored (and settled) before it is indexed by it. Answered when that pass ends.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "PassReport")]
pub struct IndexNow;

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Whether this worker indexed: alone on its database, or holding `memory:indexer`.
    pub led: bool,
    /// Chat-text entries read past the cursor (each a source, but for an empty one).
    pub chats: usize,
    /// Notes indexed (new or changed).
    pub notes: usize,
    /// Chunks written, chats' and notes'.
    pub chunks: usize,
    /// Sources and vectors removed because what they came from is gone.
    pub orphans: u64,
    /// Texts turned into vectors and stored.
    pub embedded: usize,
    /// Chunks still without a vector of the embedding model, when it was counted.
    pub waiting: Option<u64>,
    /// Why the pass stopped early (the database, the embedding model), if it did.
    pub error: Option<String>,
}

/// Stop: no pass after this one; a pass running is dropped between two writes (each is
/// whole or not at all), and the next start goes on from the cursor.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct StopIndexing;
