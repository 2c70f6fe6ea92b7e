//! Telemetry: structured events per stage and one record per LLM call.
//!
//! `record` never blocks and never fails the caller: telemetry is best-effort,
//! so a slow or broken sink cannot stall a turn.

use serde::Serialize;

use crate::ids::ConversationKey;

/// One LLM call attempt, as the broker saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmCallRecord {
    pub at_ms: i64,
    pub llm_name: String,
    pub model: String,
    pub backend: String,
    pub wire: String,
    pub profile_id: Option<String>,
    pub conversation_key: Option<ConversationKey>,
    pub attempt: u32,
    /// `ok` or the error kind (`rate_limited`, `timeout`, ...).
    pub outcome: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: u64,
    pub cost_usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum TelemetryEvent {
    LlmCall(LlmCallRecord),
    Stage {
        at_ms: i64,
        conversation_key: ConversationKey,
        stage: String,
        payload: serde_json::Value,
    },
}

#[async_trait::async_trait]
pub trait TelemetrySink: Send + Sync {
    fn record(&self, event: TelemetryEvent);
    /// Wait until every event recorded so far is stored (called at shutdown).
    async fn flush(&self) {}
}

/// The log adapter: every event becomes a `tracing` line with key/value fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingTelemetry;

#[async_trait::async_trait]
impl TelemetrySink for TracingTelemetry {
    fn record(&self, event: TelemetryEvent) {
        match event {
            TelemetryEvent::LlmCall(call) => tracing::info!(
                target: "hearth::telemetry",
                llm = %call.llm_name,
                model = %call.model,
                backend = %call.backend,
                outcome = %call.outcome,
                attempt = call.attempt,
                input_tokens = call.input_tokens,
                output_tokens = call.output_tokens,
                latency_ms = call.latency_ms,
                cost_usd = call.cost_usd,
                "llm call"
            ),
            TelemetryEvent::Stage {
                conversation_key,
                stage,
                payload,
                ..
            } => tracing::info!(
                target: "hearth::telemetry",
                conversation = %conversation_key,
                stage = %stage,
                payload = %payload,
                "stage"
            ),
        }
    }
}
