//! The request that turns a voice note into text: `Transcribe`, one audio file sent to the
//! transcription backend of config `llms` (the entry with `kind: transcription`), what it
//! answers, and the `Transcriber` port a backend implements (`openai_transcription.rs`). The `LlmBroker` handles it like a chat call: the same local/cloud limits,
//! retries, timeout, cost and metrics. The request queue sends it before a voice note's
//! turn is routed, so a spoken slash command counts.

use std::path::PathBuf;

use actix::Message;
use async_trait::async_trait;

use super::{CallOrigin, LlmError};

/// An audio file hearth keeps, as a channel stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioFile {
    pub path: PathBuf,
    pub file_name: String,
    pub mime_type: Option<String>,
    pub size_bytes: u64,
    /// How long it plays, measured from the file before it is sent (the request queue's
    /// `voice::audio_duration`), never as a platform stated it: what its cost is counted on.
    pub duration_seconds: Option<u32>,
}

/// Transcribe `audio` on the configured transcription backend.
///
/// Sent by the queue before a voice note's turn (`request_queue/transcribing.rs`); handled
/// in `llm_broker/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Transcript, LlmError>")]
pub struct Transcribe {
    pub audio: AudioFile,
    pub origin: CallOrigin,
}

/// What the audio says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    pub text: String,
}

/// The port every transcription backend implements; the `LlmBroker` holds one.
#[async_trait]
pub trait Transcriber: Send + Sync {
    /// Short name of the wire format, for logs and telemetry.
    fn wire(&self) -> &'static str;

    /// What `audio` says; `language` (ISO 639) when the configuration names it, else the
    /// backend guesses. Errors map as chat's do, so the broker retries them alike.
    async fn transcribe(
        &self,
        audio: &AudioFile,
        language: Option<&str>,
    ) -> Result<Transcript, LlmError>;
}
