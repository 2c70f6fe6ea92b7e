//! Several real hearth processes on one PostgreSQL database, one Telegram bot (the fake Bot
//! API): 1,000 messages over 50 chats while the worker polling Telegram is killed with
//! kill -9. One worker polls at a time (Telegram answers no poll with "terminated by other
//! getUpdates request" before the kill), another takes over within the lease time, and
//! every message is answered once, in order per chat, whichever worker ran its turn.

use std::collections::BTreeSet;
use std::time::Duration;

use sqlx::Row;

use crate::support::delivery::{each_answered_once_in_order, wait_for};
use crate::support::hearth_app::{Hearth, telegram_family_config};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::postgres::PostgresServer;
use crate::support::telegram::{TelegramServer, TgUser};
use crate::support::telegram_family::{TOKEN, telegram_env};
use crate::support::workers::telegram_leader_pid;

const CHATS: i64 = 50;
const PER_CHAT: u32 = 20;
const FIRST_USER: i64 = 5000;

/// The texts the outbox of `database_url` still holds undelivered.
async fn undelivered(database_url: &str) -> Vec<String> {
    let pool = sqlx::PgPool::connect(database_url).await.unwrap();
    let rows = sqlx::query("SELECT text FROM outbox WHERE status = 'pending' ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.iter().map(|row| row.get("text")).collect()
}

async fn telegram_over_workers_with_the_poller_killed(count: usize) {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Echo);
    llm.set_recording(false);
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = telegram_family_config(
        folder.path(),
        &llm.base_url(),
        &telegram.api_url(),
        CHATS,
        FIRST_USER,
    )
    .database(&database_url)
    .write(folder.path());
    let env = telegram_env(&[("HEARTH__QUEUE__MAX_BACKLOG", "5000")]);
    let mut processes: Vec<Option<Hearth>> = (0..count)
        .map(|_| Some(Hearth::spawn(&config, &env)))
        .collect();

    for n in 0..PER_CHAT {
        for chat in 0..CHATS {
            let user = TgUser::new(FIRST_USER + chat, &format!("Member {chat}"));
            telegram.push_private_text(&user, &format!("m {} {n}", FIRST_USER + chat));
        }
    }
    let answered = |telegram: &TelegramServer| -> usize {
        (0..CHATS)
            .map(|chat| telegram.bot_messages_in(FIRST_USER + chat).len())
            .sum()
    };
    let total = (CHATS as usize) * (PER_CHAT as usize);
    wait_for("a third answered", Duration::from_secs(120), || {
        answered(&telegram) >= total / 3
    })
    .await;
    assert_eq!(telegram.superseded_polls(), 0, "one poller at a time");

    // The poller is killed outright while the replies flow.
    let any = processes.iter().flatten().next().unwrap();
    let leader_pid = telegram_leader_pid(any, &env).await;
    let leader = processes
        .iter()
        .position(|process| process.as_ref().is_some_and(|p| p.pid() == leader_pid))
        .expect("the leader is one of the workers");
    processes[leader].take().unwrap().kill();
    telegram.settle().await;
    // Telegram cannot recognise a message sent twice: those it accepted and the killed
    // worker had not noted yet may come twice (the documented exception).
    let sent_before: BTreeSet<String> = (0..CHATS)
        .flat_map(|chat| telegram.bot_messages_in(FIRST_USER + chat))
        .filter_map(|message| message.text)
        .collect();
    let window: BTreeSet<String> = undelivered(&database_url)
        .await
        .into_iter()
        .filter(|text| sent_before.contains(text))
        .collect();
    let polls_at_kill = telegram.superseded_polls();

    wait_for("every message answered", Duration::from_secs(180), || {
        answered(&telegram) >= total
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The killed worker's last poll may be cut short by its successor's; no other.
    assert!(
        telegram.superseded_polls() <= polls_at_kill + 1,
        "one poller at a time after the kill: {} superseded",
        telegram.superseded_polls()
    );
    let survivor = processes.iter().flatten().next().unwrap();
    let new_leader = telegram_leader_pid(survivor, &env).await;
    assert_ne!(new_leader, leader_pid, "another worker polls");
    each_answered_once_in_order(&telegram, FIRST_USER, CHATS, PER_CHAT, &window);
    assert!(undelivered(&database_url).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_poll_telegram_one_at_a_time_and_answer_each_message_once_through_a_kill() {
    telegram_over_workers_with_the_poller_killed(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_workers_poll_telegram_one_at_a_time_and_answer_each_message_once_through_a_kill() {
    telegram_over_workers_with_the_poller_killed(3).await;
}
