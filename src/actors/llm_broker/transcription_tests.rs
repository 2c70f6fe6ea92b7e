//! `Transcribe` through the broker on tokio's paused clock: the retries, backoff and
//! `Retry-After` of chat calls, the same telemetry, cost per audio minute, and
//! `NoTranscription` without a transcription entry.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::*;
use crate::clock::follow_tokio_clock;
use crate::llm::{AudioFile, CallOrigin};
use crate::ports::{TelemetryEvent, now_ms};
use crate::storage::in_memory::InMemoryStore;

const RETRY: LlmRetryConfig = LlmRetryConfig {
    max_attempts: 3,
    initial_backoff_ms: 1_000,
    max_backoff_ms: 2_000,
    max_retry_after_seconds: 30,
};

/// Answers its scripted results in order, counting the calls and the languages asked.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Result<Transcript, LlmError>>>,
    languages: Mutex<Vec<Option<String>>>,
}

#[async_trait]
impl Transcriber for Scripted {
    fn wire(&self) -> &'static str {
        "scripted"
    }

    async fn transcribe(
        &self,
        _audio: &AudioFile,
        language: Option<&str>,
    ) -> Result<Transcript, LlmError> {
        self.languages
            .lock()
            .unwrap()
            .push(language.map(str::to_owned));
        let next = self.answers.lock().unwrap().pop_front();
        next.unwrap_or_else(|| Err(LlmError::Decode("nothing scripted".into())))
    }
}

fn unavailable(retry_after: Option<Duration>) -> LlmError {
    LlmError::Status {
        status: 503,
        retry_after,
        body: "overloaded".into(),
    }
}

fn shared(transcriber: Option<Arc<Scripted>>) -> (Shared, Arc<InMemoryStore>, Arc<Metrics>) {
    let telemetry = Arc::new(InMemoryStore::default());
    let metrics = Arc::new(Metrics::default());
    let transcription = transcriber.map(|transcriber| TranscriptionEntry {
        llm_name: "whisper".into(),
        model: "whisper-1".into(),
        backend: LlmBackend::Cloud,
        timeout: Duration::from_secs(20),
        transcriber,
        cost_per_audio_minute: 0.006,
        language: Some("de".into()),
    });
    let shared = Shared {
        models: HashMap::new(),
        transcription,
        embedding: None,
        local: Semaphore::new(1),
        cloud: Semaphore::new(1),
        retry: RETRY,
        telemetry: telemetry.clone(),
        metrics: metrics.clone(),
    };
    (shared, telemetry, metrics)
}

fn voice_note(duration_seconds: Option<u32>) -> Transcribe {
    Transcribe {
        audio: AudioFile {
            path: PathBuf::from("data/attachments/1/voice.ogg"),
            file_name: "voice.ogg".into(),
            mime_type: Some("audio/ogg".into()),
            size_bytes: 4_096,
            duration_seconds,
        },
        origin: CallOrigin {
            profile_id: None,
            conversation_key: Some("http:alice".parse().unwrap()),
            member_id: None,
        },
    }
}

/// Each attempt's llm name, number, outcome, cost and when it ended after `start_ms`.
fn attempts(telemetry: &InMemoryStore, start_ms: i64) -> Vec<(String, u32, String, f64, i64)> {
    telemetry
        .events()
        .into_iter()
        .filter_map(|event| match event {
            TelemetryEvent::LlmCall(call) => Some((
                call.llm_name,
                call.attempt,
                call.outcome,
                call.cost_usd,
                call.at_ms - start_ms,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_is_tried_again_after_its_retry_after_and_costs_per_minute() {
    let _clock = follow_tokio_clock();
    let transcriber = Arc::new(Scripted::default());
    transcriber.answers.lock().unwrap().extend([
        Err(unavailable(Some(Duration::from_secs(7)))),
        Ok(Transcript {
            text: "milk and eggs".into(),
        }),
    ]);
    let (shared, telemetry, metrics) = shared(Some(transcriber.clone()));
    let start = now_ms();

    let transcript = shared.transcribe(voice_note(Some(90))).await.unwrap();

    assert_eq!(transcript.text, "milk and eggs");
    let attempts = attempts(&telemetry, start);
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(
        (
            attempts[0].0.as_str(),
            attempts[0].1,
            attempts[0].2.as_str()
        ),
        ("whisper", 1, "http_error")
    );
    assert_eq!((attempts[1].1, attempts[1].2.as_str()), (2, "ok"));
    assert_eq!(attempts[1].4 - attempts[0].4, 7_000, "Retry-After obeyed");
    // A minute and a half at 0.006 a minute; the failed attempt cost nothing.
    assert_eq!(attempts[0].3, 0.0);
    assert!((attempts[1].3 - 0.009).abs() < 1e-12, "{attempts:?}");
    assert_eq!(
        *transcriber.languages.lock().unwrap(),
        [Some("de".to_owned()), Some("de".to_owned())]
    );
    let exposed = metrics.render();
    assert!(
        exposed.contains(r#"hearth_llm_calls_total{backend="cloud",llm="whisper",outcome="ok"} 1"#),
        "{exposed}"
    );
    assert!(exposed.contains("hearth_llm_cost_usd_total"), "{exposed}");
}

#[tokio::test(start_paused = true)]
async fn without_a_retry_after_the_backoff_waits_and_the_last_failure_is_the_answer() {
    let _clock = follow_tokio_clock();
    let transcriber = Arc::new(Scripted::default());
    transcriber
        .answers
        .lock()
        .unwrap()
        .extend((0..3).map(|_| Err(unavailable(None))));
    let (shared, telemetry, _) = shared(Some(transcriber));
    let start = now_ms();

    let failed = shared.transcribe(voice_note(None)).await;

    assert!(matches!(failed, Err(LlmError::Status { status: 503, .. })));
    let attempts = attempts(&telemetry, start);
    assert_eq!(attempts.len(), 3, "llm_retry.max_attempts");
    let first_pause = attempts[1].4 - attempts[0].4;
    assert!((500..=1_000).contains(&first_pause), "{attempts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_key_is_not_tried_again_and_an_unknown_length_costs_nothing() {
    let _clock = follow_tokio_clock();
    let transcriber = Arc::new(Scripted::default());
    transcriber
        .answers
        .lock()
        .unwrap()
        .push_back(Err(LlmError::Status {
            status: 401,
            retry_after: None,
            body: "bad key".into(),
        }));
    let (shared, telemetry, _) = shared(Some(transcriber.clone()));
    let start = now_ms();

    assert!(shared.transcribe(voice_note(None)).await.is_err());
    assert_eq!(attempts(&telemetry, start).len(), 1);
    assert_eq!(now_ms(), start, "no wait");

    transcriber
        .answers
        .lock()
        .unwrap()
        .push_back(Ok(Transcript { text: "hi".into() }));
    shared.transcribe(voice_note(None)).await.unwrap();
    assert_eq!(attempts(&telemetry, start)[1].3, 0.0);
}

#[tokio::test(start_paused = true)]
async fn without_a_transcription_entry_the_answer_is_no_transcription() {
    let (shared, telemetry, _) = shared(None);

    let failed = shared.transcribe(voice_note(Some(3))).await;

    assert!(matches!(failed, Err(LlmError::NoTranscription)));
    assert!(!failed.unwrap_err().is_transient());
    assert!(telemetry.events().is_empty(), "no backend was called");
}
