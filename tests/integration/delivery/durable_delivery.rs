//! A computed reply is delivered, once: the real binary killed with SIGKILL while Telegram
//! answers 502, or while the Matrix homeserver is down, delivers the stored reply after the
//! restart without asking the model again; a Matrix resend of a message already sent is
//! recognised by its transaction id; and 1,000 messages over 50 Telegram chats with a
//! kill at a random moment are each answered once, in order per chat. Stopping hearth waits
//! for the reply being sent.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::support::delivery::{each_answered_once_in_order, undelivered, wait_for};
use crate::support::hearth_app::{Hearth, test_env, write_telegram_family_config};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    homeserver, homeserver_of_its_own, matrix_env, reply_from_hearth, room_with_hearth,
    write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::seed::seeded;
use crate::support::telegram::{TelegramServer, TgError, TgUser};
use crate::support::telegram_family::{
    TOKEN, alice, start_on_telegram, telegram_env, write_telegram_config,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_telegram_refuses_until_hearth_is_killed_is_delivered_once_after_restart() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = write_telegram_config(folder.path(), &llm, &telegram, &[]);
    let env = telegram_env(&[]);
    llm.push(Step::Reply("Here is your answer.".into()));
    telegram.fail_next("sendMessage", 10_000, TgError::bad_gateway());
    let first = Hearth::spawn(&config, &env);
    telegram.push_private_text(&alice(), "a question");
    wait_for("the reply is tried", Duration::from_secs(20), || {
        !telegram.calls_of("sendMessage").is_empty()
    })
    .await;
    first.kill();
    assert_eq!(
        undelivered(folder.path()).await.len(),
        1,
        "the reply is stored, to deliver"
    );

    telegram.clear_faults();
    let _second = Hearth::spawn(&config, &env);
    crate::support::telegram_family::bot_says(&telegram, 1001, "Here is your answer.").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answers = telegram
        .bot_messages_in(1001)
        .into_iter()
        .filter(|message| message.text.as_deref() == Some("Here is your answer."))
        .count();
    assert_eq!(answers, 1);
    assert_eq!(llm.requests().len(), 1, "the model was asked once");
    assert!(undelivered(folder.path()).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_computed_while_the_homeserver_is_down_is_delivered_once_after_a_kill() {
    let Some(mut server) = homeserver_of_its_own("matrix_durable_delivery").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = write_matrix_config(folder.path(), &llm, &server, &[]);
    let env = test_env(&matrix_env());
    let first = Hearth::spawn(&config, &env);
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    // The model answers only once the homeserver is gone.
    llm.push(Step::Delay(
        Duration::from_secs(3),
        Box::new(Step::Reply("Delivered after all.".into())),
    ));
    alice.send_text(&room, "are you there?").await;
    wait_for(
        "the message reaches the model",
        Duration::from_secs(30),
        || llm.request_count() == 1,
    )
    .await;
    server.synapse.stop().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while undelivered(folder.path()).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the reply was never stored to deliver"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.kill();

    server.synapse.start_again().await;
    let _second = Hearth::spawn(&config, &env);
    reply_from_hearth(&alice, &server, |message| {
        message.body == "Delivered after all."
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let copies = alice
        .messages()
        .into_iter()
        .filter(|message| message.body == "Delivered after all.")
        .count();
    assert_eq!(copies, 1);
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrix_message_sent_again_after_a_crash_is_shown_once() {
    let Some(server) = homeserver("matrix_transaction_ids").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = write_matrix_config(folder.path(), &llm, &server, &[]);
    let env = test_env(&matrix_env());
    let first = Hearth::spawn(&config, &env);
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    llm.push(Step::Reply("Only once, please.".into()));
    alice.send_text(&room, "hello").await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "Only once, please."
    })
    .await;
    first.kill();
    // As if hearth had died after the homeserver took the message and before it noted so.
    let url = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let reset =
        sqlx::query("UPDATE outbox SET status = 'pending' WHERE text = 'Only once, please.'")
            .execute(&pool)
            .await
            .unwrap();
    assert_eq!(reset.rows_affected(), 1);
    pool.close().await;

    let _second = Hearth::spawn(&config, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !undelivered(folder.path()).await.is_empty() {
        assert!(Instant::now() < deadline, "the resend never happened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let copies = alice
        .messages()
        .into_iter()
        .filter(|message| message.body == "Only once, please.")
        .count();
    assert_eq!(copies, 1, "the homeserver recognised the resend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_messages_with_a_kill_at_a_random_moment_are_each_answered_once_in_order() {
    const CHATS: i64 = 50;
    const PER_CHAT: u32 = 20;
    let mut random = seeded("a_thousand_messages_with_a_kill_at_a_random_moment");
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Echo);
    llm.set_recording(false);
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    // Every chat a family member of its own.
    let config = write_telegram_family_config(
        folder.path(),
        &llm.base_url(),
        &telegram.api_url(),
        CHATS,
        5000,
    );
    let env = telegram_env(&[("HEARTH__QUEUE__MAX_BACKLOG", "5000")]);

    let first = Hearth::spawn(&config, &env);
    for n in 0..PER_CHAT {
        for chat in 0..CHATS {
            let user = TgUser::new(5000 + chat, &format!("Member {chat}"));
            telegram.push_private_text(&user, &format!("m {} {n}", 5000 + chat));
        }
    }
    let answered = |telegram: &TelegramServer| -> usize {
        (0..CHATS)
            .map(|chat| telegram.bot_messages_in(5000 + chat).len())
            .sum()
    };
    // A random moment while the replies flow.
    let target = random.usize(50..900);
    wait_for("replies to flow", Duration::from_secs(120), || {
        answered(&telegram) >= target
    })
    .await;
    tokio::time::sleep(Duration::from_millis(random.u64(0..50))).await;
    first.kill();
    telegram.settle().await;

    // Telegram cannot recognise a message sent twice: those it accepted and hearth had not
    // noted yet when it died are the documented exception, and may come twice. (Telegram
    // may take a message hearth sent the moment before it died: hence the settling.)
    let sent_before: BTreeSet<String> = (0..CHATS)
        .flat_map(|chat| telegram.bot_messages_in(5000 + chat))
        .filter_map(|message| message.text)
        .collect();
    let window: BTreeSet<String> = undelivered(folder.path())
        .await
        .into_iter()
        .map(|(_, text)| text)
        .filter(|text| sent_before.contains(text))
        .collect();

    let _second = Hearth::spawn(&config, &env);
    let total = (CHATS as usize) * (PER_CHAT as usize);
    wait_for("every message answered", Duration::from_secs(180), || {
        answered(&telegram) >= total
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    each_answered_once_in_order(&telegram, 5000, CHATS, PER_CHAT, &window);
}

#[actix::test]
async fn a_reply_that_cannot_be_delivered_is_given_up_counted_and_logged_never_silently() {
    use crate::support::telegram_family::{bot_says, start_on_telegram};
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    // A refusal that will not pass: given up at once.
    telegram.fail_next("sendMessage", 1, TgError::blocked_by_user());
    llm.push(Step::Reply("You blocked me.".into()));
    telegram.push_private_text(&alice(), "hello");
    let undelivered = || {
        app.app().metrics.value(
            "hearth_outbox_undelivered_total",
            &[("channel", "telegram")],
        )
    };
    wait_for("the reply is given up", Duration::from_secs(20), || {
        undelivered() == 1.0
    })
    .await;

    // A message older than delivery.max_age_hours that still fails is given up too (here:
    // one left by a run two days ago).
    let url = format!("sqlite://{}", app.folder().join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let two_days_ago = hearth::ports::now_ms() - 2 * 24 * 3600 * 1000;
    sqlx::query(
        "INSERT INTO outbox (channel, conversation_id, kind, text, created_at_ms, updated_at_ms) \
         VALUES ('telegram', '1001', '{\"kind\":\"reply\"}', 'From long ago.', ?, ?)",
    )
    .bind(two_days_ago)
    .bind(two_days_ago)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let folder = app.stop().await.folder();
    telegram.fail_next("sendMessage", 1, TgError::too_many_requests(1));
    let app = start_on_telegram(&llm, &telegram, &[], Some(folder), &[]).await;
    let undelivered = || {
        app.app().metrics.value(
            "hearth_outbox_undelivered_total",
            &[("channel", "telegram")],
        )
    };
    wait_for(
        "the old message is given up",
        Duration::from_secs(20),
        || undelivered() == 1.0,
    )
    .await;
    // Newer messages still go.
    llm.push(Step::Reply("Still here.".into()));
    telegram.push_private_text(&alice(), "hello again");
    bot_says(&telegram, 1001, "Still here.").await;
    assert!(
        !telegram
            .bot_messages_in(1001)
            .iter()
            .any(|message| message.text.as_deref() == Some("From long ago.")),
        "the message older than the limit was not sent"
    );
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains("hearth_outbox_undelivered_total{channel=\"telegram\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

#[actix::test]
async fn stopping_waits_for_the_reply_being_sent_and_notes_it() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let held = telegram.hold_next("sendMessage");
    llm.push(Step::Reply("Sent before the stop.".into()));
    telegram.push_private_text(&alice(), "hello");
    telegram
        .wait_for_call("sendMessage", |_| true, Duration::from_secs(10))
        .await
        .expect("the reply is being sent");
    // Telegram takes the reply only once hearth is stopping.
    let readiness = app.app().readiness.clone();
    let release_when_stopping = async move {
        wait_for("the channel stops", Duration::from_secs(10), || {
            readiness
                .snapshot()
                .get("telegram")
                .is_some_and(|state| state.detail == "stopped")
        })
        .await;
        held.release();
    };
    let stopping = async {
        let folder = app.stop().await.folder();
        // Looked at the moment the stop returns: the reply is there.
        let sent = telegram
            .bot_messages_in(1001)
            .iter()
            .any(|message| message.text.as_deref() == Some("Sent before the stop."));
        (folder, sent)
    };
    let ((folder, sent), ()) = futures::join!(stopping, release_when_stopping);
    assert!(
        sent,
        "the stop returned while the reply was still being sent"
    );
    assert_eq!(
        undelivered(folder.path()).await,
        Vec::new(),
        "noted as delivered"
    );
}
