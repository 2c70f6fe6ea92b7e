//! `Embed` through the broker on tokio's paused clock: the retries, backoff, `Retry-After`
//! and timeout of chat calls, the same telemetry and metrics, cost per million input
//! tokens, texts split into calls of at most `MAX_TEXTS_PER_CALL`, an answer of the wrong
//! shape refused, and `NoEmbedding` without an embedding entry.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::*;
use crate::clock::follow_tokio_clock;
use crate::ids::MemberId;
use crate::llm::{
    EmbedPurpose, EmbeddingBatch, HASHED_DIMENSIONS, HashedEmbedder, MAX_TEXTS_PER_CALL, Usage,
};
use crate::ports::{TelemetryEvent, now_ms};
use crate::storage::in_memory::InMemoryStore;

const RETRY: LlmRetryConfig = LlmRetryConfig {
    max_attempts: 3,
    initial_backoff_ms: 1_000,
    max_backoff_ms: 2_000,
    max_retry_after_seconds: 30,
};

/// What the scripted embedder does with one call.
enum Step {
    /// The hashed vectors of the texts, a token per word.
    Vectors,
    /// This answer, whatever was asked.
    Answer(EmbeddingBatch),
    Fail(LlmError),
    /// Never answer: only the broker's timeout ends the call.
    Hang,
}

/// Takes its steps in order (answering `Vectors` when they run out), recording each call's
/// texts.
#[derive(Default)]
struct Scripted {
    steps: Mutex<VecDeque<Step>>,
    calls: Mutex<Vec<Vec<String>>>,
}

impl Scripted {
    fn with(steps: impl IntoIterator<Item = Step>) -> Arc<Scripted> {
        let scripted = Scripted::default();
        scripted.steps.lock().unwrap().extend(steps);
        Arc::new(scripted)
    }

    fn call_sizes(&self) -> Vec<usize> {
        self.calls.lock().unwrap().iter().map(Vec::len).collect()
    }
}

#[async_trait]
impl Embedder for Scripted {
    fn wire(&self) -> &'static str {
        "scripted"
    }

    async fn embed(&self, texts: &[String]) -> Result<EmbeddingBatch, LlmError> {
        self.calls.lock().unwrap().push(texts.to_vec());
        let step = self.steps.lock().unwrap().pop_front();
        match step.unwrap_or(Step::Vectors) {
            Step::Vectors => HashedEmbedder.embed(texts).await,
            Step::Answer(batch) => Ok(batch),
            Step::Fail(error) => Err(error),
            Step::Hang => std::future::pending().await,
        }
    }
}

fn status(status: u16, retry_after: Option<Duration>) -> LlmError {
    LlmError::Status {
        status,
        retry_after,
        body: "scripted".into(),
    }
}

struct Broker {
    shared: Shared,
    telemetry: Arc<InMemoryStore>,
    metrics: Arc<Metrics>,
}

fn broker(embedder: Option<Arc<Scripted>>) -> Broker {
    let telemetry = Arc::new(InMemoryStore::default());
    let metrics = Arc::new(Metrics::default());
    let embedding = embedder.map(|embedder| EmbeddingEntry {
        llm_name: "vectors".into(),
        model: "nomic-embed-text".into(),
        backend: LlmBackend::Local,
        timeout: Duration::from_secs(20),
        embedder,
        // Two dollars a million tokens: a token costs 0.000002.
        cost_per_million_input_tokens: 2.0,
    });
    let shared = Shared {
        models: HashMap::new(),
        transcription: None,
        embedding,
        local: Semaphore::new(1),
        cloud: Semaphore::new(1),
        retry: RETRY,
        telemetry: telemetry.clone(),
        metrics: metrics.clone(),
    };
    Broker {
        shared,
        telemetry,
        metrics,
    }
}

fn alice() -> MemberId {
    "alice".parse().unwrap()
}

fn embed(texts: &[&str]) -> Embed {
    Embed {
        texts: texts.iter().map(|text| (*text).to_owned()).collect(),
        member: Some(alice()),
        purpose: EmbedPurpose::Query,
    }
}

/// One attempt as its telemetry row tells it.
#[derive(Debug)]
struct Attempt {
    number: u32,
    outcome: String,
    input_tokens: u64,
    cost: f64,
    member: Option<MemberId>,
    /// When it ended, in ms after the test's start.
    ended: i64,
}

impl Broker {
    fn attempts(&self, start_ms: i64) -> Vec<Attempt> {
        self.telemetry
            .events()
            .into_iter()
            .filter_map(|event| match event {
                TelemetryEvent::LlmCall(call) => {
                    assert_eq!(
                        (
                            call.llm_name.as_str(),
                            call.model.as_str(),
                            call.wire.as_str()
                        ),
                        ("vectors", "nomic-embed-text", "scripted")
                    );
                    assert_eq!(call.backend, "local");
                    assert_eq!(call.output_tokens, 0);
                    Some(Attempt {
                        number: call.attempt,
                        outcome: call.outcome,
                        input_tokens: call.input_tokens,
                        cost: call.cost_usd,
                        member: call.member_id,
                        ended: call.at_ms - start_ms,
                    })
                }
                _ => None,
            })
            .collect()
    }
}

fn outcomes(attempts: &[Attempt]) -> Vec<(u32, &str)> {
    attempts
        .iter()
        .map(|attempt| (attempt.number, attempt.outcome.as_str()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_429_waits_its_retry_after_and_the_answer_costs_its_tokens() {
    let _clock = follow_tokio_clock();
    let embedder = Scripted::with([Step::Fail(status(429, Some(Duration::from_secs(4))))]);
    let broker = broker(Some(embedder.clone()));
    let start = now_ms();

    let answer = broker
        .shared
        .embed(embed(&["buy milk and eggs", "dentist on tuesday"]))
        .await
        .unwrap();

    assert_eq!(answer.model, "nomic-embed-text");
    assert_eq!(answer.dimension, HASHED_DIMENSIONS);
    assert_eq!(
        answer.vectors,
        [
            crate::llm::hashed_embedding("buy milk and eggs", HASHED_DIMENSIONS),
            crate::llm::hashed_embedding("dentist on tuesday", HASHED_DIMENSIONS),
        ]
    );
    let attempts = broker.attempts(start);
    assert_eq!(outcomes(&attempts), [(1, "rate_limited"), (2, "ok")]);
    assert_eq!(
        attempts[1].ended - attempts[0].ended,
        4_000,
        "Retry-After obeyed"
    );
    // Seven words, a token each, at 0.000002; the refused attempt cost nothing.
    assert_eq!((attempts[0].input_tokens, attempts[0].cost), (0, 0.0));
    assert_eq!(attempts[1].input_tokens, 7);
    assert!((attempts[1].cost - 0.000_014).abs() < 1e-15, "{attempts:?}");
    assert!(
        attempts
            .iter()
            .all(|attempt| attempt.member == Some(alice()))
    );
    let labels = [("backend", "local"), ("llm", "vectors"), ("outcome", "ok")];
    assert_eq!(broker.metrics.value("hearth_llm_calls_total", &labels), 1.0);
    let texts = [("llm", "vectors"), ("purpose", "query")];
    assert_eq!(
        broker
            .metrics
            .value("hearth_llm_embedded_texts_total", &texts),
        2.0
    );
    let input = [("backend", "local"), ("direction", "input")];
    assert_eq!(broker.metrics.value("hearth_llm_tokens_total", &input), 7.0);
    assert_eq!(
        broker
            .metrics
            .value("hearth_llm_cost_usd_total", &[("backend", "local")]),
        attempts[1].cost
    );
}

#[tokio::test(start_paused = true)]
async fn a_500_is_tried_again_after_the_backoff_until_the_attempts_are_used_up() {
    let _clock = follow_tokio_clock();
    let embedder = Scripted::with((0..3).map(|_| Step::Fail(status(500, None))));
    let broker = broker(Some(embedder.clone()));
    let start = now_ms();

    let failed = broker.shared.embed(embed(&["hello"])).await;

    assert!(
        matches!(failed, Err(LlmError::Status { status: 500, .. })),
        "{failed:?}"
    );
    let attempts = broker.attempts(start);
    assert_eq!(
        outcomes(&attempts),
        [(1, "http_error"), (2, "http_error"), (3, "http_error")]
    );
    let first_pause = attempts[1].ended - attempts[0].ended;
    let second_pause = attempts[2].ended - attempts[1].ended;
    assert!((500..=1_000).contains(&first_pause), "{attempts:?}");
    assert!((1_000..=2_000).contains(&second_pause), "{attempts:?}");
    assert_eq!(embedder.call_sizes(), [1, 1, 1]);
}

#[tokio::test(start_paused = true)]
async fn a_400_is_not_tried_again() {
    let _clock = follow_tokio_clock();
    let embedder = Scripted::with([Step::Fail(status(400, None))]);
    let broker = broker(Some(embedder.clone()));
    let start = now_ms();

    let failed = broker.shared.embed(embed(&["hello"])).await;

    assert!(matches!(failed, Err(LlmError::Status { status: 400, .. })));
    assert_eq!(outcomes(&broker.attempts(start)), [(1, "http_error")]);
    assert_eq!(now_ms(), start, "no wait");
}

#[tokio::test(start_paused = true)]
async fn a_backend_that_never_answers_is_cut_off_at_its_timeout_each_attempt() {
    let _clock = follow_tokio_clock();
    let embedder = Scripted::with((0..3).map(|_| Step::Hang));
    let broker = broker(Some(embedder));
    let start = now_ms();

    let failed = broker.shared.embed(embed(&["hello"])).await;

    assert!(
        matches!(failed, Err(LlmError::Timeout(timeout)) if timeout == Duration::from_secs(20)),
        "{failed:?}"
    );
    let attempts = broker.attempts(start);
    assert_eq!(
        outcomes(&attempts),
        [(1, "timeout"), (2, "timeout"), (3, "timeout")]
    );
    assert_eq!(attempts[0].ended, 20_000);
}

#[tokio::test(start_paused = true)]
async fn many_texts_are_split_into_calls_and_answered_in_their_order() {
    let _clock = follow_tokio_clock();
    // The second call fails once: only it is tried again.
    let embedder = Scripted::with([Step::Vectors, Step::Fail(status(503, None))]);
    let broker = broker(Some(embedder.clone()));
    let texts: Vec<String> = (0..150)
        .map(|number| format!("note number {number}"))
        .collect();
    let start = now_ms();

    let answer = broker
        .shared
        .embed(Embed {
            texts: texts.clone(),
            member: None,
            purpose: EmbedPurpose::Index,
        })
        .await
        .unwrap();

    assert_eq!(MAX_TEXTS_PER_CALL, 64);
    assert_eq!(embedder.call_sizes(), [64, 64, 64, 22]);
    let calls = embedder.calls.lock().unwrap().clone();
    assert_eq!(calls[1], calls[2], "the failed call is sent again whole");
    assert_eq!(calls.concat(), [&texts[..128], &texts[64..]].concat());
    let expected: Vec<Vec<f32>> = texts
        .iter()
        .map(|text| crate::llm::hashed_embedding(text, HASHED_DIMENSIONS))
        .collect();
    assert_eq!(answer.vectors, expected);
    let attempts = broker.attempts(start);
    assert_eq!(
        outcomes(&attempts),
        [(1, "ok"), (1, "http_error"), (2, "ok"), (1, "ok")]
    );
    // Three words a text: 450 tokens in all, each call costing its own.
    let tokens: u64 = attempts.iter().map(|attempt| attempt.input_tokens).sum();
    assert_eq!(tokens, 450);
    let cost: f64 = attempts.iter().map(|attempt| attempt.cost).sum();
    assert!((cost - 0.000_9).abs() < 1e-12, "{cost}");
    assert!(attempts.iter().all(|attempt| attempt.member.is_none()));
    let texts = [("llm", "vectors"), ("purpose", "index")];
    assert_eq!(
        broker
            .metrics
            .value("hearth_llm_embedded_texts_total", &texts),
        150.0
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_of_the_wrong_shape_is_refused_and_not_tried_again() {
    let _clock = follow_tokio_clock();
    let one_vector = EmbeddingBatch {
        vectors: vec![vec![1.0; 8]],
        usage: Usage::default(),
    };
    let embedder = Scripted::with([Step::Answer(one_vector)]);
    let broker = broker(Some(embedder.clone()));
    let start = now_ms();

    let failed = broker.shared.embed(embed(&["one", "two"])).await;

    assert!(
        matches!(&failed, Err(LlmError::Decode(message)) if message.contains("asked for 2 vectors")),
        "{failed:?}"
    );
    assert_eq!(outcomes(&broker.attempts(start)), [(1, "decode")]);

    // A later call of the same request answering another length than the first.
    let shorter = EmbeddingBatch {
        vectors: vec![vec![1.0; 8]; 6],
        usage: Usage::default(),
    };
    embedder
        .steps
        .lock()
        .unwrap()
        .extend([Step::Vectors, Step::Answer(shorter)]);
    let texts: Vec<String> = (0..70).map(|number| format!("text {number}")).collect();
    let failed = broker
        .shared
        .embed(Embed {
            texts,
            member: None,
            purpose: EmbedPurpose::Index,
        })
        .await;
    assert!(
        matches!(&failed, Err(LlmError::Decode(message))
            if message.contains("vectors of 8 numbers after vectors of 64")),
        "{failed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_an_embedding_entry_the_answer_is_no_embedding_and_no_texts_ask_nothing() {
    let missing = broker(None);
    let failed = missing.shared.embed(embed(&["hello"])).await;
    assert!(matches!(failed, Err(LlmError::NoEmbedding)), "{failed:?}");
    assert!(!failed.unwrap_err().is_transient());
    assert!(
        missing.telemetry.events().is_empty(),
        "no backend was called"
    );

    let embedder = Scripted::with([]);
    let broker = broker(Some(embedder.clone()));
    let answer = broker.shared.embed(embed(&[])).await.unwrap();
    assert_eq!(
        (
            answer.vectors.len(),
            answer.dimension,
            answer.model.as_str()
        ),
        (0, 0, "nomic-embed-text")
    );
    assert!(embedder.call_sizes().is_empty());
}
