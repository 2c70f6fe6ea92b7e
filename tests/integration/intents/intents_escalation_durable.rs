//! An escalation's prompts are stored with it: the child's notice and each parent's prompt
//! are outbox rows of the transaction that suspends the request, so hearth stopping right
//! after the suspension never leaves a child told "I've asked a parent" while no parent is
//! asked. Once with the outbox's later writes cut off in process, once with the real binary
//! killed while Telegram takes nothing for the parents.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use hearth::ports::{Outbox, OutboxEntry, OutgoingMessage, StorageError};

use crate::support::delivery::undelivered;
use crate::support::hearth_app::{Hearth, test_env};
use crate::support::intents_profile::{WAIT, escalation_family, nth_prompt, refund};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::telegram::{TelegramServer, TgError, TgUser};
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says, press};

/// The escalation config for `folder` with carol, a second parent, on Telegram (her
/// private chat is 1003), written.
fn with_carol(folder: &Path, llm: &ScriptedLlmServer, telegram: &TelegramServer) -> PathBuf {
    escalation_family(folder, llm, telegram)
        .named("carol", "Carol")
        .on_telegram("carol", 1003)
        .write(folder)
}

fn carol() -> TgUser {
    TgUser::new(1003, "Carol")
}

/// The real outbox, except that a write of its own (`enqueue`, `enqueue_once`) never
/// finishes: as if hearth were stopped after everything written in another transaction.
struct OwnWritesNeverFinish(Arc<dyn Outbox>);

#[async_trait]
impl Outbox for OwnWritesNeverFinish {
    async fn enqueue(&self, _message: &OutgoingMessage) -> Result<i64, StorageError> {
        std::future::pending().await
    }

    async fn enqueue_once(
        &self,
        _once_key: &str,
        _message: &OutgoingMessage,
    ) -> Result<Option<i64>, StorageError> {
        std::future::pending().await
    }

    async fn enqueue_secret(&self, _message: &OutgoingMessage) -> Result<i64, StorageError> {
        std::future::pending().await
    }

    async fn undelivered(&self, channel: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        self.0.undelivered(channel).await
    }

    async fn part_delivered(&self, id: i64, parts: u32) -> Result<(), StorageError> {
        self.0.part_delivered(id, parts).await
    }

    async fn delivered(&self, id: i64, platform_id: Option<&str>) -> Result<(), StorageError> {
        self.0.delivered(id, platform_id).await
    }

    async fn attempt_failed(&self, id: i64, error: &str) -> Result<u32, StorageError> {
        self.0.attempt_failed(id, error).await
    }

    async fn abandon(&self, id: i64, error: &str) -> Result<(), StorageError> {
        self.0.abandon(id, error).await
    }
}

/// The parents say hello first: Telegram lets a bot write only to those who wrote to it.
async fn parents_say_hello(telegram: &TelegramServer) {
    for (parent, chat) in [(alice(), 1001), (carol(), 1003)] {
        telegram.push_private_text(&parent, "hello");
        bot_says(telegram, chat, "echo: hello").await;
    }
}

/// Wait (up to `limit`) until `done` says so.
async fn wait_for<F, Done>(what: &str, limit: std::time::Duration, done: F)
where
    F: Fn() -> Done,
    Done: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + limit;
    while !done().await {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The escalation prompts the bot has in `chat`.
fn prompts_in(telegram: &TelegramServer, chat: i64) -> usize {
    telegram
        .bot_messages_in(chat)
        .iter()
        .filter(|message| {
            message
                .text
                .as_deref()
                .is_some_and(|text| text.contains("asks a parent to approve"))
        })
        .count()
}

#[actix::test]
async fn the_parents_prompts_need_no_write_after_the_suspension() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let path = with_carol(folder.path(), &llm, &telegram);
    let database = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let mut stores = hearth::storage::open(&database, 4).await.unwrap();
    stores.outbox = Arc::new(OwnWritesNeverFinish(stores.outbox.clone()));
    let app =
        Hearth::start_on_stores(folder, &path, &[("TEST_TELEGRAM_TOKEN", TOKEN)], stores).await;
    parents_say_hello(&telegram).await;

    llm.push(refund("25"));
    telegram.push_private_text(&bob(), "/orders refund 25 on O-12345");
    bot_says(&telegram, 1002, "I've asked a parent to approve this").await;
    // Stored with the suspension, both parents' prompts go out though no later write does.
    let alices = nth_prompt(&telegram, 1001, 0).await;
    nth_prompt(&telegram, 1003, 0).await;
    assert_eq!(alices.button_data().len(), 2, "{alices:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_right_after_the_child_is_told_hearth_asks_each_parent_once_after_restart() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = with_carol(folder.path(), &llm, &telegram);
    let env = test_env(&[("TEST_TELEGRAM_TOKEN", TOKEN)]);
    let first = Hearth::spawn(&config, &env);
    parents_say_hello(&telegram).await;

    // Telegram takes nothing for the parents' chats: when hearth dies, their prompts are
    // not out, whatever hearth had stored.
    for chat in [1001, 1003] {
        telegram.fail_in_chat(chat, TgError::bad_gateway());
    }
    llm.push(refund("25"));
    telegram.push_private_text(&bob(), "/orders refund 25 on O-12345");
    bot_says(&telegram, 1002, "I've asked a parent to approve this").await;
    // Killed once the child's notice is noted delivered (Telegram cannot recognise a resend
    // of it), the parents' prompts stored and waiting.
    wait_for("only the parents' prompts wait", WAIT, || async {
        let waiting = undelivered(folder.path()).await;
        waiting.len() == 2
            && waiting
                .iter()
                .all(|(_, text)| text.contains("bob asks a parent to approve this"))
    })
    .await;
    first.kill();
    telegram.settle().await;
    assert_eq!(prompts_in(&telegram, 1001), 0);
    assert_eq!(prompts_in(&telegram, 1003), 0);

    telegram.clear_faults();
    let second = Hearth::spawn(&config, &env);
    let alices = nth_prompt(&telegram, 1001, 0).await;
    nth_prompt(&telegram, 1003, 0).await;
    telegram.settle().await;
    // Each parent is asked exactly once; the child was told once.
    assert_eq!(prompts_in(&telegram, 1001), 1);
    assert_eq!(prompts_in(&telegram, 1003), 1);
    let told = telegram
        .bot_messages_in(1002)
        .iter()
        .filter(|message| {
            message
                .text
                .as_deref()
                .is_some_and(|text| text.starts_with("I've asked a parent"))
        })
        .count();
    assert_eq!(told, 1);
    // The restored prompt answers: the child hears the outcome.
    assert_eq!(press(&telegram, &alice(), &alices, 0).await.0, "Confirmed.");
    bot_says(&telegram, 1002, "Refund of 25 for O-12345 noted (shipped).").await;
    second.kill();
}
