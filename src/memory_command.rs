//! `hearth memory status`: what family memory holds, read beside a running hearth (the
//! database opened read-only, no lock taken): sources and chunks of each kind, where the
//! indexer stands in the history and how far behind it is, the vectors of the configured
//! embedding model and the chunks waiting for one, and what the embedding model cost as far
//! as the recorded calls (`llm_calls`, kept for `retention.telemetry_days`) go.

use clap::Subcommand;

use hearth::actors::memory_indexer::{CURSOR, LEASE};
use hearth::config::LoadedConfig;
use hearth::ports::{ChatsBehind, LlmSpend, now_ms};
use hearth::redaction::redact_url_password;
use hearth::storage::Stores;

#[derive(Subcommand)]
pub enum MemoryCommand {
    /// What family memory holds, how far its indexer is behind, what embedding cost.
    Status,
}

pub async fn memory(
    loaded: LoadedConfig,
    command: MemoryCommand,
    existing: Option<Stores>,
) -> anyhow::Result<()> {
    let MemoryCommand::Status = command;
    let Some(stores) = existing else {
        anyhow::bail!(
            "no database at {}: nothing was remembered yet",
            redact_url_password(&loaded.config.database_url)
        );
    };
    let text = status(&loaded, &stores).await;
    stores.close().await;
    print!("{}", text?);
    Ok(())
}

/// The status as printed.
async fn status(loaded: &LoadedConfig, stores: &Stores) -> anyhow::Result<String> {
    let config = &loaded.config;
    let memory = &stores.family_memory;
    let embedding = config.embedding_llm();
    let model = embedding.map(|(_, llm)| llm.model.as_str());
    let held = memory.status(model).await?;
    let mut text = String::new();
    let mut line = |words: String| {
        text.push_str(&words);
        text.push('\n');
    };
    line(if config.memory.enabled {
        format!(
            "indexer: on, every {} s",
            config.memory.index_interval_seconds
        )
    } else {
        "indexer: off (memory.enabled: false); what is indexed stays".to_owned()
    });
    if stores.postgres.is_some() {
        line(match stores.coordination.lease_holder(LEASE).await? {
            Some(holder) => format!("indexing worker: {} (holds {LEASE})", holder.worker_id),
            None => format!("indexing worker: none holds {LEASE} now"),
        });
    }
    line(format!(
        "sources: {}, chunks: {}",
        held.sources, held.chunks
    ));
    for counted in memory.counts_by_kind().await? {
        line(format!(
            "  {:<9} {} sources, {} chunks",
            format!("{}:", counted.kind.as_str()),
            counted.sources,
            counted.chunks
        ));
    }
    let cursor = memory.cursor(CURSOR).await?;
    let behind = memory.chats_behind(cursor).await?;
    line(behind_words(cursor, &behind, now_ms()));
    line(match (embedding, model) {
        (Some((name, _)), Some(model)) => format!(
            "vectors of {model} ({name}): {}; chunks waiting for one: {}",
            held.vectors, held.waiting
        ),
        _ => "vectors: none (memory.embedding_model is unset: nothing is turned into vectors)"
            .to_owned(),
    });
    if let Some((name, _)) = embedding {
        let spent = stores.usage.spent_on(name).await?;
        line(spent_words(name, &spent));
    }
    Ok(text)
}

/// Where the cursor stands against the newest chat entry, and how far behind it is.
fn behind_words(cursor: i64, behind: &ChatsBehind, now_ms: i64) -> String {
    match (behind.newest_id, behind.oldest_at_ms) {
        (Some(newest), Some(oldest_at_ms)) => format!(
            "history: the cursor is at message {cursor}, the newest chat entry is {newest}: \
             {} behind, the oldest written {} ago",
            entries(behind.entries),
            age(now_ms.saturating_sub(oldest_at_ms))
        ),
        _ => {
            format!("history: the cursor is at message {cursor}: caught up, no chat entry after it")
        }
    }
}

fn entries(count: u64) -> String {
    match count {
        1 => "1 chat entry".to_owned(),
        count => format!("{count} chat entries"),
    }
}

/// `ms` in words: seconds, minutes, hours or days, rounded down.
fn age(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    let (count, unit) = match seconds {
        0..60 => (seconds, "second"),
        60..3_600 => (seconds / 60, "minute"),
        3_600..86_400 => (seconds / 3_600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural}")
}

/// What the embedding model cost, as far as the recorded calls go.
fn spent_words(name: &str, spent: &LlmSpend) -> String {
    let Some(since_ms) = spent.since_ms else {
        return format!("embedding cost ({name}): no call recorded");
    };
    let since = chrono::DateTime::from_timestamp_millis(since_ms)
        .map(|at| at.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
    format!(
        "embedding cost ({name}): {:.6} USD for {} calls, {} input tokens, since {since}",
        spent.cost_usd, spent.calls, spent.input_tokens
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_far_behind_is_said_in_entries_and_the_oldest_one_s_age() {
        let behind = ChatsBehind {
            entries: 40,
            newest_id: Some(1300),
            oldest_at_ms: Some(1_000),
        };
        assert_eq!(
            behind_words(1234, &behind, 1_000 + 3 * 60_000 + 5_000),
            "history: the cursor is at message 1234, the newest chat entry is 1300: 40 chat \
             entries behind, the oldest written 3 minutes ago"
        );
        assert_eq!(
            behind_words(1300, &ChatsBehind::default(), 0),
            "history: the cursor is at message 1300: caught up, no chat entry after it"
        );
        assert_eq!(age(999), "0 seconds");
        assert_eq!(age(1_000), "1 second");
        assert_eq!(age(2 * 3_600_000), "2 hours");
        assert_eq!(age(3 * 86_400_000), "3 days");
    }
}
