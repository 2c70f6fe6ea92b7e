//! The indexer on tokio's paused clock over the in-memory store, embedding through the
//! real `LlmBroker` on an embedder that counts what it is sent: a turn indexed once it has
//! settled, once, read only in its conversation; passes on their own every interval, a
//! backlog in batches; a changed note indexed again (its readers too), a deleted one gone;
//! each text embedded once however many chunks hold it; a failed embedding tried again
//! after its backoff without losing place; a private note of someone outside the family
//! kept empty; and among workers, only the holder of the lease indexing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Addr};
use async_trait::async_trait;

use super::{EmbeddingTarget, IndexNow, IndexerDeps, LEASE, MemoryIndexer, PassReport};
use crate::actors::llm_broker::{BrokerSettings, EmbeddingEntry, LlmBroker};
use crate::clock::{follow_tokio_clock, now_ms};
use crate::config::{FamilyMember, FamilyRole, LlmBackend, LlmRetryConfig};
use crate::family::Family;
use crate::ids::{ConversationKey, MemberId};
use crate::llm::{Embedder, EmbeddingBatch, HashedEmbedder, LlmError, Role};
use crate::metrics::Metrics;
use crate::ports::{
    Coordination, FamilyMemory, HistoryEntry, Inbound, Inbox, MemoryFilter, NoteRef,
    NoteVisibility, NoteWrite, Notes, TurnRecord, memory_query_words,
};
use crate::readiness::Readiness;
use crate::storage::in_memory::InMemoryStore;
use crate::workers::Worker;

const SECOND: Duration = Duration::from_secs(1);
const MODEL: &str = "nomic-embed-text";

/// Hashed vectors, failing its first `fail_first` calls; records each call's texts.
#[derive(Default)]
struct Counting {
    calls: Mutex<Vec<Vec<String>>>,
    fail_first: Mutex<usize>,
}

impl Counting {
    fn texts(&self) -> Vec<String> {
        self.calls.lock().unwrap().concat()
    }

    fn call_count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait]
impl Embedder for Counting {
    fn wire(&self) -> &'static str {
        "counting"
    }

    async fn embed(&self, texts: &[String]) -> Result<EmbeddingBatch, LlmError> {
        self.calls.lock().unwrap().push(texts.to_vec());
        let fails = {
            let mut failing = self.fail_first.lock().unwrap();
            let fails = *failing > 0;
            *failing = failing.saturating_sub(1);
            fails
        };
        if fails {
            return Err(LlmError::Status {
                status: 503,
                retry_after: None,
                body: "scripted".into(),
            });
        }
        HashedEmbedder.embed(texts).await
    }
}

fn member(id: &str) -> MemberId {
    id.parse().unwrap()
}

fn family() -> Arc<Family> {
    let of = |id: &str| FamilyMember {
        id: member(id),
        name: None,
        telegram_user_id: None,
        matrix_user_id: None,
        role: FamilyRole::Parent,
        timezone: None,
    };
    Arc::new(Family::new(&[of("alice"), of("bob")]))
}

struct Setup {
    store: Arc<InMemoryStore>,
    indexer: Addr<MemoryIndexer>,
    embedder: Arc<Counting>,
    metrics: Arc<Metrics>,
}

impl Setup {
    async fn index(&self) -> PassReport {
        self.indexer.send(IndexNow).await.unwrap()
    }

    /// The texts `reader` finds for `query`'s words.
    async fn found(&self, reader: &str, query: &str) -> Vec<String> {
        let words = memory_query_words(query);
        let hits = (self
            .store
            .search_words(&member(reader), &words, &MemoryFilter::default(), 20))
        .await
        .unwrap();
        hits.into_iter().map(|hit| hit.text).collect()
    }
}

/// The broker with the counting embedder as its embedding entry, tried once a call.
fn broker(embedder: Arc<Counting>, store: &Arc<InMemoryStore>) -> Addr<LlmBroker> {
    let settings = BrokerSettings {
        max_concurrent_local: 1,
        max_concurrent_cloud: 1,
        retry: LlmRetryConfig {
            max_attempts: 1,
            initial_backoff_ms: 100,
            max_backoff_ms: 100,
            max_retry_after_seconds: 1,
        },
        transcription: None,
        embedding: Some(EmbeddingEntry {
            llm_name: "vectors".into(),
            model: MODEL.into(),
            backend: LlmBackend::Local,
            timeout: Duration::from_secs(30),
            embedder,
            cost_per_million_input_tokens: 0.0,
        }),
    };
    let metrics = Arc::new(Metrics::default());
    LlmBroker::new(HashMap::new(), settings, store.clone(), metrics).start()
}

/// Passes of their own this far apart unless a test says otherwise: the tests ask for them.
const LONG: Duration = Duration::from_secs(3600);

fn deps(
    store: &Arc<InMemoryStore>,
    embedder: &Arc<Counting>,
    worker: Option<Arc<Worker>>,
    interval: Duration,
) -> IndexerDeps {
    let broker = broker(embedder.clone(), store);
    IndexerDeps {
        memory: store.clone(),
        family: family(),
        embedding: Some(EmbeddingTarget {
            model: MODEL.into(),
            embedder: broker.recipient(),
        }),
        interval,
        metrics: Arc::new(Metrics::default()),
        worker,
    }
}

fn start(store: &Arc<InMemoryStore>) -> Setup {
    start_every(store, LONG)
}

fn start_every(store: &Arc<InMemoryStore>, interval: Duration) -> Setup {
    let embedder = Arc::new(Counting::default());
    let deps = deps(store, &embedder, None, interval);
    let metrics = deps.metrics.clone();
    Setup {
        store: store.clone(),
        indexer: MemoryIndexer::new(deps).start(),
        embedder,
        metrics,
    }
}

fn said(role: Role, text: &str, inbox_id: &str, at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        role,
        content: text.into(),
        profile_id: "family".into(),
        inbox_id: Some(inbox_id.into()),
        tool_calls: Vec::new(),
        tool_call_id: None,
        created_at_ms: at_ms,
    }
}

/// `who` asks `question` in `conversation` and hearth answers `answer`: one turn, stored as
/// the queue stores it (the inbox row, then the history with the turn's end).
async fn turn(store: &InMemoryStore, conversation: &str, who: &str, question: &str, answer: &str) {
    let conversation: ConversationKey = conversation.parse().unwrap();
    let id = format!("m-{}", uuid::Uuid::now_v7());
    let at_ms = now_ms();
    let inbound = Inbound {
        id: id.clone(),
        conversation: conversation.clone(),
        member_id: member(who),
        text: question.into(),
        platform_event_id: None,
        received_at_ms: at_ms,
        extras: Default::default(),
    };
    store.accept(&inbound).await.unwrap();
    let record = TurnRecord {
        conversation_key: conversation,
        messages: vec![
            said(Role::User, question, &id, at_ms),
            said(Role::Assistant, answer, &id, at_ms + 1),
        ],
        reply: answer.into(),
        outgoing: None,
    };
    store.complete(&id, &record).await.unwrap();
}

#[actix::test]
async fn a_turn_is_indexed_once_it_has_settled_once_and_read_only_in_its_conversation() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let setup = start(&store);
    turn(
        &store,
        "telegram:1001",
        "alice",
        "When is the dentist?",
        "On Tuesday at 9.",
    )
    .await;

    // Still settling: nothing is read yet.
    let report = setup.index().await;
    assert!(report.led);
    assert_eq!((report.chats, report.chunks), (0, 0));
    assert!(setup.found("alice", "dentist").await.is_empty());

    tokio::time::sleep(super::SETTLE + SECOND).await;
    let report = setup.index().await;
    assert_eq!((report.chats, report.chunks, report.error), (2, 2, None));
    assert_eq!(
        setup.found("alice", "dentist").await,
        ["When is the dentist?"]
    );
    assert_eq!(setup.found("alice", "tuesday").await, ["On Tuesday at 9."]);
    assert!(
        setup.found("bob", "dentist").await.is_empty(),
        "bob never wrote there"
    );
    let entries = store.chats_after(0, i64::MAX, 10).await.unwrap();
    let last = entries.last().unwrap().message_id;
    assert_eq!(store.cursor(super::CURSOR).await.unwrap(), last);

    // Once: the next passes read nothing again.
    tokio::time::sleep(super::SETTLE).await;
    let report = setup.index().await;
    assert_eq!((report.chats, report.chunks), (0, 0));
    let status = store.status(Some(MODEL)).await.unwrap();
    assert_eq!((status.sources, status.chunks, status.waiting), (2, 2, 0));
    assert_eq!(
        setup
            .metrics
            .value("hearth_memory_chunks_indexed_total", &[("kind", "chat")]),
        2.0
    );
    assert_eq!(
        setup
            .metrics
            .value("hearth_memory_chunks_waiting_for_vectors", &[]),
        0.0
    );
}

#[actix::test]
async fn passes_run_every_interval_and_a_backlog_is_read_in_batches() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let turns = super::CHAT_BATCH + 25;
    for number in 0..turns {
        let question = format!("Question number {number} about the garden");
        turn(&store, "telegram:1001", "alice", &question, "Noted.").await;
    }
    let setup = start_every(&store, 5 * SECOND);
    // Nobody asks: passes come every interval from the start; the first after the backlog
    // settled reads all of it, batch after batch.
    tokio::time::sleep(10 * SECOND + SECOND).await;
    let status = store.status(None).await.unwrap();
    assert_eq!(status.sources as usize, 2 * turns);
    let cursor = store.cursor(super::CURSOR).await.unwrap();
    assert_eq!(store.chats_behind(cursor).await.unwrap().entries, 0);

    // A turn later is read by a pass of its own, within an interval of settling.
    turn(
        &store,
        "telegram:1001",
        "alice",
        "What about the roses?",
        "Water them.",
    )
    .await;
    tokio::time::sleep(super::SETTLE + 5 * SECOND + SECOND).await;
    assert_eq!(
        setup.found("alice", "roses").await,
        ["What about the roses?"]
    );
    // "Noted." was embedded once, though every other chunk says it.
    let texts = setup.embedder.texts();
    assert_eq!(texts.iter().filter(|text| *text == "Noted.").count(), 1);
}

#[actix::test]
async fn a_changed_note_is_indexed_again_and_a_deleted_one_goes() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let setup = start(&store);
    let write = |title: &str, content: &str, visibility, writer: &str| NoteWrite {
        title: title.into(),
        content: content.into(),
        visibility,
        writer: member(writer),
        at_ms: now_ms(),
    };
    store
        .save(&write(
            "Wifi",
            "The password is kartoffel",
            Some(NoteVisibility::Family),
            "alice",
        ))
        .await
        .unwrap();
    store
        .save(&write(
            "Diary",
            "Surprise party for alice",
            Some(NoteVisibility::Private),
            "bob",
        ))
        .await
        .unwrap();
    // Changed this very moment: indexed by a later pass, once.
    assert_eq!(setup.index().await.notes, 0);
    tokio::time::sleep(2 * SECOND).await;
    let report = setup.index().await;
    assert_eq!((report.notes, report.chunks), (2, 2));
    assert_eq!(
        setup.found("alice", "kartoffel").await,
        ["Wifi\n\nThe password is kartoffel"]
    );
    assert_eq!(setup.found("bob", "kartoffel").await.len(), 1);
    assert!(
        setup.found("alice", "surprise").await.is_empty(),
        "bob's own"
    );
    assert_eq!(setup.found("bob", "surprise").await.len(), 1);
    tokio::time::sleep(2 * SECOND).await;
    assert_eq!(setup.index().await.notes, 0, "indexed once");

    store
        .save(&write(
            "Wifi",
            "The password is now sonnenblume",
            None,
            "bob",
        ))
        .await
        .unwrap();
    tokio::time::sleep(2 * SECOND).await;
    let report = setup.index().await;
    assert_eq!(report.notes, 1);
    assert!(setup.found("alice", "kartoffel").await.is_empty());
    assert_eq!(setup.found("alice", "sonnenblume").await.len(), 1);

    // Made private by its author: the family reads it no more.
    let wifi = Notes::get(
        store.as_ref(),
        &member("alice"),
        &NoteRef::Title("Wifi".into()),
    )
    .await;
    let wifi = wifi.unwrap().unwrap();
    let private = NoteVisibility::Private;
    (store.set_visibility(&member("alice"), wifi.id, private, now_ms()))
        .await
        .unwrap();
    tokio::time::sleep(2 * SECOND).await;
    assert_eq!(setup.index().await.notes, 1);
    assert_eq!(setup.found("alice", "sonnenblume").await.len(), 1);
    assert!(setup.found("bob", "sonnenblume").await.is_empty());

    let deleted = store
        .delete(&member("bob"), &NoteRef::Title("Diary".into()))
        .await;
    assert!(deleted.unwrap().is_some());
    let report = setup.index().await;
    assert!(report.orphans >= 1, "{report:?}");
    assert!(setup.found("bob", "surprise").await.is_empty());
    assert_eq!(store.status(None).await.unwrap().sources, 1);
}

#[actix::test]
async fn each_text_is_embedded_once_however_many_chunks_hold_it() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let setup = start(&store);
    turn(&store, "telegram:1001", "alice", "Buy milk", "ok thanks").await;
    turn(&store, "telegram:1002", "bob", "Buy eggs", "ok thanks").await;
    tokio::time::sleep(super::SETTLE + SECOND).await;
    let report = setup.index().await;
    assert_eq!(
        (report.chunks, report.embedded, report.waiting),
        (4, 3, Some(0))
    );
    let mut texts = setup.embedder.texts();
    texts.sort();
    assert_eq!(texts, ["Buy eggs", "Buy milk", "ok thanks"]);

    // Nothing waits: later passes embed nothing, even when they look again.
    tokio::time::sleep(super::VECTORS_LOOK_EVERY + SECOND).await;
    let report = setup.index().await;
    assert_eq!((report.embedded, report.waiting), (0, Some(0)));
    assert_eq!(setup.embedder.texts().len(), 3);

    // The vectors are there to search, within the same privacy.
    let query = crate::llm::hashed_embedding("milk", crate::llm::HASHED_DIMENSIONS);
    let nearest = |reader: &str| {
        let store = store.clone();
        let reader = member(reader);
        let query = query.clone();
        async move {
            let hits = store
                .search_vector(&reader, MODEL, &query, &MemoryFilter::default(), 1)
                .await
                .unwrap();
            hits.into_iter().map(|hit| hit.text).collect::<Vec<_>>()
        }
    };
    assert_eq!(nearest("alice").await, ["Buy milk"]);
    assert_ne!(nearest("bob").await, ["Buy milk"]);
}

#[actix::test]
async fn a_failed_embedding_is_tried_again_after_its_backoff_without_losing_place() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let setup = start(&store);
    *setup.embedder.fail_first.lock().unwrap() = 2;
    turn(&store, "telegram:1001", "alice", "Buy milk", "Added milk.").await;
    tokio::time::sleep(super::SETTLE + SECOND).await;

    let report = setup.index().await;
    assert_eq!((report.chats, report.embedded), (2, 0));
    assert!(report.error.is_some(), "{report:?}");
    assert_eq!(report.waiting, Some(2));
    assert_eq!(setup.embedder.call_count(), 1);
    // The model is not asked again before the backoff's wait (5 s).
    let report = setup.index().await;
    assert_eq!((report.embedded, report.waiting), (0, Some(2)));
    assert_eq!(
        setup.embedder.call_count(),
        1,
        "asked again before its wait"
    );

    // Indexing goes on meanwhile. The second try fails too: the next waits twice as long.
    turn(
        &store,
        "telegram:1001",
        "alice",
        "Buy bread",
        "Added bread.",
    )
    .await;
    tokio::time::sleep(super::SETTLE + SECOND).await;
    let report = setup.index().await;
    assert_eq!((report.chats, report.embedded), (2, 0));
    assert_eq!(setup.embedder.call_count(), 2);
    tokio::time::sleep(5 * SECOND).await;
    assert_eq!(setup.index().await.embedded, 0);
    assert_eq!(
        setup.embedder.call_count(),
        2,
        "asked again before its doubled wait"
    );
    tokio::time::sleep(6 * SECOND).await;
    let report = setup.index().await;
    assert_eq!(
        (report.embedded, report.waiting, report.error),
        (4, Some(0), None)
    );
    let cursor = store.cursor(super::CURSOR).await.unwrap();
    assert_eq!(store.chats_behind(cursor).await.unwrap().entries, 0);
    // The texts of the failed calls were sent again, each once more; nothing else twice.
    let calls = setup.embedder.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 3);
    let mut last = calls[2].clone();
    last.sort();
    assert_eq!(
        last,
        ["Added bread.", "Added milk.", "Buy bread", "Buy milk"]
    );
}

#[actix::test]
async fn a_private_note_of_someone_outside_the_family_holds_nothing() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let setup = start(&store);
    let note = NoteWrite {
        title: "Secrets".into(),
        content: "The safe's code is 1234".into(),
        visibility: Some(NoteVisibility::Private),
        writer: member("carol"),
        at_ms: now_ms(),
    };
    store.save(&note).await.unwrap();
    tokio::time::sleep(2 * SECOND).await;
    let report = setup.index().await;
    assert_eq!((report.notes, report.chunks, report.embedded), (1, 0, 0));
    assert!(setup.found("carol", "safe").await.is_empty());
    tokio::time::sleep(2 * SECOND).await;
    assert_eq!(setup.index().await.notes, 0, "not read again");
}

#[actix::test]
async fn among_workers_only_the_holder_of_the_lease_indexes() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let coordination: Arc<dyn Coordination> = store.coordination();
    let join = || async {
        let readiness = Arc::new(Readiness::default());
        Arc::new(Worker::join(coordination.clone(), readiness).await.unwrap())
    };
    let (first, second) = (join().await, join().await);
    let embedder = Arc::new(Counting::default());
    let indexers: Vec<Addr<MemoryIndexer>> = [first.clone(), second.clone()]
        .into_iter()
        .map(|worker| MemoryIndexer::new(deps(&store, &embedder, Some(worker), LONG)).start())
        .collect();
    turn(&store, "telegram:1001", "alice", "Buy milk", "Added milk.").await;
    tokio::time::sleep(super::SETTLE + SECOND).await;

    let reports = [
        indexers[0].send(IndexNow).await.unwrap(),
        indexers[1].send(IndexNow).await.unwrap(),
    ];
    let led: Vec<bool> = reports.iter().map(|report| report.led).collect();
    assert_eq!(led, [true, false]);
    assert_eq!(reports[0].chats + reports[1].chats, 2);
    let holder = coordination.lease_holder(LEASE).await.unwrap().unwrap();
    assert_eq!(holder.worker_id, first.worker_id());

    // The holder leaves: the other takes over at its next pass.
    turn(
        &store,
        "telegram:1001",
        "alice",
        "Buy bread",
        "Added bread.",
    )
    .await;
    tokio::time::sleep(super::SETTLE + SECOND).await;
    first.leave().await;
    let report = indexers[1].send(IndexNow).await.unwrap();
    assert!(report.led);
    assert_eq!((report.chats, report.embedded), (2, 2));
    let mut texts = embedder.texts();
    texts.sort();
    assert_eq!(
        texts,
        ["Added bread.", "Added milk.", "Buy bread", "Buy milk"]
    );
}
