//! `TelemetrySink` on PostgreSQL: a background task writes `llm_calls` and
//! `telemetry_events` in batches (one statement per batch, an `INSERT … SELECT FROM
//! UNNEST` per table, gathered for `GATHER` after the first event), so recording costs a
//! turn one channel send and never waits for the database.

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

use super::PostgresStore;
use crate::ports::{LlmCallRecord, TelemetryEvent, TelemetrySink};

/// Events waiting beyond this are dropped (and logged): telemetry must never grow memory
/// without bound.
const QUEUE_CAPACITY: usize = 10_000;
const BATCH: usize = 256;
/// How long a batch waits for more events after its first: each write is a round trip,
/// and telemetry may be late by this much.
const GATHER: std::time::Duration = std::time::Duration::from_millis(20);

/// What the writing task is asked to do, in order.
enum Command {
    // Boxed: an event is large, and the queue holds many commands.
    Record(Box<TelemetryEvent>),
    /// Answer once everything before this command is written.
    Flush(oneshot::Sender<()>),
}

pub struct PostgresTelemetryWriter {
    sender: mpsc::Sender<Command>,
}

impl PostgresStore {
    /// Telemetry written to this database by a batching task on the current tokio runtime.
    pub fn telemetry_writer(&self) -> PostgresTelemetryWriter {
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(write_batches(self.pool.clone(), receiver));
        PostgresTelemetryWriter { sender }
    }
}

#[async_trait::async_trait]
impl TelemetrySink for PostgresTelemetryWriter {
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

async fn write_batches(pool: PgPool, mut receiver: mpsc::Receiver<Command>) {
    let mut commands = Vec::with_capacity(BATCH);
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut commands, BATCH).await > 0 {
        // A busy worker's events of many turns go in one statement; a flush waits for none.
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
            if let Err(error) = write_batch(&pool, &batch).await {
                tracing::warn!(%error, events = batch.len(), "telemetry batch not written");
            }
            batch.clear();
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// Write `batch` whole or not at all, in one statement (one round trip): the calls
/// inserted by a data-modifying `WITH`, the stage events by the statement itself.
async fn write_batch(pool: &PgPool, batch: &[TelemetryEvent]) -> Result<(), sqlx::Error> {
    let mut calls = Vec::new();
    let mut stages = Stages::default();
    for event in batch {
        match event {
            TelemetryEvent::LlmCall(call) => calls.push(call),
            TelemetryEvent::Stage {
                at_ms,
                conversation_key,
                stage,
                payload,
            } => {
                stages.at_ms.push(*at_ms);
                stages
                    .conversation_key
                    .push(conversation_key.as_str().to_owned());
                stages.stage.push(stage.clone());
                stages.payload.push(payload.to_string());
            }
        }
    }
    bind_calls(sqlx::query(WRITE_BATCH), &calls)
        .bind(&stages.at_ms)
        .bind(&stages.conversation_key)
        .bind(&stages.stage)
        .bind(&stages.payload)
        .execute(pool)
        .await
        .map(|_| ())
}

/// The stage events of a batch, column by column.
#[derive(Default)]
struct Stages {
    at_ms: Vec<i64>,
    conversation_key: Vec<String>,
    stage: Vec<String>,
    payload: Vec<String>,
}

/// `query` (`WRITE_BATCH`) with the calls' columns bound as `$1`–`$14`.
fn bind_calls<'q>(
    query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    calls: &[&LlmCallRecord],
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    let column = |value: fn(&LlmCallRecord) -> i64| -> Vec<i64> {
        calls.iter().map(|call| value(call)).collect()
    };
    let text = |value: fn(&LlmCallRecord) -> &String| -> Vec<String> {
        calls.iter().map(|call| value(call).clone()).collect()
    };
    let count = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    let conversation_keys: Vec<Option<String>> = calls
        .iter()
        .map(|call| {
            call.conversation_key
                .as_ref()
                .map(|key| key.as_str().to_owned())
        })
        .collect();
    let member_ids: Vec<Option<String>> = calls
        .iter()
        .map(|call| {
            call.member_id
                .as_ref()
                .map(|member| member.as_str().to_owned())
        })
        .collect();
    let profile_ids: Vec<Option<String>> =
        calls.iter().map(|call| call.profile_id.clone()).collect();
    let costs: Vec<f64> = calls.iter().map(|call| call.cost_usd).collect();
    query
        .bind(column(|call| call.at_ms))
        .bind(text(|call| &call.llm_name))
        .bind(text(|call| &call.model))
        .bind(text(|call| &call.backend))
        .bind(text(|call| &call.wire))
        .bind(profile_ids)
        .bind(conversation_keys)
        .bind(column(|call| i64::from(call.attempt)))
        .bind(text(|call| &call.outcome))
        .bind(
            calls
                .iter()
                .map(|call| count(call.input_tokens))
                .collect::<Vec<_>>(),
        )
        .bind(
            calls
                .iter()
                .map(|call| count(call.output_tokens))
                .collect::<Vec<_>>(),
        )
        .bind(
            calls
                .iter()
                .map(|call| count(call.latency_ms))
                .collect::<Vec<_>>(),
        )
        .bind(costs)
        .bind(member_ids)
}

/// One batch: its LLM calls (`$1`–`$14`, column by column) and its stage events
/// (`$15`–`$18`); an empty array inserts nothing.
const WRITE_BATCH: &str = "WITH calls AS (INSERT INTO llm_calls (at_ms, llm_name, model, \
     backend, wire, profile_id, conversation_key, attempt, outcome, input_tokens, \
     output_tokens, latency_ms, cost_usd, member_id) \
     SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], \
     $6::text[], $7::text[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[], \
     $12::bigint[], $13::float8[], $14::text[])) \
     INSERT INTO telemetry_events (at_ms, conversation_key, stage, payload) \
     SELECT * FROM UNNEST($15::bigint[], $16::text[], $17::text[], $18::text[])";
