//! Voice notes' transcription: the real OpenAI-compatible client through the real
//! `LlmBroker` against the fake transcription server over real HTTP: the multipart form the
//! server reads, a 503 tried again, a refused key not, no transcription entry, and the key
//! never in an error. (The retries' timing is tested on the paused clock in the broker's
//! own `transcription_tests.rs`.)

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};
use hearth::actors::llm_broker::{BrokerSettings, LlmBroker, TranscriptionEntry};
use hearth::config::{LlmBackend, LlmRetryConfig};
use hearth::llm::openai_transcription::OpenAiTranscriber;
use hearth::llm::{
    AudioFile, CallOrigin, LlmError, ProviderSettings, Transcribe, Transcriber, Transcript,
};
use hearth::metrics::Metrics;
use hearth::ports::TelemetryEvent;
use hearth::storage::in_memory::InMemoryStore;

use crate::support::transcription_server::{Step, TranscriptionServer};

const KEY: &str = "sk-transcribe-secret";

/// What Telegram keeps of a voice note: Ogg Opus, which starts with `OggS`.
fn ogg_note(dir: &Path) -> AudioFile {
    let path = dir.join("voice-1.oga");
    let mut bytes = b"OggS".to_vec();
    bytes.extend((0..2_000u32).map(|index| (index % 251) as u8));
    std::fs::write(&path, &bytes).unwrap();
    AudioFile {
        path,
        file_name: "voice-1.oga".into(),
        mime_type: Some("audio/ogg".into()),
        size_bytes: bytes.len() as u64,
        duration_seconds: Some(30),
    }
}

fn transcriber(server: &TranscriptionServer, key: Option<&str>) -> Arc<dyn Transcriber> {
    Arc::new(OpenAiTranscriber::new(
        ProviderSettings {
            // A trailing slash, as people write it: joined like chat's url.
            base_url: format!("{}/", server.base_url()),
            model: "whisper-large-v3".into(),
            api_key: key.map(str::to_owned),
            timeout: Duration::from_secs(5),
            max_tokens: None,
        },
        reqwest::Client::new(),
    ))
}

struct Broker {
    addr: Addr<LlmBroker>,
    telemetry: Arc<InMemoryStore>,
    metrics: Arc<Metrics>,
}

fn broker(transcriber: Option<Arc<dyn Transcriber>>, language: Option<&str>) -> Broker {
    let telemetry = Arc::new(InMemoryStore::default());
    let metrics = Arc::new(Metrics::default());
    let transcription = transcriber.map(|transcriber| TranscriptionEntry {
        llm_name: "whisper".into(),
        model: "whisper-large-v3".into(),
        backend: LlmBackend::Cloud,
        timeout: Duration::from_secs(6),
        transcriber,
        cost_per_audio_minute: 0.006,
        language: language.map(str::to_owned),
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
        transcription,
        embedding: None,
    };
    let addr = LlmBroker::new(HashMap::new(), settings, telemetry.clone(), metrics.clone()).start();
    Broker {
        addr,
        telemetry,
        metrics,
    }
}

impl Broker {
    async fn transcribe(&self, audio: AudioFile) -> Result<Transcript, LlmError> {
        let origin = CallOrigin {
            profile_id: Some("family".into()),
            conversation_key: Some("telegram:42".parse().unwrap()),
            member_id: None,
        };
        self.addr.send(Transcribe { audio, origin }).await.unwrap()
    }

    /// Each attempt's number and outcome, from the telemetry it recorded.
    fn attempts(&self) -> Vec<(u32, String, f64)> {
        self.telemetry
            .events()
            .into_iter()
            .filter_map(|event| match event {
                TelemetryEvent::LlmCall(call) => Some((call.attempt, call.outcome, call.cost_usd)),
                _ => None,
            })
            .collect()
    }
}

#[actix::test]
async fn the_server_reads_the_voice_note_as_a_multipart_form() {
    let server = TranscriptionServer::start();
    server.push(Step::Text("buy milk and eggs".into()));
    let dir = tempfile::tempdir().unwrap();
    let audio = ogg_note(dir.path());
    let broker = broker(Some(transcriber(&server, Some(KEY))), Some("de"));

    let transcript = broker.transcribe(audio.clone()).await.unwrap();

    assert_eq!(transcript.text, "buy milk and eggs");
    let received = server.received();
    assert_eq!(received.len(), 1);
    let form = &received[0];
    assert_eq!(form.path, "/v1/audio/transcriptions");
    assert_eq!(
        form.authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(form.model.as_deref(), Some("whisper-large-v3"));
    assert_eq!(form.language.as_deref(), Some("de"));
    assert_eq!(form.response_format.as_deref(), Some("json"));
    assert_eq!(form.file_name.as_deref(), Some("voice-1.oga"));
    assert_eq!(form.content_type.as_deref(), Some("audio/ogg"));
    assert_eq!(form.file_size as u64, audio.size_bytes);
    assert_eq!(form.file_start, b"OggS");
    // Half a minute at 0.006 a minute.
    let attempts = broker.attempts();
    assert_eq!(attempts.len(), 1);
    assert!((attempts[0].2 - 0.003).abs() < 1e-12, "{attempts:?}");
}

#[actix::test]
async fn without_a_language_or_key_neither_is_sent() {
    let server = TranscriptionServer::start();
    server.push(Step::Text("hello".into()));
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(Some(transcriber(&server, None)), None);

    broker.transcribe(ogg_note(dir.path())).await.unwrap();

    let form = &server.received()[0];
    assert_eq!(form.language, None);
    assert_eq!(form.authorization, None);
    assert_eq!(form.fields, ["file", "model", "response_format"]);
}

#[actix::test]
async fn a_503_is_tried_again_and_succeeds_once() {
    let server = TranscriptionServer::start();
    server.push(Step::Error {
        status: 503,
        retry_after: None,
    });
    server.push(Step::Text("see you at six".into()));
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(Some(transcriber(&server, Some(KEY))), None);

    let transcript = broker.transcribe(ogg_note(dir.path())).await.unwrap();

    assert_eq!(transcript.text, "see you at six");
    assert_eq!(server.received().len(), 2);
    let outcomes: Vec<(u32, String)> = broker
        .attempts()
        .into_iter()
        .map(|(attempt, outcome, _)| (attempt, outcome))
        .collect();
    assert_eq!(
        outcomes,
        [(1, "http_error".to_owned()), (2, "ok".to_owned())]
    );
    for outcome in ["http_error", "ok"] {
        let labels = [
            ("backend", "cloud"),
            ("llm", "whisper"),
            ("outcome", outcome),
        ];
        assert_eq!(broker.metrics.value("hearth_llm_calls_total", &labels), 1.0);
    }
}

#[actix::test]
async fn a_refused_key_is_not_tried_again_and_never_shows_in_the_error() {
    let server = TranscriptionServer::start();
    server.push(Step::Error {
        status: 401,
        retry_after: None,
    });
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(Some(transcriber(&server, Some(KEY))), None);

    let error = broker.transcribe(ogg_note(dir.path())).await.unwrap_err();

    assert!(
        matches!(error, LlmError::Status { status: 401, .. }),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 1, "not tried again");
    // The fake quotes the key it was sent, as OpenAI does; the error keeps the rest.
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("key provided"), "{shown}");
}

#[actix::test]
async fn without_a_transcription_entry_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(None, None);

    let error = broker.transcribe(ogg_note(dir.path())).await.unwrap_err();

    assert!(matches!(error, LlmError::NoTranscription), "{error:?}");
    assert!(broker.attempts().is_empty());
}

#[actix::test]
async fn a_forgotten_script_fails_and_a_missing_file_is_not_sent() {
    let server = TranscriptionServer::start();
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(Some(transcriber(&server, Some(KEY))), None);

    // Nothing scripted: the fake answers 500, tried up to llm_retry.max_attempts.
    let error = broker.transcribe(ogg_note(dir.path())).await.unwrap_err();
    assert!(
        matches!(error, LlmError::Status { status: 500, .. }),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 3);

    let mut gone = ogg_note(dir.path());
    gone.path = dir.path().join("never-kept.oga");
    let error = broker.transcribe(gone).await.unwrap_err();
    assert!(matches!(error, LlmError::AudioFile(_)), "{error:?}");
    assert_eq!(server.received().len(), 3, "nothing sent");
}

#[actix::test]
async fn a_server_that_never_answers_times_out() {
    let server = TranscriptionServer::start();
    server.push(Step::Hang);
    let dir = tempfile::tempdir().unwrap();
    let transcriber = OpenAiTranscriber::new(
        ProviderSettings {
            base_url: server.base_url(),
            model: "whisper-1".into(),
            api_key: None,
            timeout: Duration::from_millis(300),
            max_tokens: None,
        },
        reqwest::Client::new(),
    );

    let error = transcriber
        .transcribe(&ogg_note(dir.path()), None)
        .await
        .unwrap_err();

    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");
}
