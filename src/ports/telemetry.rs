//! Telemetry: structured events per stage and one record per LLM call.
//!
//! `record` never blocks and never fails the caller: telemetry is best-effort,
//! so a slow or broken sink cannot stall a turn.

use serde::Serialize;

use crate::ids::ConversationKey;

/// One member's use of hearth on one day (UTC): the messages they sent (each a turn) and
/// the model calls made to answer them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DailyUsage {
    /// `YYYY-MM-DD`, in UTC.
    pub day: String,
    pub member_id: crate::ids::MemberId,
    pub turns: u64,
    pub llm_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl DailyUsage {
    /// Nothing used yet by `member_id` on `day`.
    pub fn none(day: String, member_id: crate::ids::MemberId) -> DailyUsage {
        DailyUsage {
            day,
            member_id,
            turns: 0,
            llm_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
        }
    }

    /// `usage`, newest day first and members by id within a day.
    pub fn in_order(usage: impl IntoIterator<Item = DailyUsage>) -> Vec<DailyUsage> {
        let mut usage: Vec<DailyUsage> = usage.into_iter().collect();
        usage.sort_by(|a, b| {
            b.day
                .cmp(&a.day)
                .then_with(|| a.member_id.cmp(&b.member_id))
        });
        usage
    }
}

/// One stage the intents engine recorded (`TelemetryEvent::Stage`), read back.
#[derive(Debug, Clone, PartialEq)]
pub struct StageEvent {
    pub at_ms: i64,
    pub conversation_key: ConversationKey,
    pub stage: String,
    pub payload: serde_json::Value,
}

/// A conversation the intents engine recorded stages of, and when it last did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedConversation {
    pub conversation_key: ConversationKey,
    pub last_at_ms: i64,
}

/// What one `llms` entry cost as far as the recorded calls go (`llm_calls`, kept as long
/// as retention keeps telemetry).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LlmSpend {
    /// Attempts recorded, failed ones too.
    pub calls: u64,
    pub input_tokens: u64,
    pub cost_usd: f64,
    /// When the oldest recorded call was made; none without one.
    pub since_ms: Option<i64>,
}

/// What the family spent and what the intents engine decided, read back from what the
/// database keeps (the messages, and the `llm_calls` and stages telemetry writes); kept as
/// long as retention keeps those.
#[async_trait::async_trait]
pub trait UsageReport: Send + Sync {
    /// Per day and member since `since_ms`, newest day first, members by id.
    async fn daily_usage(&self, since_ms: i64) -> Result<Vec<DailyUsage>, super::StorageError>;

    /// At most `limit` conversations with recorded stages, the most recent first.
    async fn staged_conversations(
        &self,
        limit: usize,
    ) -> Result<Vec<StagedConversation>, super::StorageError>;

    /// At most `limit` of the newest stages of `conversation_key`, oldest first.
    async fn stages_of(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
    ) -> Result<Vec<StageEvent>, super::StorageError>;

    /// What the calls recorded of the `llms` entry `llm_name` cost, whoever they were for.
    async fn spent_on(&self, llm_name: &str) -> Result<LlmSpend, super::StorageError>;
}

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
    /// Whose message the call answered; `None` for a plugin's own call.
    pub member_id: Option<crate::ids::MemberId>,
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
