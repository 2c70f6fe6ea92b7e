//! One pass of the indexer, in this order: the chat entries after the cursor (in batches,
//! each written with the cursor's move in one transaction, so a kill between two batches
//! loses nothing and indexes nothing twice), the notes new or changed since they were
//! indexed, the sources whose entry or note is gone, then the texts without a vector of the
//! embedding model (each text once, however many chunks hold it), at most
//! `EMBED_ROUNDS` calls a pass. A failed embedding waits by `backoff` before the next try;
//! what was indexed stays, and the next pass goes on from the cursor.

use std::time::Duration;

use tokio::time::Instant;

use super::messages::PassReport;
use super::{IndexerDeps, PassState};
use crate::family::Family;
use crate::llm::{Embed, EmbedPurpose};
use crate::ports::{
    ChatToIndex, MemoryKind, MemoryReaders, MemorySource, Note, NoteVisibility, StorageError,
    now_ms,
};
use crate::recall::chunks::chunks_of;

/// The indexer's cursor in `messages`.
pub const CURSOR: &str = "messages";
/// How old a chat entry must be before it is indexed: a turn's entries are all written by
/// then, so the cursor never passes one still being written.
pub const SETTLE: Duration = Duration::from_secs(5);
/// Chat entries read and written in one transaction.
pub const CHAT_BATCH: usize = 200;
/// Notes read and written in one transaction; at most `NOTE_ROUNDS` batches a pass.
const NOTE_BATCH: usize = 100;
const NOTE_ROUNDS: usize = 10;
/// Orphans removed in one statement; at most `ORPHAN_ROUNDS` a pass.
const ORPHAN_BATCH: usize = 500;
const ORPHAN_ROUNDS: usize = 10;
/// Texts embedded in one call (the broker's most per call); at most `EMBED_ROUNDS` calls a
/// pass, so a large backlog is embedded over several passes, never holding one for long.
pub const EMBED_BATCH: usize = crate::llm::MAX_TEXTS_PER_CALL;
pub const EMBED_ROUNDS: usize = 32;
/// The pause between two batches: other writes go first.
const BETWEEN_BATCHES: Duration = Duration::from_millis(20);
/// How far back a note's indexing time is set from the moment before it was read: a note
/// changed by a worker whose clock is behind this one's by less is still indexed again.
/// A note changed more recently waits for a later pass.
const CLOCKS_ALLOWANCE_MS: i64 = 1_000;
/// After a pass found every text embedded and wrote nothing, the next look for texts
/// without a vector waits this long (other writers than the indexer may add chunks).
pub const VECTORS_LOOK_EVERY: Duration = Duration::from_secs(60);

/// One pass: everything new indexed, orphans removed, missing vectors embedded. Stops at
/// the first storage error (the next pass goes on from where this one wrote last) and
/// between batches when this worker stops leading.
pub(super) async fn pass(deps: &IndexerDeps, state: &mut PassState) -> PassReport {
    let mut report = PassReport {
        led: true,
        ..PassReport::default()
    };
    if let Err(error) = deps.family.refresh().await {
        tracing::warn!(%error, "the family not read again; indexing with the roster held");
    }
    let indexed = async {
        index_chats(deps, state, &mut report).await?;
        index_notes(deps, state, &mut report).await?;
        remove_orphans(deps, state, &mut report).await?;
        embed(deps, state, &mut report).await
    };
    match indexed.await {
        Ok(()) => state.failures.reset(),
        Err(error) => {
            let wait = state.failures.failed();
            state.next_wait = Some(wait);
            deps.metrics.error("memory_indexer");
            tracing::warn!(
                %error,
                retry_in_s = wait.as_secs(),
                "memory indexing stopped; the next pass goes on from where it wrote last"
            );
            report.error = Some(error.to_string());
        }
    }
    report
}

/// The chat entries after the cursor, batch after batch until none is left settled.
async fn index_chats(
    deps: &IndexerDeps,
    state: &PassState,
    report: &mut PassReport,
) -> Result<(), StorageError> {
    let mut after = deps.memory.cursor(CURSOR).await?;
    while super::still_leading(deps, state) {
        let settled_before = now_ms().saturating_sub(millis(SETTLE));
        let entries = deps
            .memory
            .chats_after(after, settled_before, CHAT_BATCH)
            .await?;
        let Some(last) = entries.last().map(|entry| entry.message_id) else {
            break;
        };
        let sources: Vec<MemorySource> = (entries.iter())
            .filter_map(|entry| chat_source(entry, &deps.family))
            .collect();
        let chunks = chunk_count(&sources);
        deps.memory
            .put_sources(&sources, Some((CURSOR, last)), now_ms())
            .await?;
        deps.metrics.add(
            "hearth_memory_chunks_indexed_total",
            &[("kind", MemoryKind::Chat.as_str())],
            chunks as f64,
        );
        report.chats += entries.len();
        report.chunks += chunks;
        after = last;
        if entries.len() < CHAT_BATCH {
            break;
        }
        tokio::time::sleep(BETWEEN_BATCHES).await;
    }
    Ok(())
}

/// A chat entry as a source read in its conversation: a member's entry lists them as one
/// of its readers, but for a member no longer in the family (removed since): their entry
/// stays the conversation's, naming nobody. An entry of no words is no source.
fn chat_source(entry: &ChatToIndex, family: &Family) -> Option<MemorySource> {
    let chunks = chunks_of(&entry.text);
    if chunks.is_empty() {
        return None;
    }
    let member = (entry.member.clone()).filter(|member| family.member(member.as_str()).is_some());
    Some(MemorySource {
        kind: MemoryKind::Chat,
        reference: entry.message_id.to_string(),
        title: String::new(),
        readers: MemoryReaders::Conversation,
        member,
        conversation: Some(entry.conversation_key.clone()),
        created_at_ms: entry.created_at_ms,
        chunks,
    })
}

/// The notes new or changed since they were indexed.
async fn index_notes(
    deps: &IndexerDeps,
    state: &PassState,
    report: &mut PassReport,
) -> Result<(), StorageError> {
    for _ in 0..NOTE_ROUNDS {
        if !super::still_leading(deps, state) {
            break;
        }
        // Before the read (`FamilyMemory::put_sources`): a note changed meanwhile is
        // indexed again. Only notes last changed before it are indexed now (they come
        // least recently changed first), so none is indexed twice for one change.
        let at_ms = now_ms().saturating_sub(CLOCKS_ALLOWANCE_MS);
        let notes = deps.memory.notes_to_index(NOTE_BATCH).await?;
        let read = notes.len();
        let settled: Vec<&Note> = (notes.iter())
            .take_while(|note| note.updated_at_ms <= at_ms)
            .collect();
        if settled.is_empty() {
            break;
        }
        let sources: Vec<MemorySource> = (settled.iter())
            .map(|note| note_source(note, &deps.family))
            .collect();
        let chunks = chunk_count(&sources);
        deps.memory.put_sources(&sources, None, at_ms).await?;
        deps.metrics.add(
            "hearth_memory_chunks_indexed_total",
            &[("kind", MemoryKind::Note.as_str())],
            chunks as f64,
        );
        report.notes += settled.len();
        report.chunks += chunks;
        if read < NOTE_BATCH || settled.len() < read {
            break;
        }
        tokio::time::sleep(BETWEEN_BATCHES).await;
    }
    Ok(())
}

/// A note as a source: its title and content, read by the family or by its author alone.
/// A private note of a member no longer in the family holds nothing (`remove_member` took
/// their sources; the note itself stays in `notes`), so it is not indexed again for them.
/// Its time is when it was last written: what it says now was said then.
fn note_source(note: &Note, family: &Family) -> MemorySource {
    let text = format!("{}\n\n{}", note.title, note.content);
    let (readers, chunks) = match note.visibility {
        NoteVisibility::Family => (MemoryReaders::Family, chunks_of(&text)),
        NoteVisibility::Private if family.member(note.author.as_str()).is_some() => {
            (MemoryReaders::Member, chunks_of(&text))
        }
        NoteVisibility::Private => (MemoryReaders::Member, Vec::new()),
    };
    MemorySource {
        kind: MemoryKind::Note,
        reference: note.id.to_string(),
        title: note.title.clone(),
        readers,
        member: Some(note.author.clone()),
        conversation: None,
        created_at_ms: note.updated_at_ms,
        chunks,
    }
}

fn chunk_count(sources: &[MemorySource]) -> usize {
    sources.iter().map(|source| source.chunks.len()).sum()
}

/// The sources whose chat entry or note is gone (retention, a deleted note), and the
/// vectors no chunk has any more.
async fn remove_orphans(
    deps: &IndexerDeps,
    state: &PassState,
    report: &mut PassReport,
) -> Result<(), StorageError> {
    for _ in 0..ORPHAN_ROUNDS {
        if !super::still_leading(deps, state) {
            break;
        }
        let removed = deps.memory.remove_orphans(ORPHAN_BATCH).await?;
        report.orphans += removed;
        if removed < ORPHAN_BATCH as u64 {
            break;
        }
        tokio::time::sleep(BETWEEN_BATCHES).await;
    }
    if report.orphans > 0 {
        tracing::info!(removed = report.orphans, "memory of what is gone removed");
    }
    Ok(())
}

/// The texts without a vector of the embedding model, embedded a call at a time, each
/// call's vectors stored before the next; at most `EMBED_ROUNDS` calls. A failed call is
/// logged and tried again after the backoff's wait, not before the next pass.
async fn embed(
    deps: &IndexerDeps,
    state: &mut PassState,
    report: &mut PassReport,
) -> Result<(), StorageError> {
    let Some(embedding) = &deps.embedding else {
        return Ok(());
    };
    if report.chunks > 0 {
        state.vectors_done_at = None;
    }
    let now = Instant::now();
    let looked_lately =
        (state.vectors_done_at).is_some_and(|done| now.duration_since(done) < VECTORS_LOOK_EVERY);
    let waiting_out = state
        .embed_not_before
        .is_some_and(|not_before| now < not_before);
    if looked_lately {
        report.waiting = Some(0);
        return Ok(());
    }
    if !waiting_out {
        for _ in 0..EMBED_ROUNDS {
            if !super::still_leading(deps, state) {
                break;
            }
            let missing = (deps.memory)
                .vectors_missing(&embedding.model, EMBED_BATCH)
                .await?;
            if missing.is_empty() {
                state.vectors_done_at = Some(Instant::now());
                break;
            }
            let (hashes, texts): (Vec<String>, Vec<String>) = missing.into_iter().unzip();
            let asked = Embed {
                texts,
                member: None,
                purpose: EmbedPurpose::Index,
            };
            let answer = match embedding.embedder.send(asked).await {
                Ok(answer) => answer.map_err(|error| error.to_string()),
                Err(error) => Err(format!("the llm broker did not answer: {error}")),
            };
            let embeddings = match answer {
                Ok(embeddings) if embeddings.vectors.len() == hashes.len() => embeddings,
                Ok(embeddings) => {
                    let error = format!(
                        "asked for {} vectors, the broker answered {}",
                        hashes.len(),
                        embeddings.vectors.len()
                    );
                    embedding_failed(deps, state, report, error);
                    break;
                }
                Err(error) => {
                    embedding_failed(deps, state, report, error);
                    break;
                }
            };
            let count = hashes.len();
            let vectors: Vec<(String, Vec<f32>)> =
                hashes.into_iter().zip(embeddings.vectors).collect();
            deps.memory.put_vectors(&embedding.model, &vectors).await?;
            state.embed_backoff.reset();
            state.embed_not_before = None;
            report.embedded += count;
            if count < EMBED_BATCH {
                state.vectors_done_at = Some(Instant::now());
                break;
            }
            tokio::time::sleep(BETWEEN_BATCHES).await;
        }
    }
    report.waiting = if state.vectors_done_at.is_some() {
        Some(0)
    } else {
        Some(deps.memory.status(Some(&embedding.model)).await?.waiting)
    };
    Ok(())
}

/// An embedding call failed: logged, counted, and not tried again before the backoff's
/// wait has passed.
fn embedding_failed(
    deps: &IndexerDeps,
    state: &mut PassState,
    report: &mut PassReport,
    error: String,
) {
    let wait = state.embed_backoff.failed();
    state.embed_not_before = Some(Instant::now() + wait);
    deps.metrics.error("memory_embedding");
    tracing::warn!(
        %error,
        failures = state.embed_backoff.failures(),
        retry_in_s = wait.as_secs(),
        "memory's texts not embedded; tried again later"
    );
    report.error = Some(error);
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
