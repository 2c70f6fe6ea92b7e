//! `TelemetrySink` on SQLite: a background task writes `llm_calls` and
//! `telemetry_events` in batches, so recording costs a turn one channel send.

use sqlx::SqliteConnection;

use super::writer::Writer;
use tokio::sync::{mpsc, oneshot};

use crate::ports::{TelemetryEvent, TelemetrySink};

/// Events waiting beyond this are dropped (and logged): telemetry must never grow memory without bound.
const QUEUE_CAPACITY: usize = 10_000;
const BATCH: usize = 256;

/// What the writer task is asked to do, in order.
enum Command {
    // Boxed: an event is large, and the queue holds many commands.
    Record(Box<TelemetryEvent>),
    /// Answer once everything before this command is written.
    Flush(oneshot::Sender<()>),
}

pub struct SqliteTelemetryWriter {
    sender: mpsc::Sender<Command>,
}

impl SqliteTelemetryWriter {
    /// Start the batching task on the current tokio runtime.
    pub(super) fn spawn(writer: Writer) -> Self {
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(write_batches(writer, receiver));
        SqliteTelemetryWriter { sender }
    }
}

#[async_trait::async_trait]
impl TelemetrySink for SqliteTelemetryWriter {
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

async fn write_batches(writer: Writer, mut receiver: mpsc::Receiver<Command>) {
    let mut commands = Vec::with_capacity(BATCH);
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut commands, BATCH).await > 0 {
        let mut flushed = Vec::new();
        for command in commands.drain(..) {
            match command {
                Command::Record(event) => batch.push(*event),
                Command::Flush(done) => flushed.push(done),
            }
        }
        if !batch.is_empty() {
            let events = std::mem::take(&mut batch);
            let count = events.len();
            let written = writer
                .run(move |connection| {
                    Box::pin(async move {
                        write_batch(connection, &events)
                            .await
                            .map_err(super::database_error)
                    })
                })
                .await;
            if let Err(error) = written {
                tracing::warn!(%error, events = count, "telemetry batch not written");
            }
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// Insert a batch inside the writer's transaction; a savepoint keeps it whole.
async fn write_batch(
    connection: &mut SqliteConnection,
    batch: &[TelemetryEvent],
) -> Result<(), sqlx::Error> {
    sqlx::query("SAVEPOINT telemetry_batch")
        .execute(&mut *connection)
        .await?;
    let inserted = insert_batch(connection, batch).await;
    let end = if inserted.is_ok() {
        "RELEASE telemetry_batch"
    } else {
        "ROLLBACK TO telemetry_batch"
    };
    sqlx::query(end).execute(&mut *connection).await?;
    inserted
}

async fn insert_batch(
    connection: &mut SqliteConnection,
    batch: &[TelemetryEvent],
) -> Result<(), sqlx::Error> {
    for event in batch {
        match event {
            TelemetryEvent::LlmCall(call) => {
                sqlx::query(
                    "INSERT INTO llm_calls (at_ms, llm_name, model, backend, wire, profile_id, \
                     conversation_key, attempt, outcome, input_tokens, output_tokens, latency_ms, \
                     cost_usd, member_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(call.at_ms)
                .bind(&call.llm_name)
                .bind(&call.model)
                .bind(&call.backend)
                .bind(&call.wire)
                .bind(&call.profile_id)
                .bind(call.conversation_key.as_ref().map(|key| key.as_str()))
                .bind(i64::from(call.attempt))
                .bind(&call.outcome)
                .bind(i64::try_from(call.input_tokens).unwrap_or(i64::MAX))
                .bind(i64::try_from(call.output_tokens).unwrap_or(i64::MAX))
                .bind(i64::try_from(call.latency_ms).unwrap_or(i64::MAX))
                .bind(call.cost_usd)
                .bind(call.member_id.as_ref().map(|member| member.as_str()))
                .execute(&mut *connection)
                .await?;
            }
            TelemetryEvent::Stage {
                at_ms,
                conversation_key,
                stage,
                payload,
            } => {
                sqlx::query(
                    "INSERT INTO telemetry_events (at_ms, conversation_key, stage, payload) \
                     VALUES (?, ?, ?, ?)",
                )
                .bind(at_ms)
                .bind(conversation_key.as_str())
                .bind(stage)
                .bind(payload.to_string())
                .execute(&mut *connection)
                .await?;
            }
        }
    }
    Ok(())
}
