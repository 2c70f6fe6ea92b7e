//! The background task that prunes what hearth keeps only for a while (config
//! `retention`): history, telemetry and LLM-call records, finished inbox messages,
//! delivered outbox rows, and downloaded attachments. Rows go in small batches with a
//! pause between them, so pruning never holds the database writer for long; an attachment
//! goes with its message's folder once that folder is old.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::metrics::Metrics;
use crate::ports::{Prunable, Retention, now_ms};

/// Rows deleted in one statement.
const BATCH: usize = 500;
/// The pause between two batches: other writes go first.
const BETWEEN_BATCHES: Duration = Duration::from_millis(20);
/// The first pruning waits this long after start (or the interval, if shorter).
const FIRST_RUN_AFTER: Duration = Duration::from_secs(60);

/// How long each kind of thing is kept, and how often pruning runs.
#[derive(Debug, Clone)]
pub struct RetentionSettings {
    pub history: Duration,
    pub telemetry: Duration,
    pub finished_inbox: Duration,
    pub delivered_outbox: Duration,
    pub attachments: Duration,
    /// The folders holding one folder of attachments per message.
    pub attachment_dirs: Vec<PathBuf>,
    pub interval: Duration,
}

impl RetentionSettings {
    /// The settings of config `retention`; attachments are pruned in `attachment_dirs`.
    pub fn from_config(
        retention: &crate::config::RetentionConfig,
        attachment_dirs: Vec<PathBuf>,
    ) -> RetentionSettings {
        let days = |days: u64| {
            Duration::from_secs(24 * 3600).saturating_mul(u32::try_from(days).unwrap_or(u32::MAX))
        };
        RetentionSettings {
            history: days(retention.history_days),
            telemetry: days(retention.telemetry_days),
            finished_inbox: days(retention.answered_inbox_days),
            delivered_outbox: days(retention.delivered_outbox_days),
            attachments: days(retention.attachments_days),
            attachment_dirs,
            interval: Duration::from_secs(retention.interval_seconds),
        }
    }

    fn kept_for(&self, what: Prunable) -> Duration {
        match what {
            Prunable::History | Prunable::FinishedPlans => self.history,
            Prunable::Telemetry | Prunable::LlmCalls => self.telemetry,
            Prunable::FinishedInbox => self.finished_inbox,
            Prunable::DeliveredOutbox => self.delivered_outbox,
        }
    }
}

/// Prune every `settings.interval` until the runtime stops.
pub fn spawn_pruner(
    retention: Arc<dyn Retention>,
    settings: RetentionSettings,
    metrics: Arc<Metrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        tokio::time::sleep(FIRST_RUN_AFTER.min(settings.interval)).await;
        loop {
            prune_once(retention.as_ref(), &settings, &metrics).await;
            tokio::time::sleep(settings.interval).await;
        }
    })
}

/// One round: every kind of row, then the attachments.
pub async fn prune_once(
    retention: &dyn Retention,
    settings: &RetentionSettings,
    metrics: &Metrics,
) {
    for what in Prunable::ALL {
        let before_ms = now_ms().saturating_sub(millis(settings.kept_for(what)));
        let mut pruned = 0usize;
        loop {
            match retention.prune(what, before_ms, BATCH).await {
                Ok(deleted) => {
                    pruned += deleted;
                    if deleted < BATCH {
                        break;
                    }
                    tokio::time::sleep(BETWEEN_BATCHES).await;
                }
                Err(error) => {
                    tracing::warn!(what = what.as_str(), %error, "pruning failed; trying again next round");
                    break;
                }
            }
        }
        if pruned > 0 {
            metrics.add(
                "hearth_pruned_total",
                &[("what", what.as_str())],
                pruned as f64,
            );
            tracing::info!(what = what.as_str(), pruned, "old rows pruned");
        }
    }
    let cutoff = crate::clock::system_now()
        .checked_sub(settings.attachments)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    for folder in &settings.attachment_dirs {
        let pruned = prune_attachments(folder, cutoff).await;
        if pruned > 0 {
            metrics.add(
                "hearth_pruned_total",
                &[("what", "attachments")],
                pruned as f64,
            );
            tracing::info!(folder = %folder.display(), pruned, "old attachments pruned");
        }
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Remove the message folders in `folder` last changed before `cutoff`; how many.
async fn prune_attachments(folder: &PathBuf, cutoff: SystemTime) -> usize {
    let mut entries = match tokio::fs::read_dir(folder).await {
        Ok(entries) => entries,
        // No attachments yet.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return 0,
        Err(error) => {
            tracing::warn!(folder = %folder.display(), %error, "attachments not pruned");
            return 0;
        }
    };
    let mut pruned = 0;
    while let Ok(Some(entry)) = entries.next_entry().await {
        let Ok(metadata) = entry.metadata().await else {
            continue;
        };
        let old = metadata.modified().is_ok_and(|modified| modified < cutoff);
        if !(metadata.is_dir() && old) {
            continue;
        }
        match tokio::fs::remove_dir_all(entry.path()).await {
            Ok(()) => pruned += 1,
            Err(error) => {
                tracing::warn!(path = %entry.path().display(), %error, "attachment folder not removed");
            }
        }
    }
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::follow_tokio_clock;
    use crate::llm::Role;
    use crate::ports::{ConversationMemory, HistoryEntry};
    use crate::storage::in_memory::InMemoryStore;

    const HOUR: Duration = Duration::from_secs(3600);
    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn said(content: &str, age: Duration) -> HistoryEntry {
        HistoryEntry {
            role: Role::User,
            content: content.into(),
            profile_id: "family".into(),
            inbox_id: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at_ms: now_ms() - millis(age),
        }
    }

    async fn history(store: &InMemoryStore) -> Vec<String> {
        let entries = store
            .recent(&"http:alice".parse().unwrap(), 10, 0)
            .await
            .unwrap();
        entries.into_iter().map(|entry| entry.content).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn each_thing_goes_at_the_first_round_after_it_is_older_than_kept_never_sooner() {
        let _clock = follow_tokio_clock();
        let store = Arc::new(InMemoryStore::default());
        let attachments = tempfile::tempdir().unwrap();
        let settings = RetentionSettings {
            history: 30 * DAY,
            telemetry: 7 * DAY,
            finished_inbox: 7 * DAY,
            delivered_outbox: 7 * DAY,
            attachments: 2 * DAY,
            attachment_dirs: vec![attachments.path().to_path_buf()],
            interval: 6 * HOUR,
        };
        let entries = [
            said("old", 31 * DAY),
            said("nearly old", 30 * DAY - 3 * HOUR),
            said("new", Duration::ZERO),
        ];
        store
            .append(&"http:alice".parse().unwrap(), &entries)
            .await
            .unwrap();
        let message_folder = attachments.path().join("inbox-1");
        std::fs::create_dir(&message_folder).unwrap();
        let metrics = Arc::new(Metrics::default());
        let pruner = spawn_pruner(store.clone(), settings, metrics.clone());

        // The first round waits a minute after the start.
        tokio::time::sleep(FIRST_RUN_AFTER - Duration::from_secs(1)).await;
        assert_eq!(history(&store).await, ["old", "nearly old", "new"]);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(history(&store).await, ["nearly old", "new"]);
        assert_eq!(
            metrics.value("hearth_pruned_total", &[("what", "history")]),
            1.0
        );

        // Old enough three hours later; pruned at the next round, six hours after the first.
        tokio::time::sleep(5 * HOUR).await;
        assert_eq!(history(&store).await, ["nearly old", "new"]);
        tokio::time::sleep(HOUR).await;
        assert_eq!(history(&store).await, ["new"]);

        // A message's files go once their folder is older than two days.
        tokio::time::sleep(DAY + 12 * HOUR).await;
        assert!(message_folder.exists());
        tokio::time::sleep(12 * HOUR).await;
        assert!(!message_folder.exists());
        assert_eq!(history(&store).await, ["new"]);
        pruner.abort();
    }
}
