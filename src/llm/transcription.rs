//! The request that turns a voice note into text: `Transcribe`, one audio file sent to the
//! transcription backend of config `llms` (the entry with `kind: transcription`), and what
//! it answers. The `LlmBroker` handles it like a chat call: the same local/cloud limits,
//! retries, timeout, cost and metrics. The request queue sends it before a voice note's
//! turn is routed, so a spoken slash command counts.

use std::path::PathBuf;

use actix::Message;

use super::{CallOrigin, LlmError};

/// An audio file hearth keeps, as a channel stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioFile {
    pub path: PathBuf,
    pub file_name: String,
    pub mime_type: Option<String>,
    pub size_bytes: u64,
    /// How long it plays, when the platform or the file said so.
    pub duration_seconds: Option<u32>,
}

/// Transcribe `audio` on the configured transcription backend.
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
