//! `MemoryIndexer`: keeps family memory (`ports::FamilyMemory`) up with what the family
//! tells hearth. Every `memory.index_interval_seconds` (and when asked, `IndexNow`) it
//! runs one pass (`pass.rs`): the chat entries after its cursor in `messages`, the notes
//! new or changed, the sources whose entry or note is gone, and the texts still without a
//! vector of `memory.embedding_model` sent to the `LlmBroker` (`Embed`, purpose `index`).
//! One pass at a time; the next is timed from the end of the last, later after a failed
//! one (`backoff`).
//!
//! What it writes is its own progress: each batch of chat entries moves the cursor in the
//! transaction that writes them, a note's source says when it was indexed, a text's vector
//! is kept under the text's hash. So a kill -9 at any point loses nothing and indexes
//! nothing twice; the only work done again is an embedding call whose answer came but was
//! not yet stored (at most `EMBED_BATCH` texts).
//!
//! Among the workers of one PostgreSQL database only the holder of the lease
//! `memory:indexer` indexes (taken at the start of each pass, kept by the heartbeats); a
//! worker that stops trusting its leases (`workers::Tenure`) stops between two batches.
//! Alone on its database (SQLite, in memory) it always indexes.

mod messages;
mod pass;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{
    Actor, ActorContext, AsyncContext, Context, Handler, Recipient, ResponseFuture, SpawnHandle,
};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use crate::backoff::{Backoff, Doubling};
use crate::family::Family;
use crate::llm::Embed;
use crate::metrics::Metrics;
use crate::ports::FamilyMemory;
use crate::workers::Worker;

pub use messages::{IndexNow, PassReport, StopIndexing};
pub use pass::{CHAT_BATCH, CURSOR, EMBED_BATCH, EMBED_ROUNDS, SETTLE, VECTORS_LOOK_EVERY};

/// The lease whose holder indexes, among the workers of a shared database.
pub const LEASE: &str = "memory:indexer";
/// The waits after embedding calls that failed in a row: the first at the next pass or
/// later, doubling up to ten minutes.
const EMBED_BACKOFF: Doubling = Doubling::new(Duration::from_secs(5), Duration::from_secs(600));
/// The most the next pass waits after passes the database failed in a row.
const MOST_AFTER_FAILURES: Duration = Duration::from_secs(300);

/// Where texts are turned into vectors.
pub struct EmbeddingTarget {
    /// `llms.<memory.embedding_model>.model`: the name stored vectors are kept under.
    pub model: String,
    /// The `LlmBroker`.
    pub embedder: Recipient<Embed>,
}

/// What the indexer works with.
pub struct IndexerDeps {
    pub memory: Arc<dyn FamilyMemory>,
    /// Who is a member now: a private note or a chat entry of someone removed from the
    /// family is not indexed as theirs.
    pub family: Arc<Family>,
    /// None: nothing is turned into vectors.
    pub embedding: Option<EmbeddingTarget>,
    /// `memory.index_interval_seconds`.
    pub interval: Duration,
    pub metrics: Arc<Metrics>,
    /// This process among the workers of a shared (PostgreSQL) database; `None` alone on
    /// its database.
    pub worker: Option<Arc<Worker>>,
}

/// What one pass hands the next.
pub(crate) struct PassState {
    embed_backoff: Backoff,
    /// No embedding call before this, after one failed.
    embed_not_before: Option<Instant>,
    /// When a pass last found every text embedded (and none written since).
    vectors_done_at: Option<Instant>,
    /// Passes the database failed in a row: the next one waits longer.
    failures: Backoff,
    /// How long until the next pass, when not the interval (after a failed one).
    next_wait: Option<Duration>,
    /// The generation this worker holds `LEASE` at, while it does.
    generation: Option<i64>,
    /// The term of this worker's trust in its leases `generation` belongs to.
    term: u64,
}

impl PassState {
    fn new(interval: Duration) -> Self {
        PassState {
            embed_backoff: Backoff::new(EMBED_BACKOFF),
            embed_not_before: None,
            vectors_done_at: None,
            failures: Backoff::new(Doubling::new(interval, MOST_AFTER_FAILURES.max(interval))),
            next_wait: None,
            generation: None,
            term: 0,
        }
    }
}

pub struct MemoryIndexer {
    deps: Arc<IndexerDeps>,
    /// `None` while a pass runs (it holds the state).
    state: Option<PassState>,
    timer: Option<SpawnHandle>,
    /// Answered when the running pass ends.
    current: Vec<oneshot::Sender<PassReport>>,
    /// Answered by the pass after the running one (asked while it ran).
    next: Vec<oneshot::Sender<PassReport>>,
}

impl MemoryIndexer {
    pub fn new(deps: IndexerDeps) -> Self {
        let state = PassState::new(deps.interval);
        MemoryIndexer {
            deps: Arc::new(deps),
            state: Some(state),
            timer: None,
            current: Vec::new(),
            next: Vec::new(),
        }
    }

    /// Start a pass now (none runs).
    fn begin(&mut self, ctx: &mut Context<Self>) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        if let Some(timer) = self.timer.take() {
            ctx.cancel_future(timer);
        }
        let deps = self.deps.clone();
        let span = tracing::info_span!(
            "memory_pass",
            chats = tracing::field::Empty,
            notes = tracing::field::Empty,
            chunks = tracing::field::Empty,
            orphans = tracing::field::Empty,
            embedded = tracing::field::Empty,
            waiting = tracing::field::Empty,
        );
        let traced = span.clone();
        let run = async move {
            let report = if lead(&deps, &mut state).await {
                pass::pass(&deps, &mut state).await
            } else {
                PassReport::default()
            };
            told(&deps, &report, &traced);
            (report, state)
        };
        ctx.spawn(
            run.instrument(span)
                .into_actor(self)
                .map(|(report, mut state), act, ctx| {
                    let wait = state.next_wait.take().unwrap_or(act.deps.interval);
                    act.state = Some(state);
                    for waiting in act.current.drain(..) {
                        let _ = waiting.send(report.clone());
                    }
                    if act.next.is_empty() {
                        act.timer = Some(ctx.run_later(wait, |act, ctx| {
                            act.timer = None;
                            act.begin(ctx);
                        }));
                    } else {
                        act.current = std::mem::take(&mut act.next);
                        act.begin(ctx);
                    }
                }),
        );
    }
}

/// What a pass did, in its span and the log, and the gauge of chunks waiting for a vector.
fn told(deps: &IndexerDeps, report: &PassReport, span: &tracing::Span) {
    span.record("chats", report.chats);
    span.record("notes", report.notes);
    span.record("chunks", report.chunks);
    span.record("orphans", report.orphans);
    span.record("embedded", report.embedded);
    if let Some(waiting) = report.waiting {
        span.record("waiting", waiting);
        deps.metrics.set(
            "hearth_memory_chunks_waiting_for_vectors",
            &[],
            waiting as f64,
        );
    }
    if report.chats + report.notes + report.embedded > 0 || report.orphans > 0 {
        tracing::info!(
            chats = report.chats,
            notes = report.notes,
            chunks = report.chunks,
            orphans = report.orphans,
            embedded = report.embedded,
            waiting = report.waiting,
            "memory indexed"
        );
    }
}

/// Whether this worker indexes this pass: alone on its database always; among workers,
/// while it holds `LEASE` (taken or extended here) and trusts its leases.
async fn lead(deps: &IndexerDeps, state: &mut PassState) -> bool {
    let Some(worker) = &deps.worker else {
        return true;
    };
    let tenure = *worker.tenure().borrow();
    if tenure.term != state.term {
        // What was held in an ended term is not held any more: taken anew.
        state.term = tenure.term;
        state.generation = None;
    }
    if !tenure.trusted() {
        return false;
    }
    match worker.take(LEASE, state.generation).await {
        Ok(Some(generation)) => {
            if state.generation.is_none() {
                tracing::info!(lease = LEASE, "this worker now indexes family memory");
                // Another worker indexed meanwhile: what it left is looked at afresh.
                state.vectors_done_at = None;
            }
            state.generation = Some(generation);
            true
        }
        Ok(None) => {
            if state.generation.take().is_some() {
                tracing::warn!(
                    lease = LEASE,
                    "another worker took family memory's indexing"
                );
            }
            false
        }
        Err(error) => {
            tracing::warn!(lease = LEASE, %error, "memory's lease not checked; no pass now");
            state.generation = None;
            false
        }
    }
}

/// Whether the pass may go on: alone on its database always; among workers, while the
/// lease taken at its start is trusted.
fn still_leading(deps: &IndexerDeps, state: &PassState) -> bool {
    let Some(worker) = &deps.worker else {
        return true;
    };
    let tenure = *worker.tenure().borrow();
    state.generation.is_some() && tenure.trusted() && tenure.term == state.term
}

impl Actor for MemoryIndexer {
    type Context = Context<Self>;

    /// The first pass after one interval: start-up's own work goes first.
    fn started(&mut self, ctx: &mut Self::Context) {
        self.timer = Some(ctx.run_later(self.deps.interval, |act, ctx| {
            act.timer = None;
            act.begin(ctx);
        }));
    }
}

impl Handler<IndexNow> for MemoryIndexer {
    type Result = ResponseFuture<PassReport>;

    fn handle(&mut self, _: IndexNow, ctx: &mut Self::Context) -> Self::Result {
        let (answer, answered) = oneshot::channel();
        if self.state.is_some() {
            self.current.push(answer);
            self.begin(ctx);
        } else {
            self.next.push(answer);
        }
        Box::pin(async move { answered.await.unwrap_or_default() })
    }
}

impl Handler<StopIndexing> for MemoryIndexer {
    type Result = ();

    fn handle(&mut self, _: StopIndexing, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
