//! The background task that prunes what hearth keeps only for a while (config
//! `retention`): history, telemetry and LLM-call records, finished inbox messages,
//! delivered outbox rows, settled reminder occurrences and the schedules that ended with
//! none left, downloaded attachments, and the web page's expired sign-in codes, links and
//! sessions (a day after they expired). Rows go in small batches with a pause between
//! them, so pruning never holds the database writer for long (the few web-access rows in
//! one step); an attachment goes with its message's folder once that folder is old.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::metrics::Metrics;
use crate::ports::{Prunable, Retention, WebAccess, now_ms};

/// Rows deleted in one statement.
const BATCH: usize = 500;
/// The pause between two batches: other writes go first.
const BETWEEN_BATCHES: Duration = Duration::from_millis(20);
/// The first pruning waits this long after start (or the interval, if shorter).
const FIRST_RUN_AFTER: Duration = Duration::from_secs(60);
/// How long expired sign-in codes, links and sessions stay: a code still counts for how
/// often codes were sent to a member's chat after it expired, so it stays longer than any
/// window the page counts them in.
const WEB_ACCESS_KEPT_AFTER_EXPIRY: Duration = Duration::from_secs(24 * 3600);

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
            Prunable::History | Prunable::FinishedPlans | Prunable::ScriptRuns => self.history,
            Prunable::Telemetry | Prunable::LlmCalls => self.telemetry,
            // An occurrence that fired is the scheduler's counterpart of an answered
            // message (a task's occurrence is one), kept as long.
            Prunable::FinishedInbox | Prunable::SettledFirings | Prunable::EndedSchedules => {
                self.finished_inbox
            }
            Prunable::DeliveredOutbox => self.delivered_outbox,
        }
    }
}

/// Prune every `settings.interval` until the runtime stops.
pub fn spawn_pruner(
    retention: Arc<dyn Retention>,
    web_access: Arc<dyn WebAccess>,
    settings: RetentionSettings,
    metrics: Arc<Metrics>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        tokio::time::sleep(FIRST_RUN_AFTER.min(settings.interval)).await;
        loop {
            prune_once(retention.as_ref(), web_access.as_ref(), &settings, &metrics).await;
            tokio::time::sleep(settings.interval).await;
        }
    })
}

/// One round: every kind of row, the web page's expired access, then the attachments.
pub async fn prune_once(
    retention: &dyn Retention,
    web_access: &dyn WebAccess,
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
    // A family's sessions and codes are few: one step, not batches.
    let expired_before_ms = now_ms().saturating_sub(millis(WEB_ACCESS_KEPT_AFTER_EXPIRY));
    match web_access.prune_expired(expired_before_ms).await {
        Ok(0) => {}
        Ok(pruned) => {
            metrics.add(
                "hearth_pruned_total",
                &[("what", "web_access")],
                pruned as f64,
            );
            tracing::info!(
                what = "web_access",
                pruned,
                "expired sign-ins and sessions pruned"
            );
        }
        Err(error) => {
            tracing::warn!(what = "web_access", %error, "pruning failed; trying again next round");
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
    use crate::ids::FiringId;
    use crate::llm::Role;
    use crate::ports::{
        Claimed, ConversationMemory, FiringClaim, FiringState, FiringTiming, HistoryEntry,
        NewSchedule, NewSignInCode, ScheduleKind, Schedules, Settled, Settlement, WebSession,
    };
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
        let pruner = spawn_pruner(store.clone(), store.clone(), settings, metrics.clone());

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

    fn once_for_alice(text: &str, due_ms: i64) -> NewSchedule {
        NewSchedule {
            kind: ScheduleKind::Reminder,
            member_id: "alice".parse().unwrap(),
            set_by: "alice".parse().unwrap(),
            text: text.into(),
            profile_id: None,
            conversation: "telegram:1001".parse().unwrap(),
            zone: "Europe/Berlin".into(),
            recurrence: None,
            start_local: None,
            first_due_ms: due_ms,
            escalate_after_minutes: Some(30),
            snoozed_from: None,
            once_key: None,
        }
    }

    /// Fire one-off `schedule` now, open, its escalation due in half an hour.
    async fn fire_now(store: &InMemoryStore, schedule: i64, due_ms: i64) -> FiringId {
        let id = FiringId {
            schedule_id: schedule,
            due_ms,
        };
        let claim = FiringClaim {
            id,
            next_due_ms: None,
            fired_at_ms: now_ms(),
            timing: FiringTiming::OnTime,
            state: FiringState::Open,
            escalate_at_ms: Some(now_ms() + millis(HOUR / 2)),
            messages: Vec::new(),
            turn: None,
        };
        let fired = store.claim(&claim).await.unwrap();
        assert!(matches!(fired, Claimed::Fired { .. }), "{fired:?}");
        id
    }

    #[tokio::test(start_paused = true)]
    async fn a_settled_reminder_and_its_ended_schedule_go_at_the_first_round_past_the_window() {
        let _clock = follow_tokio_clock();
        let store = Arc::new(InMemoryStore::default());
        let settings = RetentionSettings {
            history: 30 * DAY,
            telemetry: 30 * DAY,
            finished_inbox: 7 * DAY,
            delivered_outbox: 7 * DAY,
            attachments: 30 * DAY,
            attachment_dirs: Vec::new(),
            interval: 6 * HOUR,
        };
        let now = now_ms();
        let answered = store
            .add(&once_for_alice("call grandma", now))
            .await
            .unwrap();
        let ignored = store
            .add(&once_for_alice("water plants", now))
            .await
            .unwrap();
        let done = fire_now(&store, answered.id, now).await;
        let open = fire_now(&store, ignored.id, now).await;
        let settlement = Settlement {
            id: done,
            state: FiringState::Done,
            settled_at_ms: now_ms(),
            messages: Vec::new(),
            snooze: None,
        };
        let settled = store.settle(&settlement).await.unwrap();
        assert!(matches!(settled, Settled::Now { .. }), "{settled:?}");
        let metrics = Arc::new(Metrics::default());
        let pruner = spawn_pruner(store.clone(), store.clone(), settings, metrics.clone());

        // Rounds run a minute after the start, then every six hours: the one at seven days
        // and a minute is the first to find the answered occurrence older than a week.
        tokio::time::sleep(7 * DAY).await;
        assert!(store.firing(done).await.unwrap().is_some());
        assert!(store.schedule(answered.id).await.unwrap().is_some());
        tokio::time::sleep(2 * FIRST_RUN_AFTER).await;
        assert_eq!(store.firing(done).await.unwrap(), None);
        assert_eq!(store.schedule(answered.id).await.unwrap(), None);
        assert_eq!(
            metrics.value("hearth_pruned_total", &[("what", "reminder_firings")]),
            1.0
        );
        assert_eq!(
            metrics.value("hearth_pruned_total", &[("what", "schedules")]),
            1.0
        );

        // The occurrence nobody answered stays open, its schedule with it, however long.
        tokio::time::sleep(30 * DAY).await;
        let waiting = store
            .firing(open)
            .await
            .unwrap()
            .expect("the open occurrence");
        assert_eq!(waiting.state, FiringState::Open);
        assert!(store.schedule(ignored.id).await.unwrap().is_some());
        pruner.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn expired_sign_ins_and_sessions_go_a_day_after_they_expired() {
        let _clock = follow_tokio_clock();
        let store = Arc::new(InMemoryStore::default());
        let settings = RetentionSettings {
            history: 30 * DAY,
            telemetry: 30 * DAY,
            finished_inbox: 30 * DAY,
            delivered_outbox: 30 * DAY,
            attachments: 30 * DAY,
            attachment_dirs: Vec::new(),
            interval: 6 * HOUR,
        };
        let now = now_ms();
        let alice: crate::ids::MemberId = "alice".parse().unwrap();
        let session = WebSession {
            id: "s1".into(),
            member_id: alice.clone(),
            csrf_token: "csrf".into(),
            signed_in_with: "link".into(),
            created_at_ms: now - 32 * millis(DAY),
            expires_at_ms: now - 2 * millis(DAY),
        };
        store.create_session("c1", &session).await.unwrap();
        // Expired twenty minutes ago: it still counts for how often codes were sent.
        let code = NewSignInCode {
            member_id: alice.clone(),
            code_hash: "h1".into(),
            created_at_ms: now - millis(HOUR / 2),
            expires_at_ms: now - millis(HOUR / 3),
        };
        store.put_sign_in_code(&code).await.unwrap();
        let hour_ago = now - millis(HOUR);
        let metrics = Arc::new(Metrics::default());
        let pruner = spawn_pruner(store.clone(), store.clone(), settings, metrics.clone());

        // The first round takes the session expired two days ago, not the code.
        tokio::time::sleep(FIRST_RUN_AFTER + Duration::from_secs(1)).await;
        assert_eq!(
            store.session("c1", session.created_at_ms).await.unwrap(),
            None
        );
        assert_eq!(
            store.sign_in_codes_since(&alice, hour_ago).await.unwrap(),
            1
        );
        assert_eq!(
            metrics.value("hearth_pruned_total", &[("what", "web_access")]),
            1.0
        );
        // The round at eighteen hours keeps it; the one at a day, past its expiry's day,
        // takes it.
        tokio::time::sleep(18 * HOUR).await;
        assert_eq!(
            store.sign_in_codes_since(&alice, hour_ago).await.unwrap(),
            1
        );
        tokio::time::sleep(6 * HOUR).await;
        assert_eq!(
            store.sign_in_codes_since(&alice, hour_ago).await.unwrap(),
            0
        );
        assert_eq!(
            metrics.value("hearth_pruned_total", &[("what", "web_access")]),
            2.0
        );
        pruner.abort();
    }
}
