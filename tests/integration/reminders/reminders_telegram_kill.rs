//! Reminders on Telegram with the real binary killed with SIGKILL: just before a reminder
//! is due, it fires once after the restart, marked late. Killed while Telegram holds the
//! reminder's sendMessage, it delivers after the restart what the firing stored, saying it
//! is late, never a new firing: once when Telegram had not taken it, and a second copy of the same occurrence
//! (the one exception of the outbox on Telegram) when Telegram had taken it but its answer
//! was lost.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Row;

use crate::support::delivery::undelivered;
use crate::support::hearth_app::Hearth;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::reminders::{WAIT, fired_in, remind_profile, script_reminder, times_said};
use crate::support::telegram::{StoredMessage, TelegramServer};
use crate::support::telegram_family::{TOKEN, alice, bot_says, press, telegram_env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_just_before_it_is_due_the_reminder_fires_once_after_restart_marked_late() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = crate::support::telegram_family::write_telegram_config(
        folder.path(),
        &llm,
        &telegram,
        &[remind_profile()],
    );
    let env = telegram_env(&[]);
    script_reminder(
        &llm,
        json!({"text": "call grandma", "delay": "PT3S"}),
        "I'll remind you.",
    );
    let first = Hearth::spawn(&config, &env);
    telegram.push_private_text(&alice(), "/remind call grandma in 3 seconds");
    bot_says(&telegram, 1001, "I'll remind you.").await;
    first.kill();
    // Down across the moment it was due, and long enough that it is late.
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(times_said(&telegram, 1001, "call grandma"), 0);

    let _second = Hearth::spawn(&config, &env);
    let prompt = fired_in(&telegram, 1001, "call grandma").await;
    let text = prompt.text.unwrap();
    assert!(text.contains("late by"), "{text}");
    assert!(text.contains("it was due today at"), "{text}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(times_said(&telegram, 1001, "call grandma"), 1);
}

/// What Telegram did with the reminder's sendMessage it held when hearth was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeldSend {
    /// Lost with the connection: Telegram never took it.
    Lost,
    /// Taken (the message is in the chat); its answer was lost with the connection.
    Taken,
}

/// A reminder that came due, sent while Telegram held its sendMessage, and hearth killed
/// with SIGKILL meanwhile; then a second hearth on the same database.
struct KilledWhileSending {
    telegram: TelegramServer,
    llm: ScriptedLlmServer,
    folder: tempfile::TempDir,
    _second: Hearth,
    /// The reminder as its firing stored it.
    stored: String,
}

/// The occurrences that fired, as (schedule, due ms), and each schedule's status.
async fn fired_and_statuses(folder: &Path) -> (Vec<(i64, i64)>, Vec<String>) {
    let url = format!("sqlite://{}", folder.join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let firings = sqlx::query("SELECT schedule_id, due_ms FROM schedule_firings")
        .fetch_all(&pool)
        .await
        .unwrap();
    let statuses = sqlx::query("SELECT status FROM schedules")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    (
        firings
            .iter()
            .map(|row| (row.get("schedule_id"), row.get("due_ms")))
            .collect(),
        statuses.iter().map(|row| row.get("status")).collect(),
    )
}

async fn kill_while_the_reminder_is_sent(fate: HeldSend) -> KilledWhileSending {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = crate::support::telegram_family::write_telegram_config(
        folder.path(),
        &llm,
        &telegram,
        &[remind_profile()],
    );
    let env = telegram_env(&[]);
    script_reminder(
        &llm,
        json!({"text": "call grandma", "delay": "PT4S"}),
        "I'll remind you.",
    );
    let first = Hearth::spawn(&config, &env);
    telegram.push_private_text(&alice(), "/remind call grandma in 4 seconds");
    bot_says(&telegram, 1001, "I'll remind you.").await;
    let held = match fate {
        HeldSend::Lost => telegram.hold_next("sendMessage"),
        HeldSend::Taken => telegram.hold_answer_of_next("sendMessage"),
    };
    telegram
        .wait_for_call(
            "sendMessage",
            |call| {
                call.str("text")
                    .is_some_and(|text| text.contains("call grandma"))
            },
            WAIT,
        )
        .await
        .expect("the reminder is being sent");
    // Fired: stored with its occurrence, to be noted delivered once Telegram answers.
    let waiting = undelivered(folder.path()).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let stored = waiting[0].1.clone();
    assert!(stored.contains("call grandma"), "{stored}");
    first.kill();
    if fate == HeldSend::Lost {
        held.lose();
    }
    drop(held);
    telegram.settle().await;
    let taken = usize::from(fate == HeldSend::Taken);
    assert_eq!(times_said(&telegram, 1001, "call grandma"), taken);

    // Down long enough that what goes out after the restart is late.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let second = Hearth::spawn(&config, &env);
    let deadline = Instant::now() + WAIT;
    while !undelivered(folder.path()).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the reminder was never delivered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Anything sent twice would be there by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    KilledWhileSending {
        telegram,
        llm,
        folder,
        _second: second,
        stored,
    }
}

/// The copies of the reminder in Alice's chat: each is what its firing stored (on time),
/// the one sent after the restart saying it is late, and that occurrence is the only one
/// that fired; the model was not asked again.
async fn only_the_stored_occurrence(killed: &KilledWhileSending) -> Vec<StoredMessage> {
    let copies: Vec<StoredMessage> = killed
        .telegram
        .bot_messages_in(1001)
        .into_iter()
        .filter(|message| {
            message
                .text
                .as_deref()
                .unwrap_or("")
                .contains("call grandma")
        })
        .collect();
    for copy in &copies {
        let text = copy.text.as_deref().unwrap_or("");
        assert!(text.starts_with(&killed.stored), "{text}");
        assert_eq!(copy.button_data().len(), 2, "Done and Snooze");
    }
    let after_restart = copies
        .last()
        .and_then(|copy| copy.text.as_deref())
        .unwrap_or("");
    assert!(
        after_restart.starts_with(&format!("{}\n(sent late by ", killed.stored)),
        "{after_restart}"
    );
    assert_eq!(killed.stored, "⏰ Reminder: call grandma", "fired on time");
    let (fired, statuses) = fired_and_statuses(killed.folder.path()).await;
    assert_eq!(fired.len(), 1, "one occurrence fired: {fired:?}");
    assert_eq!(statuses, ["finished"]);
    assert_eq!(killed.llm.requests().len(), 2, "the model was asked once");
    copies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_telegram_holds_the_reminder_it_is_delivered_once_after_restart() {
    let killed = kill_while_the_reminder_is_sent(HeldSend::Lost).await;
    let copies = only_the_stored_occurrence(&killed).await;
    assert_eq!(copies.len(), 1, "exactly once: {copies:?}");
    assert_eq!(
        press(&killed.telegram, &alice(), &copies[0], 0).await,
        ("Done.".into(), false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_telegram_s_answer_the_same_occurrence_is_sent_again_never_fired_again() {
    let killed = kill_while_the_reminder_is_sent(HeldSend::Taken).await;
    let copies = only_the_stored_occurrence(&killed).await;
    // Telegram took it, hearth died before noting so, and Telegram cannot recognise a
    // resend: the outbox's one documented exception. The copy is of the same occurrence.
    assert_eq!(copies.len(), 2, "{copies:?}");
    assert_eq!(copies[0].button_data(), copies[1].button_data());
    assert_eq!(
        copies[0].text.as_deref(),
        Some(killed.stored.as_str()),
        "sent on time"
    );
    assert_eq!(
        press(&killed.telegram, &alice(), &copies[0], 0).await,
        ("Done.".into(), false)
    );
    assert_eq!(
        press(&killed.telegram, &alice(), &copies[1], 1).await,
        ("This was already answered.".into(), true)
    );
}
