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
//! run on the tokio runtime, so the actor itself never waits.

#[cfg(test)]
mod retries_tests;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Context, Handler, ResponseFuture};
use tokio::sync::Semaphore;

use crate::backoff::Doubling;
use crate::config::{LlmBackend, LlmRetryConfig};
use crate::llm::{
    CallOrigin, ChatRequest, ChatResponse, GenerateChat, LlmError, LlmProvider, TextListener,
};
use crate::metrics::Metrics;
use crate::ports::{LlmCallRecord, TelemetryEvent, TelemetrySink, now_ms};

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

pub struct BrokerSettings {
    pub max_concurrent_local: usize,
    pub max_concurrent_cloud: usize,
    pub retry: LlmRetryConfig,
}

struct Shared {
    models: HashMap<String, ModelEntry>,
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

impl Shared {
    async fn generate(&self, message: GenerateChat) -> Result<ChatResponse, LlmError> {
        let primary = self.call_with_retries(&message.llm_name, &message).await;
        match (primary, &message.fallback_llm_name) {
            (Err(error), Some(fallback)) if *fallback != message.llm_name => {
                tracing::warn!(
                    llm = %message.llm_name,
                    fallback = %fallback,
                    %error,
                    "llm failed, trying the fallback model"
                );
                self.call_with_retries(fallback, &message).await
            }
            (result, _) => result,
        }
    }

    async fn call_with_retries(
        &self,
        llm_name: &str,
        message: &GenerateChat,
    ) -> Result<ChatResponse, LlmError> {
        let (request, origin) = (&message.request, &message.origin);
        let entry = self
            .models
            .get(llm_name)
            .ok_or_else(|| LlmError::UnknownModel(llm_name.to_string()))?;
        // Decided per model rather than by the caller: the fallback of a seeing model may be
        // blind, and an image part sent to a text-only model fails the whole call.
        let request = if entry.vision {
            Cow::Borrowed(request)
        } else {
            request.without_images()
        };
        if matches!(request, Cow::Owned(_)) {
            tracing::info!(llm = %llm_name, "the model cannot see images; sending their note instead");
        }
        let request = request.as_ref();
        let max_attempts = self.retry.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let result = self
                .call_once(
                    llm_name,
                    entry,
                    request,
                    (origin, message.listener.as_ref()),
                    attempt,
                )
                .await;
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if !error.is_transient() || attempt >= max_attempts {
                return Err(error);
            }
            let delay = match error.retry_after() {
                // A server asking for a long pause: give up here, so the fallback or the
                // queue's own retry takes over instead of holding the turn.
                Some(wait) if wait > Duration::from_secs(self.retry.max_retry_after_seconds) => {
                    return Err(error);
                }
                Some(wait) => wait,
                None => self.backoff(attempt),
            };
            tracing::info!(llm = %llm_name, attempt, ?delay, %error, "llm call failed, retrying");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// Exponential backoff with jitter, so many waiting turns do not retry in lockstep.
    fn backoff(&self, attempt: u32) -> Duration {
        let schedule = Doubling::new(
            Duration::from_millis(self.retry.initial_backoff_ms),
            Duration::from_millis(self.retry.max_backoff_ms),
        );
        let capped = u64::try_from(schedule.after(attempt).as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(capped / 2 + fastrand::u64(0..=capped / 2))
    }

    async fn call_once(
        &self,
        llm_name: &str,
        entry: &ModelEntry,
        request: &ChatRequest,
        (origin, listener): (&CallOrigin, Option<&TextListener>),
        attempt: u32,
    ) -> Result<ChatResponse, LlmError> {
        let (semaphore, backend) = match entry.backend {
            LlmBackend::Local => (&self.local, "local"),
            LlmBackend::Cloud => (&self.cloud, "cloud"),
        };
        let permit = match semaphore.try_acquire() {
            Ok(permit) => permit,
            Err(_) => {
                let waiting_since = Instant::now();
                let permit = semaphore
                    .acquire()
                    .await
                    .map_err(|_| LlmError::Connect("llm broker is shutting down".into()))?;
                let labels = [("backend", backend)];
                self.metrics
                    .increment("hearth_llm_semaphore_waits_total", &labels);
                self.metrics.add(
                    "hearth_llm_semaphore_wait_seconds_total",
                    &labels,
                    waiting_since.elapsed().as_secs_f64(),
                );
                permit
            }
        };
        let started = Instant::now();
        // The provider has its own HTTP timeout; this bounds everything else too.
        let answer = async {
            match listener {
                Some(listener) => {
                    listener.restart();
                    entry.provider.chat_streaming(request, listener).await
                }
                None => entry.provider.chat(request).await,
            }
        };
        let result = match tokio::time::timeout(entry.timeout, answer).await {
            Ok(result) => result,
            Err(_) => Err(LlmError::Timeout(entry.timeout)),
        };
        drop(permit);
        let latency = started.elapsed();
        let (outcome, usage) = match &result {
            Ok(response) => ("ok", response.usage),
            Err(error) => (error.kind(), Default::default()),
        };
        let cost = entry.cost(usage.input_tokens, usage.output_tokens);
        self.metrics.increment(
            "hearth_llm_calls_total",
            &[
                ("backend", backend),
                ("llm", llm_name),
                ("outcome", outcome),
            ],
        );
        if usage.input_tokens + usage.output_tokens > 0 {
            self.metrics.add(
                "hearth_llm_tokens_total",
                &[("backend", backend), ("direction", "input")],
                usage.input_tokens as f64,
            );
            self.metrics.add(
                "hearth_llm_tokens_total",
                &[("backend", backend), ("direction", "output")],
                usage.output_tokens as f64,
            );
        }
        if cost > 0.0 {
            self.metrics
                .add("hearth_llm_cost_usd_total", &[("backend", backend)], cost);
        }
        self.telemetry
            .record(TelemetryEvent::LlmCall(LlmCallRecord {
                at_ms: now_ms(),
                llm_name: llm_name.to_string(),
                model: entry.model.clone(),
                backend: backend.to_string(),
                wire: entry.provider.wire().to_string(),
                profile_id: origin.profile_id.clone(),
                conversation_key: origin.conversation_key.clone(),
                member_id: origin.member_id.clone(),
                attempt,
                outcome: outcome.to_string(),
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
                cost_usd: cost,
            }));
        result
    }
}
