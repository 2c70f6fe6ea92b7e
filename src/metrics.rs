//! Prometheus counters, gauges and the actors' thread's stall histogram (`histogram.rs`),
//! kept in memory and rendered as text by `GET /metrics`.
//!
//! One `Metrics` value is created at start-up and handed to every actor that counts.

mod histogram;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use histogram::Histogram;
pub use histogram::{HistogramSnapshot, STALL_BUCKETS};

/// A metric name plus its label pairs, e.g. `("hearth_turns_total", [("outcome","ok")])`.
type SeriesKey = (&'static str, Vec<(&'static str, String)>);

pub struct Metrics {
    counters: Mutex<BTreeMap<SeriesKey, f64>>,
    queue_depth: AtomicI64,
    active_conversations: AtomicI64,
    actor_thread_stalls: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            counters: Mutex::default(),
            queue_depth: AtomicI64::default(),
            active_conversations: AtomicI64::default(),
            actor_thread_stalls: Histogram::new(STALL_BUCKETS),
        }
    }
}

const ACTOR_THREAD_STALL: &str = "hearth_actor_thread_stall_seconds";
const ACTOR_THREAD_STALL_HELP: &str = "How late the actors' thread ran its timer tick: the time it was held by work that did not yield.";

const HELP: &[(&str, &str, &str)] = &[
    (
        "hearth_turns_total",
        "counter",
        "Turns finished, by profile and outcome.",
    ),
    (
        "hearth_llm_calls_total",
        "counter",
        "LLM call attempts, by backend, model name and outcome.",
    ),
    (
        "hearth_llm_tokens_total",
        "counter",
        "Tokens used, by backend and direction.",
    ),
    (
        "hearth_llm_cost_usd_total",
        "counter",
        "Estimated LLM cost in US dollars, by backend.",
    ),
    (
        "hearth_llm_embedded_texts_total",
        "counter",
        "Texts turned into vectors, by model name and purpose (index, query).",
    ),
    (
        "hearth_llm_semaphore_waits_total",
        "counter",
        "LLM calls that had to wait for a semaphore permit, by backend.",
    ),
    (
        "hearth_llm_semaphore_wait_seconds_total",
        "counter",
        "Time spent waiting for LLM semaphore permits, by backend.",
    ),
    (
        "hearth_inbound_total",
        "counter",
        "Inbound messages, by channel and outcome (accepted, duplicate, busy).",
    ),
    ("hearth_errors_total", "counter", "Errors, by kind."),
    (
        "hearth_intents_stages_total",
        "counter",
        "Stages of the intents engine recorded, by profile, stage and level.",
    ),
    (
        "hearth_telegram_updates_total",
        "counter",
        "Telegram updates received, by kind (message, button, other).",
    ),
    (
        "hearth_telegram_poll_restarts_total",
        "counter",
        "Telegram long polls abandoned by the watchdog because they stalled.",
    ),
    (
        "hearth_matrix_undecryptable_total",
        "counter",
        "Matrix messages from family members this device could not decrypt.",
    ),
    (
        "hearth_telegram_plain_text_fallbacks_total",
        "counter",
        "Replies resent as plain text because Telegram refused their HTML.",
    ),
    (
        "hearth_outbox_delivered_total",
        "counter",
        "Outgoing messages the platform accepted, by channel.",
    ),
    (
        "hearth_outbox_retries_total",
        "counter",
        "Delivery attempts that failed and were tried again, by channel.",
    ),
    (
        "hearth_outbox_undelivered_total",
        "counter",
        "Outgoing messages given up after delivery.max_age_hours or a permanent refusal, by channel.",
    ),
    (
        "hearth_strangers_ignored_total",
        "counter",
        "Messages from senders who are not family members, ignored, by channel.",
    ),
    (
        "hearth_web_sign_ins_total",
        "counter",
        "Sign-in attempts on the web page, by way (code, link) and outcome.",
    ),
    (
        "hearth_pruned_total",
        "counter",
        "Rows and attachment folders deleted by retention, by what they were.",
    ),
    (
        "hearth_memory_chunks_indexed_total",
        "counter",
        "Chunks of text family memory indexed, by kind (chat, note); a changed note's again.",
    ),
    (
        "hearth_memory_chunks_waiting_for_vectors",
        "gauge",
        "Chunks of family memory without a vector of memory.embedding_model, as the indexer last counted.",
    ),
];

impl Metrics {
    pub fn add(&self, name: &'static str, labels: &[(&'static str, &str)], value: f64) {
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        *counters.entry(series(name, labels)).or_insert(0.0) += value;
    }

    /// A gauge of `HELP` set to `value`.
    pub fn set(&self, name: &'static str, labels: &[(&'static str, &str)], value: f64) {
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        counters.insert(series(name, labels), value);
    }

    pub fn increment(&self, name: &'static str, labels: &[(&'static str, &str)]) {
        self.add(name, labels, 1.0);
    }

    pub fn error(&self, kind: &str) {
        self.increment("hearth_errors_total", &[("kind", kind)]);
    }

    pub fn set_queue_depth(&self, depth: usize, active_conversations: usize) {
        self.queue_depth
            .store(i64::try_from(depth).unwrap_or(i64::MAX), Ordering::Relaxed);
        self.active_conversations.store(
            i64::try_from(active_conversations).unwrap_or(i64::MAX),
            Ordering::Relaxed,
        );
    }

    /// One tick of the actors' thread ran `late` after it was due.
    pub fn observe_actor_thread_stall(&self, late: Duration) {
        self.actor_thread_stalls.observe(late);
    }

    /// `hearth_actor_thread_stall_seconds` as it stands.
    pub fn actor_thread_stalls(&self) -> HistogramSnapshot {
        self.actor_thread_stalls.snapshot()
    }

    /// The value of one series, for tests and readiness details.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        counters
            .iter()
            .filter(|((series, series_labels), _)| {
                *series == name
                    && labels.iter().all(|(label, value)| {
                        series_labels.iter().any(|(l, v)| l == label && v == value)
                    })
            })
            .map(|(_, value)| value)
            .sum()
    }

    /// The Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        for (name, kind, help) in HELP {
            let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for ((series, labels), value) in counters.iter() {
                if series != name {
                    continue;
                }
                let labels: Vec<String> = labels
                    .iter()
                    .map(|(label, value)| format!("{label}=\"{}\"", escape_label(value)))
                    .collect();
                if labels.is_empty() {
                    let _ = writeln!(text, "{name} {value}");
                } else {
                    let _ = writeln!(text, "{name}{{{}}} {value}", labels.join(","));
                }
            }
        }
        let _ = writeln!(
            text,
            "# HELP hearth_queue_depth Accepted messages not yet answered.\n\
             # TYPE hearth_queue_depth gauge\nhearth_queue_depth {}",
            self.queue_depth.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            text,
            "# HELP hearth_queue_active_conversations Conversations with a turn running now.\n\
             # TYPE hearth_queue_active_conversations gauge\nhearth_queue_active_conversations {}",
            self.active_conversations.load(Ordering::Relaxed)
        );
        self.actor_thread_stalls
            .render(&mut text, ACTOR_THREAD_STALL, ACTOR_THREAD_STALL_HELP);
        text
    }
}

fn series(name: &'static str, labels: &[(&'static str, &str)]) -> SeriesKey {
    let labels = labels
        .iter()
        .map(|(label, value)| (*label, (*value).to_string()))
        .collect();
    (name, labels)
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One stage of a turn (accepting, waiting in the lane, an LLM round, a tool call, storing,
/// delivering), timed: a `debug` span while it runs and, when it ends, a `debug` event with
/// its duration, inside the turn's span where there is one. `HEARTH_LOG=hearth=debug` shows
/// where a slow turn spent its time.
pub struct StageTimer {
    stage: &'static str,
    started: std::time::Instant,
    span: tracing::Span,
}

impl StageTimer {
    pub fn start(stage: &'static str) -> Self {
        StageTimer {
            stage,
            started: std::time::Instant::now(),
            span: tracing::debug_span!("stage", stage),
        }
    }

    /// The stage's span, to run its work in.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }
}

impl Drop for StageTimer {
    fn drop(&mut self) {
        let elapsed_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let _inside = self.span.enter();
        tracing::debug!(stage = self.stage, elapsed_ms, "stage done");
    }
}
