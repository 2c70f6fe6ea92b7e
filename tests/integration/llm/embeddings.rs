//! Embeddings: the real OpenAI-compatible client through the real `LlmBroker` against the
//! fake's `/v1/embeddings` over real HTTP: the body and key the server reads, vectors put
//! back in their texts' order, texts split into calls of 64, a 429 and a 500 tried again
//! and a 400 not, an answer that is not what was asked refused plainly, a long one cut
//! off, a silent server timed out, the key never in an error, and the cost in the
//! member's usage as SQLite keeps it. (The retries' timing is tested on the paused clock in
//! the broker's own `embedding_tests.rs`.)

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};
use hearth::actors::llm_broker::{BrokerSettings, EmbeddingEntry, LlmBroker};
use hearth::config::{LlmBackend, LlmRetryConfig};
use hearth::ids::MemberId;
use hearth::llm::openai_embedding::OpenAiEmbedder;
use hearth::llm::{
    Embed, EmbedPurpose, Embedder, Embeddings, LlmError, ProviderSettings, hashed_embedding,
};
use hearth::metrics::Metrics;
use hearth::storage::Stores;
use serde_json::json;

use crate::support::llm_server::{EMBEDDING_DIMENSIONS, EmbeddingStep, ScriptedLlmServer};

const KEY: &str = "sk-embed-secret";
/// A dollar a million tokens.
const PRICE: f64 = 1.0;

fn embedder(server: &ScriptedLlmServer, key: Option<&str>, timeout: Duration) -> OpenAiEmbedder {
    OpenAiEmbedder::new(
        ProviderSettings {
            // A trailing slash, as people write it: joined like chat's url.
            base_url: format!("{}/", server.base_url()),
            model: "nomic-embed-text".into(),
            api_key: key.map(str::to_owned),
            timeout,
            max_tokens: None,
        },
        reqwest::Client::new(),
    )
}

struct Broker {
    addr: Addr<LlmBroker>,
    stores: Stores,
    metrics: Arc<Metrics>,
    _folder: tempfile::TempDir,
}

/// The broker over `embedder`, its telemetry in a SQLite database of its own.
async fn broker(embedder: Option<Arc<dyn Embedder>>) -> Broker {
    let folder = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let stores = hearth::storage::open(&database, 2).await.unwrap();
    let metrics = Arc::new(Metrics::default());
    let embedding = embedder.map(|embedder| EmbeddingEntry {
        llm_name: "vectors".into(),
        model: "nomic-embed-text".into(),
        backend: LlmBackend::Local,
        timeout: Duration::from_secs(6),
        embedder,
        cost_per_million_input_tokens: PRICE,
    });
    let settings = BrokerSettings {
        max_concurrent_local: 1,
        max_concurrent_cloud: 1,
        // Short waits: the timing itself is the paused-clock tests' business.
        retry: LlmRetryConfig {
            max_attempts: 3,
            initial_backoff_ms: 10,
            max_backoff_ms: 20,
            max_retry_after_seconds: 30,
        },
        transcription: None,
        embedding,
    };
    let addr = LlmBroker::new(
        HashMap::new(),
        settings,
        stores.telemetry.clone(),
        metrics.clone(),
    )
    .start();
    Broker {
        addr,
        stores,
        metrics,
        _folder: folder,
    }
}

fn alice() -> MemberId {
    "alice".parse().unwrap()
}

impl Broker {
    async fn embed(&self, texts: &[String]) -> Result<Embeddings, LlmError> {
        let message = Embed {
            texts: texts.to_vec(),
            member: Some(alice()),
            purpose: EmbedPurpose::Index,
        };
        self.addr.send(message).await.unwrap()
    }

    fn calls(&self, outcome: &str) -> f64 {
        let labels = [
            ("backend", "local"),
            ("llm", "vectors"),
            ("outcome", outcome),
        ];
        self.metrics.value("hearth_llm_calls_total", &labels)
    }
}

fn texts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| (*text).to_owned()).collect()
}

fn hashed(texts: &[String]) -> Vec<Vec<f32>> {
    let vectors = texts
        .iter()
        .map(|text| hashed_embedding(text, EMBEDDING_DIMENSIONS));
    vectors.collect()
}

#[actix::test]
async fn the_server_reads_model_and_texts_and_the_vectors_come_back_in_their_order() {
    let server = ScriptedLlmServer::start();
    // Listed last first, as a server may: the indexes put them back.
    server.push_embedding(EmbeddingStep::VectorsReversed);
    let broker = broker(Some(Arc::new(embedder(
        &server,
        Some(KEY),
        Duration::from_secs(5),
    ))))
    .await;
    let asked = texts(&[
        "Buy milk and eggs",
        "Dentist on Tuesday at 9",
        "Grandma's birthday",
    ]);

    let answer = broker.embed(&asked).await.unwrap();

    assert_eq!(answer.vectors, hashed(&asked));
    assert_eq!(answer.dimension, EMBEDDING_DIMENSIONS);
    assert_eq!(answer.model, "nomic-embed-text");
    let requests = server.embedding_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].body,
        json!({"model": "nomic-embed-text", "input": asked})
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(broker.calls("ok"), 1.0);

    // Eleven words, a token each at a dollar a million: in alice's usage as stored.
    broker.stores.telemetry.flush().await;
    let usage = broker.stores.usage.daily_usage(0).await.unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    let alice_usage = &usage[0];
    assert_eq!(alice_usage.member_id, alice());
    assert_eq!(
        (
            alice_usage.llm_calls,
            alice_usage.input_tokens,
            alice_usage.output_tokens
        ),
        (1, 11, 0)
    );
    assert!(
        (alice_usage.cost_usd - 11.0 * PRICE / 1_000_000.0).abs() < 1e-15,
        "{usage:?}"
    );
}

#[actix::test]
async fn many_texts_go_to_the_server_in_calls_of_64_without_a_key_when_none_is_set() {
    let server = ScriptedLlmServer::start();
    let broker = broker(Some(Arc::new(embedder(
        &server,
        None,
        Duration::from_secs(5),
    ))))
    .await;
    let asked: Vec<String> = (0..130).map(|number| format!("chunk {number}")).collect();

    let answer = broker.embed(&asked).await.unwrap();

    assert_eq!(answer.vectors, hashed(&asked));
    let requests = server.embedding_requests();
    let sizes: Vec<usize> = requests
        .iter()
        .map(|request| request.body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [64, 64, 2]);
    assert_eq!(requests[2].body["input"], json!(["chunk 128", "chunk 129"]));
    assert!(
        requests
            .iter()
            .all(|request| request.header("authorization").is_none())
    );
    assert_eq!(broker.calls("ok"), 3.0);
}

#[actix::test]
async fn a_429_and_a_500_are_tried_again_and_a_400_is_not_and_never_shows_the_key() {
    let server = ScriptedLlmServer::start();
    let broker = broker(Some(Arc::new(embedder(
        &server,
        Some(KEY),
        Duration::from_secs(5),
    ))))
    .await;
    server.push_embedding(EmbeddingStep::Error {
        status: 429,
        retry_after: None,
    });
    server.push_embedding(EmbeddingStep::Error {
        status: 500,
        retry_after: None,
    });

    let answer = broker.embed(&texts(&["hello there"])).await.unwrap();

    assert_eq!(answer.vectors, hashed(&texts(&["hello there"])));
    assert_eq!(server.embedding_requests().len(), 3);
    assert_eq!(
        (
            broker.calls("rate_limited"),
            broker.calls("http_error"),
            broker.calls("ok")
        ),
        (1.0, 1.0, 1.0)
    );

    server.push_embedding(EmbeddingStep::Error {
        status: 400,
        retry_after: None,
    });
    let error = broker.embed(&texts(&["hello"])).await.unwrap_err();
    assert!(
        matches!(error, LlmError::Status { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(server.embedding_requests().len(), 4, "not tried again");
    // The fake quotes the key it was sent, as OpenAI does; the error keeps the rest.
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("key provided"), "{shown}");
}

#[actix::test]
async fn an_answer_that_is_not_what_was_asked_is_refused_plainly_and_not_tried_again() {
    let server = ScriptedLlmServer::start();
    let broker = broker(Some(Arc::new(embedder(
        &server,
        None,
        Duration::from_secs(5),
    ))))
    .await;
    let one_vector = json!({"data": [{"index": 0, "embedding": [0.6, 0.8]}]}).to_string();
    let mixed = json!({"data": [
        {"index": 0, "embedding": [0.6, 0.8]},
        {"index": 1, "embedding": [1.0]},
    ]})
    .to_string();
    let cases = [
        (
            "<html>bad gateway</html>".to_owned(),
            "in \"<html>bad gateway</html>\"",
        ),
        (
            one_vector,
            "asked for 2 vectors, the embedding answer has 1",
        ),
        (mixed, "vector 0 has 2 numbers, vector 1 has 1"),
        (json!({"vectors": []}).to_string(), "missing field `data`"),
    ];
    for (number, (body, fragment)) in cases.into_iter().enumerate() {
        server.push_embedding(EmbeddingStep::Body { status: 200, body });

        let error = broker.embed(&texts(&["one", "two"])).await.unwrap_err();

        assert!(
            matches!(&error, LlmError::Decode(message) if message.contains(fragment)),
            "{fragment}: {error:?}"
        );
        assert_eq!(
            server.embedding_requests().len(),
            number + 1,
            "not tried again"
        );
    }
    assert_eq!(broker.calls("decode"), 4.0);
}

#[actix::test]
async fn an_answer_longer_than_its_bound_is_cut_off() {
    let server = ScriptedLlmServer::start();
    let embedder = embedder(&server, None, Duration::from_secs(5));
    // Well-formed, but far longer than one text's vector can be.
    let huge = vec![0.001f32; 200_000];
    let body = json!({"data": [{"index": 0, "embedding": huge}]}).to_string();
    assert!(body.len() > 320 * 1024);
    server.push_embedding(EmbeddingStep::Body { status: 200, body });

    let error = embedder.embed(&texts(&["one"])).await.unwrap_err();

    assert!(
        matches!(&error, LlmError::Decode(message) if message.contains("the answer is longer than")),
        "{error:?}"
    );
}

#[actix::test]
async fn a_server_that_never_answers_times_out() {
    let server = ScriptedLlmServer::start();
    server.push_embedding(EmbeddingStep::Hang);
    let embedder = embedder(&server, None, Duration::from_millis(300));

    let error = embedder.embed(&texts(&["one"])).await.unwrap_err();

    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");
    assert!(error.is_transient());
}

#[actix::test]
async fn without_an_embedding_model_nothing_is_sent() {
    let broker = broker(None).await;

    let error = broker.embed(&texts(&["one"])).await.unwrap_err();

    assert!(matches!(error, LlmError::NoEmbedding), "{error:?}");
    broker.stores.telemetry.flush().await;
    assert!(broker.stores.usage.daily_usage(0).await.unwrap().is_empty());
}
