//! One call to a backend, whatever it asks (a chat completion, a transcription): tried
//! again on transient failures after a backoff or the server's `Retry-After`, each attempt
//! within its semaphore (local or cloud) and its timeout, and counted in metrics and
//! telemetry. Chat and transcription differ only in the attempt they hand in and what an
//! answer cost, so every line here serves both.

use std::future::Future;
use std::time::{Duration, Instant};

use super::Shared;
use crate::backoff::Doubling;
use crate::config::LlmBackend;
use crate::llm::{CallOrigin, LlmError, Usage};
use crate::ports::{LlmCallRecord, TelemetryEvent, now_ms};

/// The backend a call goes to, as the semaphores, metrics and telemetry name it.
pub(super) struct Target<'a> {
    /// Its key in config `llms`.
    pub llm_name: &'a str,
    pub model: &'a str,
    pub backend: LlmBackend,
    /// Bounds each attempt, whatever the provider's own HTTP timeout.
    pub timeout: Duration,
    pub wire: &'static str,
}

/// What one answer used and cost.
pub(super) struct Spent {
    pub usage: Usage,
    pub cost: f64,
}

impl Shared {
    /// `attempt` until it succeeds, fails for good, or `llm_retry.max_attempts` is reached;
    /// `spent` tells what a successful answer cost.
    pub(super) async fn call_with_retries<T, Attempt, Answer>(
        &self,
        target: &Target<'_>,
        origin: &CallOrigin,
        attempt: Attempt,
        spent: impl Fn(&T) -> Spent,
    ) -> Result<T, LlmError>
    where
        Attempt: Fn() -> Answer,
        Answer: Future<Output = Result<T, LlmError>>,
    {
        let llm_name = target.llm_name;
        let max_attempts = self.retry.max_attempts.max(1);
        let mut number = 1;
        loop {
            let result = self
                .call_once(target, origin, number, attempt(), &spent)
                .await;
            let error = match result {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            if !error.is_transient() || number >= max_attempts {
                return Err(error);
            }
            let delay = match error.retry_after() {
                // A server asking for a long pause: give up here, so the fallback or the
                // queue's own retry takes over instead of holding the turn.
                Some(wait) if wait > Duration::from_secs(self.retry.max_retry_after_seconds) => {
                    return Err(error);
                }
                Some(wait) => wait,
                None => self.backoff(number),
            };
            tracing::info!(llm = %llm_name, attempt = number, ?delay, %error, "llm call failed, retrying");
            tokio::time::sleep(delay).await;
            number += 1;
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

    async fn call_once<T>(
        &self,
        target: &Target<'_>,
        origin: &CallOrigin,
        attempt: u32,
        answer: impl Future<Output = Result<T, LlmError>>,
        spent: &impl Fn(&T) -> Spent,
    ) -> Result<T, LlmError> {
        let (semaphore, backend) = match target.backend {
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
        let result = match tokio::time::timeout(target.timeout, answer).await {
            Ok(result) => result,
            Err(_) => Err(LlmError::Timeout(target.timeout)),
        };
        drop(permit);
        let latency = started.elapsed();
        let (outcome, Spent { usage, cost }) = match &result {
            Ok(answer) => ("ok", spent(answer)),
            Err(error) => (
                error.kind(),
                Spent {
                    usage: Usage::default(),
                    cost: 0.0,
                },
            ),
        };
        let llm_name = target.llm_name;
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
                model: target.model.to_string(),
                backend: backend.to_string(),
                wire: target.wire.to_string(),
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
