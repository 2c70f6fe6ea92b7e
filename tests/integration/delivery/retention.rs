//! Retention: what is kept only for a while (history, telemetry and LLM-call records,
//! finished inbox messages with their settled confirmations, delivered outbox rows,
//! settled reminder occurrences and the schedules that ended with them, downloaded
//! attachments) is pruned once older than `retention`'s limits; everything younger stays,
//! and so does a reminder occurrence still open however old.

use std::time::{Duration, Instant, SystemTime};

use sqlx::Row;

use crate::support::llm_server::ScriptedLlmServer;
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, start_on_telegram};
use hearth::ports::now_ms;

const DAY_MS: i64 = 24 * 3600 * 1000;

async fn count(pool: &sqlx::SqlitePool, sql: &'static str) -> i64 {
    sqlx::query(sql).fetch_one(pool).await.unwrap().get(0)
}

/// A one-off reminder saying `text` that finished at `at`, its occurrence in `state`
/// (settled then, unless open).
async fn finished_reminder(pool: &sqlx::SqlitePool, text: &str, at: i64, state: &str) {
    sqlx::query(
        "INSERT INTO schedules (kind, member_id, set_by, text, channel, conversation_id, zone, \
         status, created_at_ms, updated_at_ms) VALUES ('reminder', 'alice', 'alice', ?, \
         'telegram', '1001', 'Europe/Berlin', 'finished', ?, ?)",
    )
    .bind(text)
    .bind(at)
    .bind(at)
    .execute(pool)
    .await
    .unwrap();
    let settled_at = (state != "open").then_some(at);
    sqlx::query(
        "INSERT INTO schedule_firings (schedule_id, due_ms, fired_at_ms, timing, state, \
         settled_at_ms) SELECT id, ?, ?, 'on_time', ?, ? FROM schedules WHERE text = ?",
    )
    .bind(at)
    .bind(at)
    .bind(state)
    .bind(settled_at)
    .bind(text)
    .execute(pool)
    .await
    .unwrap();
}

#[actix::test]
async fn old_rows_and_files_are_pruned_and_recent_ones_kept() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(
        &llm,
        &telegram,
        &[],
        None,
        &[
            ("HEARTH__RETENTION__INTERVAL_SECONDS", "1"),
            ("HEARTH__RETENTION__HISTORY_DAYS", "30"),
        ],
    )
    .await;
    let url = format!("sqlite://{}", app.folder().join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let now = now_ms();
    for (age_days, tag) in [(40, "old"), (1, "new")] {
        let at = now - age_days * DAY_MS;
        sqlx::query(
            "INSERT INTO messages (conversation_key, inbox_id, profile_id, role, content, \
             is_chat_text, created_at_ms) VALUES ('telegram:1001', NULL, 'p', 'user', ?, 1, ?)",
        )
        .bind(tag)
        .bind(at)
        .execute(&pool)
        .await
        .unwrap();
        let telemetry_at = now - (age_days * 3) * DAY_MS;
        sqlx::query(
            "INSERT INTO telemetry_events (at_ms, conversation_key, stage, payload) \
             VALUES (?, 'telegram:1001', ?, '{}')",
        )
        .bind(telemetry_at)
        .bind(tag)
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO llm_calls (at_ms, llm_name, model, backend, wire, attempt, outcome, \
             input_tokens, output_tokens, latency_ms, cost_usd) \
             VALUES (?, 'main', ?, 'cloud', 'openai', 1, 'ok', 1, 1, 1, 0.0)",
        )
        .bind(telemetry_at)
        .bind(tag)
        .execute(&pool)
        .await
        .unwrap();
        let inbox_id = format!("inbox-{tag}");
        sqlx::query(
            "INSERT INTO inbox (id, channel, conversation_id, member_id, text, received_at_ms, \
             status, reply, updated_at_ms) VALUES (?, 'telegram', '1001', 'alice', 'hi', ?, \
             'answered', 'hello', ?)",
        )
        .bind(&inbox_id)
        .bind(at)
        .bind(at)
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO pending_actions (id, inbox_id, member_id, channel, conversation_id, \
             profile_id, tool_name, arguments, prompt, turn_state, status, decision, \
             expires_at_ms, created_at_ms) VALUES (?, ?, 'alice', 'telegram', '1001', 'p', \
             't', '{}', 'Run t?', '{}', 'consumed', 'approved', ?, ?)",
        )
        .bind(format!("c-{tag}"))
        .bind(&inbox_id)
        .bind(at)
        .bind(at)
        .execute(&pool)
        .await
        .unwrap();
        let outbox_at = now - (age_days / 4 + 1) * DAY_MS * 2;
        sqlx::query(
            "INSERT INTO outbox (channel, conversation_id, kind, text, status, created_at_ms, \
             updated_at_ms) VALUES ('telegram', '1001', '{\"kind\":\"reply\"}', ?, \
             'delivered', ?, ?)",
        )
        .bind(tag)
        .bind(outbox_at)
        .bind(outbox_at)
        .execute(&pool)
        .await
        .unwrap();
        finished_reminder(&pool, tag, at, "done").await;
        let folder = app.folder().join("attachments").join(&inbox_id);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("photo.jpg"), b"jpeg").unwrap();
        let modified = SystemTime::now() - Duration::from_secs(age_days as u64 * 24 * 3600);
        std::fs::File::open(&folder)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }
    // Nobody answered this one: it is still open, so it stays, its schedule with it.
    finished_reminder(&pool, "open", now - 40 * DAY_MS, "open").await;
    // The pending confirmation of a message still waiting is never pruned.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let old = count(&pool, "SELECT COUNT(*) FROM messages WHERE content = 'old'").await
            + count(
                &pool,
                "SELECT COUNT(*) FROM telemetry_events WHERE stage = 'old'",
            )
            .await
            + count(&pool, "SELECT COUNT(*) FROM llm_calls WHERE model = 'old'").await
            + count(&pool, "SELECT COUNT(*) FROM inbox WHERE id = 'inbox-old'").await
            + count(
                &pool,
                "SELECT COUNT(*) FROM pending_actions WHERE id = 'c-old'",
            )
            .await
            + count(&pool, "SELECT COUNT(*) FROM outbox WHERE text = 'old'").await
            + count(&pool, "SELECT COUNT(*) FROM schedules WHERE text = 'old'").await
            + i64::from(app.folder().join("attachments/inbox-old").exists());
        if old == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{old} old things are still there"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for sql in [
        "SELECT COUNT(*) FROM messages WHERE content = 'new'",
        "SELECT COUNT(*) FROM telemetry_events WHERE stage = 'new'",
        "SELECT COUNT(*) FROM llm_calls WHERE model = 'new'",
        "SELECT COUNT(*) FROM inbox WHERE id = 'inbox-new'",
        "SELECT COUNT(*) FROM pending_actions WHERE id = 'c-new'",
        "SELECT COUNT(*) FROM outbox WHERE text = 'new'",
        "SELECT COUNT(*) FROM schedules WHERE text = 'new'",
        "SELECT COUNT(*) FROM schedules WHERE text = 'open'",
        // The old one's settled occurrence went before its schedule could.
        "SELECT COUNT(*) FROM schedule_firings WHERE state = 'done'",
        "SELECT COUNT(*) FROM schedule_firings WHERE state = 'open'",
    ] {
        assert_eq!(count(&pool, sql).await, 1, "{sql}");
    }
    assert!(
        app.folder()
            .join("attachments/inbox-new/photo.jpg")
            .exists()
    );
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains("hearth_pruned_total{what=\"history\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("hearth_pruned_total{what=\"reminder_firings\"}"),
        "{metrics}"
    );
    pool.close().await;
    app.stop().await;
}
