//! The intents engine's telemetry (seed 003): the ten stages of an interaction, in order,
//! each as `{timestamp, session_id, interaction_id, stage, level, payload}` through the
//! `TelemetrySink` (the SQL sink stores it in `telemetry_events`), counted in `/metrics`.
//! Values of the parameters listed under `redaction.params` are masked before anything is
//! recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::ids::ConversationKey;
use crate::metrics::Metrics;
use crate::ports::{TelemetryEvent, TelemetrySink, now_ms};

/// Every stage, in the order an interaction records them.
pub const STAGES: [&str; 10] = [
    "received",
    "history_loaded",
    "intents_eligible",
    "intent_classified",
    "plan_created",
    "plan_type",
    "policy_check",
    "tool_execute",
    "response_generated",
    "memory_updated",
];

/// What a masked value reads as.
pub const REDACTED: &str = "[redacted]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Records the stages of one interaction (one inbox message).
pub struct StageRecorder {
    sink: Arc<dyn TelemetrySink>,
    metrics: Arc<Metrics>,
    profile_id: String,
    /// The conversation: what the stages are stored under and read back by.
    session_id: ConversationKey,
    interaction_id: String,
    redacted: Arc<BTreeSet<String>>,
}

impl StageRecorder {
    pub fn new(
        sink: Arc<dyn TelemetrySink>,
        metrics: Arc<Metrics>,
        profile_id: &str,
        session_id: &ConversationKey,
        interaction_id: &str,
        redacted: Arc<BTreeSet<String>>,
    ) -> Self {
        StageRecorder {
            sink,
            metrics,
            profile_id: profile_id.to_string(),
            session_id: session_id.clone(),
            interaction_id: interaction_id.to_string(),
            redacted,
        }
    }

    pub fn record(&self, stage: &'static str, level: Level, payload: Value) {
        let at_ms = now_ms();
        let timestamp = chrono::DateTime::from_timestamp_millis(at_ms)
            .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_default();
        tracing::debug!(stage, level = level.as_str(), "intents stage");
        self.metrics.increment(
            "hearth_intents_stages_total",
            &[
                ("profile", &self.profile_id),
                ("stage", stage),
                ("level", level.as_str()),
            ],
        );
        self.sink.record(TelemetryEvent::Stage {
            at_ms,
            conversation_key: self.session_id.clone(),
            stage: stage.to_string(),
            payload: json!({
                "timestamp": timestamp,
                "session_id": self.session_id,
                "interaction_id": self.interaction_id,
                "profile_id": self.profile_id,
                "stage": stage,
                "level": level.as_str(),
                "payload": payload,
            }),
        });
    }

    pub fn info(&self, stage: &'static str, payload: Value) {
        self.record(stage, Level::Info, payload);
    }

    /// A stage this interaction did not reach (no tool call, no plan): recorded all the
    /// same, so every interaction shows all ten stages in order.
    pub fn skipped(&self, stage: &'static str, reason: &str) {
        self.record(
            stage,
            Level::Info,
            json!({"skipped": true, "reason": reason}),
        );
    }

    /// `params` (as the classifier found them, or as read into their types) with the values
    /// of redacted parameters masked, and which were.
    pub fn params<V: Clone + Into<Value>>(&self, params: &BTreeMap<String, V>) -> Value {
        let masked: Vec<&String> = params
            .keys()
            .filter(|name| self.redacted.contains(*name))
            .collect();
        let values: serde_json::Map<String, Value> = params
            .iter()
            .map(|(name, value)| {
                let shown = if self.redacted.contains(name) {
                    Value::String(REDACTED.to_string())
                } else {
                    value.clone().into()
                };
                (name.clone(), shown)
            })
            .collect();
        json!({
            "values": values,
            "params_redacted": !masked.is_empty(),
            "redacted_params": masked,
        })
    }

    /// `text` with every redacted parameter's value masked (a reply or a tool result may
    /// repeat it), in the form the tool got it (`1000`, a date as `2025-10-20`).
    pub fn mask_text(&self, text: &str, params: &BTreeMap<String, Value>) -> String {
        let mut masked = text.to_string();
        for (name, value) in params {
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if self.redacted.contains(name) && !value.trim().is_empty() {
                masked = masked.replace(value.as_str(), REDACTED);
            }
        }
        masked
    }
}
