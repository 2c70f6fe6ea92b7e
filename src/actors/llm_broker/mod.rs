//! `LlmBroker`: the only door to LLM backends.
//!
//! It holds seed 001's two semaphores (local and cloud backends), retries
//! transient failures with backoff (honouring `Retry-After`), bounds each call
//! with a timeout, falls back to a profile's fallback model, and records tokens,
//! latency and cost of every attempt. A model without `vision` never gets image
//! parts: they are replaced by a note per request, so a seeing primary can fall
//! back to a blind model. A call with a listener streams: every attempt first tells the
//! listener to start over, so what a retry or the fallback writes replaces what an
//! attempt that failed half-way wrote; the answer returned is the same either way. Calls
//! run on the tokio runtime, so the actor itself never waits. A voice note's `Transcribe`
//! goes to the one `kind: transcription` entry through the same retries, semaphores,
//! metrics and telemetry (`calls.rs`, shared by all), its cost counted per audio minute.
//! Memory's `Embed` goes to the `kind: embedding` entry `memory.embedding_model` names the
//! same way (`embedding.rs`), its texts split into calls of at most `MAX_TEXTS_PER_CALL`.

mod calls;
mod embedding;
#[cfg(test)]
mod embedding_tests;
#[cfg(test)]
mod retries_tests;
#[cfg(test)]
mod transcription_tests;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Context, Handler, ResponseFuture};
use tokio::sync::Semaphore;

use crate::config::{LlmBackend, LlmRetryConfig};
use crate::llm::{
    ChatResponse, Embed, Embedder, Embeddings, GenerateChat, LlmError, LlmProvider, Transcribe,
    Transcriber, Transcript,
};
use crate::metrics::Metrics;
use crate::ports::TelemetrySink;

use calls::{Spent, Target};

/// One named model of config `llms`, ready to call.
pub struct ModelEntry {
    pub model: String,
    pub backend: LlmBackend,
    pub timeout: Duration,
    pub provider: Arc<dyn LlmProvider>,
    pub cost_per_million_input_tokens: f64,
    pub cost_per_million_output_tokens: f64,
    /// The model can read images (config `llms.<name>.vision`).
    pub vision: bool,
}

impl ModelEntry {
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.cost_per_million_input_tokens
            + output_tokens as f64 * self.cost_per_million_output_tokens)
            / 1_000_000.0
    }
}

/// The `llms` entry with `kind: transcription`, ready to transcribe.
pub struct TranscriptionEntry {
    /// Its key in `llms`.
    pub llm_name: String,
    pub model: String,
    pub backend: LlmBackend,
    pub timeout: Duration,
    pub transcriber: Arc<dyn Transcriber>,
    pub cost_per_audio_minute: f64,
    /// `voice_notes.language`; unset, the backend guesses.
    pub language: Option<String>,
}

impl TranscriptionEntry {
    /// Counted on the length measured from the file; an audio of unknown length (none the
    /// queue sends) costs nothing rather than a guess.
    pub fn cost(&self, duration_seconds: Option<u32>) -> f64 {
        f64::from(duration_seconds.unwrap_or(0)) / 60.0 * self.cost_per_audio_minute
    }
}

/// The `llms` entry `memory.embedding_model` names (`kind: embedding`), ready to embed.
pub struct EmbeddingEntry {
    /// Its key in `llms`.
    pub llm_name: String,
    pub model: String,
    pub backend: LlmBackend,
    pub timeout: Duration,
    pub embedder: Arc<dyn Embedder>,
    pub cost_per_million_input_tokens: f64,
}

impl EmbeddingEntry {
    /// Counted on the tokens the backend says it read; an embedding writes none.
    pub fn cost(&self, input_tokens: u64) -> f64 {
        input_tokens as f64 * self.cost_per_million_input_tokens / 1_000_000.0
    }
}

pub struct BrokerSettings {
    pub max_concurrent_local: usize,
    pub max_concurrent_cloud: usize,
    pub retry: LlmRetryConfig,
    /// None: every `Transcribe` answers `LlmError::NoTranscription`.
    pub transcription: Option<TranscriptionEntry>,
    /// None: every `Embed` answers `LlmError::NoEmbedding`.
    pub embedding: Option<EmbeddingEntry>,
}

struct Shared {
    models: HashMap<String, ModelEntry>,
    transcription: Option<TranscriptionEntry>,
    embedding: Option<EmbeddingEntry>,
    local: Semaphore,
    cloud: Semaphore,
    retry: LlmRetryConfig,
    telemetry: Arc<dyn TelemetrySink>,
    metrics: Arc<Metrics>,
}

pub struct LlmBroker {
    shared: Arc<Shared>,
}

impl LlmBroker {
    pub fn new(
        models: HashMap<String, ModelEntry>,
        settings: BrokerSettings,
        telemetry: Arc<dyn TelemetrySink>,
        metrics: Arc<Metrics>,
    ) -> Self {
        LlmBroker {
            shared: Arc::new(Shared {
                models,
                transcription: settings.transcription,
                embedding: settings.embedding,
                local: Semaphore::new(settings.max_concurrent_local.max(1)),
                cloud: Semaphore::new(settings.max_concurrent_cloud.max(1)),
                retry: settings.retry,
                telemetry,
                metrics,
            }),
        }
    }
}

impl Actor for LlmBroker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Callers wait on the semaphores, not on the mailbox.
        ctx.set_mailbox_capacity(4096);
    }
}

impl Handler<GenerateChat> for LlmBroker {
    type Result = ResponseFuture<Result<ChatResponse, LlmError>>;

    fn handle(&mut self, message: GenerateChat, _ctx: &mut Self::Context) -> Self::Result {
        let shared = self.shared.clone();
        // Spawned on the multi-threaded runtime: JSON work of many calls runs in parallel.
        let call = tokio::spawn(async move { shared.generate(message).await });
        Box::pin(async move {
            call.await.unwrap_or_else(|error| {
                Err(LlmError::Connect(format!("llm call aborted: {error}")))
            })
        })
    }
}

impl Handler<Transcribe> for LlmBroker {
    type Result = ResponseFuture<Result<Transcript, LlmError>>;

    fn handle(&mut self, message: Transcribe, _ctx: &mut Self::Context) -> Self::Result {
        let shared = self.shared.clone();
        let call = tokio::spawn(async move { shared.transcribe(message).await });
        Box::pin(async move {
            call.await.unwrap_or_else(|error| {
                Err(LlmError::Connect(format!("transcription aborted: {error}")))
            })
        })
    }
}

impl Handler<Embed> for LlmBroker {
    type Result = ResponseFuture<Result<Embeddings, LlmError>>;

    fn handle(&mut self, message: Embed, _ctx: &mut Self::Context) -> Self::Result {
        let shared = self.shared.clone();
        let call = tokio::spawn(async move { shared.embed(message).await });
        Box::pin(async move {
            call.await.unwrap_or_else(|error| {
                Err(LlmError::Connect(format!("embedding aborted: {error}")))
            })
        })
    }
}

impl Shared {
    async fn generate(&self, message: GenerateChat) -> Result<ChatResponse, LlmError> {
        let primary = self.chat(&message.llm_name, &message).await;
        match (primary, &message.fallback_llm_name) {
            (Err(error), Some(fallback)) if *fallback != message.llm_name => {
                tracing::warn!(
                    llm = %message.llm_name,
                    fallback = %fallback,
                    %error,
                    "llm failed, trying the fallback model"
                );
                self.chat(fallback, &message).await
            }
            (result, _) => result,
        }
    }

    /// One chat completion on `llm_name`, tried again as `calls.rs` decides.
    async fn chat(&self, llm_name: &str, message: &GenerateChat) -> Result<ChatResponse, LlmError> {
        let entry = self
            .models
            .get(llm_name)
            .ok_or_else(|| LlmError::UnknownModel(llm_name.to_string()))?;
        // Decided per model rather than by the caller: the fallback of a seeing model may be
        // blind, and an image part sent to a text-only model fails the whole call.
        let request = if entry.vision {
            Cow::Borrowed(&message.request)
        } else {
            message.request.without_images()
        };
        if matches!(request, Cow::Owned(_)) {
            tracing::info!(llm = %llm_name, "the model cannot see images; sending their note instead");
        }
        let request = request.as_ref();
        let listener = message.listener.as_ref();
        let target = Target {
            llm_name,
            model: &entry.model,
            backend: entry.backend,
            timeout: entry.timeout,
            wire: entry.provider.wire(),
        };
        let attempt = || async move {
            match listener {
                Some(listener) => {
                    listener.restart();
                    entry.provider.chat_streaming(request, listener).await
                }
                None => entry.provider.chat(request).await,
            }
        };
        let spent = |response: &ChatResponse| Spent {
            usage: response.usage,
            cost: entry.cost(response.usage.input_tokens, response.usage.output_tokens),
        };
        self.call_with_retries(&target, &message.origin, attempt, spent)
            .await
    }

    /// A voice note to text on the transcription entry, tried again as a chat call is.
    async fn transcribe(&self, message: Transcribe) -> Result<Transcript, LlmError> {
        let entry = self
            .transcription
            .as_ref()
            .ok_or(LlmError::NoTranscription)?;
        let target = Target {
            llm_name: &entry.llm_name,
            model: &entry.model,
            backend: entry.backend,
            timeout: entry.timeout,
            wire: entry.transcriber.wire(),
        };
        let (audio, language) = (&message.audio, entry.language.as_deref());
        let attempt = || entry.transcriber.transcribe(audio, language);
        // Billed per minute of audio, whatever the text says; no tokens.
        let cost = entry.cost(audio.duration_seconds);
        let spent = |_: &Transcript| Spent {
            usage: Default::default(),
            cost,
        };
        self.call_with_retries(&target, &message.origin, attempt, spent)
            .await
    }
}
