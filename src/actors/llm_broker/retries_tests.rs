//! The broker's retries on tokio's paused clock: transient failures tried again after a
//! growing, capped backoff; a server's `Retry-After` obeyed up to
//! `llm_retry.max_retry_after_seconds`, given up at once past it; a call bounded by its
//! model's timeout; a failure that is not transient never tried again. Each attempt is
//! read back from the telemetry it recorded, stamped by the followed wall clock.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::*;
use crate::clock::follow_tokio_clock;
use crate::llm::scripted::ScriptedProvider;
use crate::llm::{CallOrigin, ChatMessage, ChatRequest};
use crate::ports::{TelemetryEvent, now_ms};
use crate::storage::in_memory::InMemoryStore;

const RETRY: LlmRetryConfig = LlmRetryConfig {
    max_attempts: 6,
    initial_backoff_ms: 1_000,
    max_backoff_ms: 2_000,
    max_retry_after_seconds: 30,
};

fn unavailable(retry_after: Option<Duration>) -> LlmError {
    LlmError::Status {
        status: 503,
        retry_after,
        body: "overloaded".into(),
    }
}

/// A provider whose next `times` calls fail as a server that is overloaded.
fn unavailable_times(times: usize) -> Arc<ScriptedProvider> {
    let provider = Arc::new(ScriptedProvider::new());
    for _ in 0..times {
        provider.push_error(unavailable(None));
    }
    provider
}

/// A provider that never answers: only the broker's timeout ends its call.
struct Silent;

#[async_trait]
impl LlmProvider for Silent {
    fn wire(&self) -> &'static str {
        "silent"
    }

    async fn chat(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        std::future::pending().await
    }
}

struct Broker {
    shared: Shared,
    telemetry: Arc<InMemoryStore>,
}

fn broker(provider: Arc<dyn LlmProvider>, retry: LlmRetryConfig) -> Broker {
    let telemetry = Arc::new(InMemoryStore::default());
    let model = ModelEntry {
        model: "m".into(),
        backend: LlmBackend::Cloud,
        timeout: Duration::from_secs(20),
        provider,
        cost_per_million_input_tokens: 0.0,
        cost_per_million_output_tokens: 0.0,
        vision: false,
    };
    let shared = Shared {
        models: HashMap::from([("main".to_string(), model)]),
        transcription: None,
        embedding: None,
        local: Semaphore::new(1),
        cloud: Semaphore::new(1),
        retry,
        telemetry: telemetry.clone(),
        metrics: Arc::new(Metrics::default()),
    };
    Broker { shared, telemetry }
}

impl Broker {
    async fn generate(&self) -> Result<ChatResponse, LlmError> {
        let request = ChatRequest {
            messages: vec![ChatMessage::user("hello")],
            ..Default::default()
        };
        let origin = CallOrigin {
            profile_id: Some("family".into()),
            conversation_key: Some("http:alice".parse().unwrap()),
            member_id: None,
        };
        let message = GenerateChat {
            llm_name: "main".into(),
            fallback_llm_name: None,
            request,
            origin,
            listener: None,
        };
        self.shared.chat("main", &message).await
    }

    /// Each attempt's number, outcome and when it ended, in ms after `start_ms`.
    fn attempts(&self, start_ms: i64) -> Vec<(u32, String, i64)> {
        self.telemetry
            .events()
            .into_iter()
            .filter_map(|event| match event {
                TelemetryEvent::LlmCall(call) => {
                    Some((call.attempt, call.outcome, call.at_ms - start_ms))
                }
                _ => None,
            })
            .collect()
    }
}

fn outcomes(attempts: &[(u32, String, i64)]) -> Vec<(u32, &str)> {
    attempts
        .iter()
        .map(|(attempt, outcome, _)| (*attempt, outcome.as_str()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_tried_again_after_a_growing_capped_backoff() {
    let _clock = follow_tokio_clock();
    let provider = unavailable_times(5);
    provider.push_reply("at last");
    let broker = broker(provider.clone(), RETRY);
    let start = now_ms();

    let answer = broker.generate().await.unwrap();

    assert_eq!(answer.content, "at last");
    let attempts = broker.attempts(start);
    let failed = (1..=5).map(|attempt| (attempt, "http_error"));
    let expected: Vec<(u32, &str)> = failed.chain([(6, "ok")]).collect();
    assert_eq!(outcomes(&attempts), expected);
    let pauses: Vec<i64> = attempts.windows(2).map(|w| w[1].2 - w[0].2).collect();
    // Half of the backoff fixed, half jitter: 1 s, then 2 s, then 4 s, 8 s and 16 s each
    // capped to 2 s.
    let bounds = [
        (500, 1_000),
        (1_000, 2_000),
        (1_000, 2_000),
        (1_000, 2_000),
        (1_000, 2_000),
    ];
    assert_eq!(pauses.len(), bounds.len());
    for (pause, (low, high)) in pauses.iter().zip(bounds) {
        assert!((low..=high).contains(pause), "pauses {pauses:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_last_attempt_s_failure_is_the_answer() {
    let _clock = follow_tokio_clock();
    let provider = unavailable_times(7);
    let broker = broker(provider.clone(), RETRY);
    let start = now_ms();

    let failed = broker.generate().await;

    assert!(matches!(failed, Err(LlmError::Status { status: 503, .. })));
    assert_eq!(broker.attempts(start).len(), 6, "llm_retry.max_attempts");
    assert_eq!(provider.requests().len(), 6);
}

#[tokio::test(start_paused = true)]
async fn a_server_s_retry_after_is_obeyed_and_one_too_long_is_not_waited_for() {
    let _clock = follow_tokio_clock();
    let provider = Arc::new(ScriptedProvider::new());
    provider.push_error(unavailable(Some(Duration::from_secs(25))));
    provider.push_reply("after the pause");
    let broker = broker(provider.clone(), RETRY);
    let start = now_ms();

    assert_eq!(broker.generate().await.unwrap().content, "after the pause");
    let attempts = broker.attempts(start);
    assert_eq!(attempts[1].2 - attempts[0].2, 25_000);

    // Past max_retry_after_seconds: the error goes back at once, for the fallback model
    // or the queue's own retry.
    provider.push_error(unavailable(Some(Duration::from_secs(31))));
    let asked_at = now_ms();
    assert!(broker.generate().await.is_err());
    assert_eq!(now_ms(), asked_at);
    assert_eq!(provider.requests().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_model_that_never_answers_is_cut_off_at_its_timeout_each_attempt() {
    let _clock = follow_tokio_clock();
    let broker = broker(
        Arc::new(Silent),
        LlmRetryConfig {
            max_attempts: 2,
            initial_backoff_ms: 2_000,
            max_backoff_ms: 2_000,
            max_retry_after_seconds: 30,
        },
    );
    let start = now_ms();

    let failed = broker.generate().await;

    assert!(
        matches!(failed, Err(LlmError::Timeout(timeout)) if timeout == Duration::from_secs(20))
    );
    let attempts = broker.attempts(start);
    assert_eq!(outcomes(&attempts), [(1, "timeout"), (2, "timeout")]);
    assert_eq!(attempts[0].2, 20_000);
    assert!((41_000..=42_000).contains(&attempts[1].2), "{attempts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_is_not_transient_is_not_tried_again() {
    let _clock = follow_tokio_clock();
    let provider = Arc::new(ScriptedProvider::new());
    provider.push_error(LlmError::Status {
        status: 400,
        retry_after: None,
        body: "bad request".into(),
    });
    let broker = broker(provider.clone(), RETRY);
    let start = now_ms();

    assert!(broker.generate().await.is_err());
    assert_eq!(outcomes(&broker.attempts(start)), [(1, "http_error")]);
    assert_eq!(now_ms(), start);
}
