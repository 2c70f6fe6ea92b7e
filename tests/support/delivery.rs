//! What the delivery tests look at from outside: waiting for something to happen, the
//! outbox rows of a stopped hearth's database not delivered yet, that no delivered row
//! keeps a secret, and replies in Telegram chats each answered once and in order.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use hearth::ports::SECRET_REMOVED;
use sqlx::Row;

use super::telegram::TelegramServer;

/// Waits until `done`, failing the test after `limit` with `what` never happened.
pub async fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The outbox rows of the database in `folder` not delivered yet, as (id, text).
pub async fn undelivered(folder: &Path) -> Vec<(i64, String)> {
    let url = format!("sqlite://{}", folder.join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let rows = sqlx::query("SELECT id, text FROM outbox WHERE status = 'pending' ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.iter()
        .map(|row| (row.get("id"), row.get("text")))
        .collect()
}

/// The reply to "m <chat> <n>" is "echo: m <chat> <n>".
pub fn number_of(text: &str) -> Option<(i64, u32)> {
    let mut words = text.strip_prefix("echo: m ")?.split(' ');
    Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
}

/// Each of `chats` chats (users from `first_user`) holds the replies to its `per_chat`
/// messages "m <chat> <n>" once each and in order; only a reply in `window` (sent by a
/// worker killed before it noted so) may come twice, right after itself.
pub fn each_answered_once_in_order(
    telegram: &TelegramServer,
    first_user: i64,
    chats: i64,
    per_chat: u32,
    window: &BTreeSet<String>,
) {
    for chat in 0..chats {
        let replies: Vec<String> = telegram
            .bot_messages_in(first_user + chat)
            .into_iter()
            .filter_map(|message| message.text)
            .collect();
        let mut seen: Vec<u32> = Vec::new();
        for reply in &replies {
            let (of_chat, n) = number_of(reply).unwrap_or_else(|| panic!("{reply:?}"));
            assert_eq!(
                of_chat,
                first_user + chat,
                "a reply in the wrong chat: {reply}"
            );
            if seen.last() == Some(&n) && window.contains(reply) {
                continue;
            }
            seen.push(n);
        }
        let expected: Vec<u32> = (0..per_chat).collect();
        assert_eq!(
            seen, expected,
            "chat {chat}: each message answered once, in order (window: {window:?})"
        );
    }
}

/// The outbox of `app`'s SQLite file, once every row is delivered: no text holds one of
/// `secrets`, and the rows that carried one read `SECRET_REMOVED`.
pub async fn outbox_keeps_no_secret(app: &super::hearth_app::Hearth, secrets: &[String]) {
    let url = format!("sqlite://{}", app.folder().join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let pending: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM outbox WHERE status = 'pending'")
                .fetch_one(&pool)
                .await
                .unwrap();
        if pending == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{pending} rows undelivered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rows: Vec<(String, i64)> = sqlx::query_as("SELECT text, secret FROM outbox")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    for (text, _) in &rows {
        for secret in secrets {
            assert!(
                !text.contains(secret.as_str()),
                "the outbox keeps {secret}: {text}"
            );
        }
    }
    let scrubbed = rows.iter().filter(|(_, secret)| *secret == 1).count();
    assert!(scrubbed >= secrets.len(), "{rows:?}");
    assert!(
        rows.iter()
            .filter(|(_, secret)| *secret == 1)
            .all(|(text, _)| text == SECRET_REMOVED),
        "{rows:?}"
    );
}
