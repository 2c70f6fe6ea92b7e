//! `TelemetrySink` on either SQL database: a background task writes `llm_calls` and
//! `telemetry_events` in batches, so recording costs a turn one channel send and never
//! waits for the database. A batch gathers for `GATHER` after its first event and is
//! written whole or not at all, each table's rows from one JSON array
//! (`Dialect::json_rows`): on PostgreSQL in one statement (one round trip), the calls
//! inserted by a data-modifying `WITH`; on SQLite, whose `WITH` only reads, by two
//! statements in one savepoint of the writer's transaction.

use tokio::sync::{mpsc, oneshot};

use super::{Dialect, SqlBackend, SqlConnection, per_dialect, sql};
use crate::ports::{StorageError, TelemetryEvent, TelemetrySink};

/// Events waiting beyond this are dropped (and logged): telemetry must never grow memory
/// without bound.
const QUEUE_CAPACITY: usize = 10_000;
const BATCH: usize = 256;
/// How long a batch waits for more events after its first: each write is a round trip
/// on PostgreSQL, a job of the writer's on SQLite, and telemetry may be late by this much.
const GATHER: std::time::Duration = std::time::Duration::from_millis(20);

/// `llm_calls`' columns a batch writes, with their SQL types.
const CALLS: [(&str, &str); 14] = [
    ("at_ms", "BIGINT"),
    ("llm_name", "TEXT"),
    ("model", "TEXT"),
    ("backend", "TEXT"),
    ("wire", "TEXT"),
    ("profile_id", "TEXT"),
    ("conversation_key", "TEXT"),
    ("attempt", "BIGINT"),
    ("outcome", "TEXT"),
    ("input_tokens", "BIGINT"),
    ("output_tokens", "BIGINT"),
    ("latency_ms", "BIGINT"),
    ("cost_usd", "DOUBLE PRECISION"),
    ("member_id", "TEXT"),
];
/// `telemetry_events`' columns a batch writes, with their SQL types.
const STAGES: [(&str, &str); 4] = [
    ("at_ms", "BIGINT"),
    ("conversation_key", "TEXT"),
    ("stage", "TEXT"),
    ("payload", "TEXT"),
];

/// What the writing task is asked to do, in order.
enum Command {
    // Boxed: an event is large, and the queue holds many commands.
    Record(Box<TelemetryEvent>),
    /// Answer once everything before this command is written.
    Flush(oneshot::Sender<()>),
}

/// Telemetry written to a SQL database by a batching task.
pub struct SqlTelemetryWriter {
    sender: mpsc::Sender<Command>,
}

impl SqlTelemetryWriter {
    /// Start the batching task, writing to `store`, on the current tokio runtime.
    pub(crate) fn spawn<B: SqlBackend + Clone>(store: B) -> Self {
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(write_batches(store, receiver));
        SqlTelemetryWriter { sender }
    }
}

#[async_trait::async_trait]
impl TelemetrySink for SqlTelemetryWriter {
    fn record(&self, event: TelemetryEvent) {
        if self
            .sender
            .try_send(Command::Record(Box::new(event)))
            .is_err()
        {
            tracing::warn!("telemetry queue full or closed, event dropped");
        }
    }

    async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.sender.send(Command::Flush(done)).await.is_ok() {
            let _ = written.await;
        }
    }
}

async fn write_batches<B: SqlBackend>(store: B, mut receiver: mpsc::Receiver<Command>) {
    let mut commands = Vec::with_capacity(BATCH);
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut commands, BATCH).await > 0 {
        // A busy worker's events of many turns go in one batch; a flush waits for none.
        if !commands
            .iter()
            .any(|command| matches!(command, Command::Flush(_)))
        {
            tokio::time::sleep(GATHER).await;
            while commands.len() < BATCH
                && let Ok(command) = receiver.try_recv()
            {
                commands.push(command);
            }
        }
        let mut flushed = Vec::new();
        for command in commands.drain(..) {
            match command {
                Command::Record(event) => batch.push(*event),
                Command::Flush(done) => flushed.push(done),
            }
        }
        if !batch.is_empty() {
            if let Err(error) = write_batch(&store, &batch).await {
                tracing::warn!(%error, events = batch.len(), "telemetry batch not written");
            }
            batch.clear();
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// `INSERT INTO table (columns)` the rows of the JSON array `array`, in its order, each
/// column read from its object's key of the same name as its SQL type.
fn insert_rows(dialect: Dialect, table: &str, columns: &[(&str, &str)], array: &str) -> String {
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let values: Vec<String> = (columns.iter())
        .map(|(name, kind)| format!("CAST(entry->>'{name}' AS {kind})"))
        .collect();
    format!(
        "INSERT INTO {table} ({}) SELECT {} FROM {} ORDER BY position",
        names.join(", "),
        values.join(", "),
        dialect.json_rows(array)
    )
}

/// A batch's calls, from `$1`.
fn insert_calls(dialect: Dialect) -> String {
    insert_rows(dialect, "llm_calls", &CALLS, "$1")
}

/// A batch's stage events, from `$2`.
fn insert_stages(dialect: Dialect) -> String {
    insert_rows(dialect, "telemetry_events", &STAGES, "$2")
}

/// Write `batch` whole or not at all: its calls (`$1`) and its stage events (`$2`), each a
/// JSON array of rows.
async fn write_batch<B: SqlBackend>(
    store: &B,
    batch: &[TelemetryEvent],
) -> Result<(), StorageError> {
    let (mut calls, mut stages) = (Vec::new(), Vec::new());
    for event in batch {
        match event {
            TelemetryEvent::LlmCall(call) => {
                let count = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
                calls.push(serde_json::json!({
                    "at_ms": call.at_ms,
                    "llm_name": call.llm_name,
                    "model": call.model,
                    "backend": call.backend,
                    "wire": call.wire,
                    "profile_id": call.profile_id,
                    "conversation_key": call.conversation_key.as_ref().map(|key| key.as_str()),
                    "attempt": i64::from(call.attempt),
                    "outcome": call.outcome,
                    "input_tokens": count(call.input_tokens),
                    "output_tokens": count(call.output_tokens),
                    "latency_ms": count(call.latency_ms),
                    "cost_usd": call.cost_usd,
                    "member_id": call.member_id.as_ref().map(|member| member.as_str()),
                }))
            }
            TelemetryEvent::Stage {
                at_ms,
                conversation_key,
                stage,
                payload,
            } => stages.push(serde_json::json!({
                "at_ms": at_ms,
                "conversation_key": conversation_key.as_str(),
                "stage": stage,
                "payload": payload.to_string(),
            })),
        }
    }
    let (calls, stages) = (
        serde_json::Value::Array(calls).to_string(),
        serde_json::Value::Array(stages).to_string(),
    );
    match B::DIALECT {
        // dialect: PostgreSQL inserts both tables' rows in one statement, the calls by a
        // data-modifying `WITH`; SQLite, whose `WITH` only reads, by two in one savepoint
        // (the second's `$1` bound to nothing).
        Dialect::Postgres => {
            let both = per_dialect!(B::DIALECT, |dialect| format!(
                "WITH calls AS ({}) {}",
                insert_calls(dialect),
                insert_stages(dialect)
            ));
            let both = sql(both).bind(calls).bind(stages);
            store.write_count(both).await.map(drop)
        }
        Dialect::Sqlite => {
            let insert_calls = sql(per_dialect!(B::DIALECT, insert_calls)).bind(calls);
            let insert_stages = sql(per_dialect!(B::DIALECT, insert_stages))
                .bind(None::<String>)
                .bind(stages);
            store
                .atomically(move |connection| {
                    Box::pin(async move {
                        connection.execute(insert_calls).await?;
                        connection.execute(insert_stages).await.map(drop)
                    })
                })
                .await
        }
    }
}
