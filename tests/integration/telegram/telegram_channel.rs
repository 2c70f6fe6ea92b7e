//! The Telegram channel end to end: hearth's real teloxide client long-polls the fake
//! Bot API server on loopback. Private and group chats, strangers, slash commands,
//! `/help`, replies threaded and split, HTML refused → plain text, an answer that renders
//! to nothing sent as written, flood control,
//! context of replies, photos, a stalled poll, and a restart without loss or repeat.

use std::time::{Duration, Instant};

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{TelegramServer, TgChat, TgError, TgUser};
use crate::support::telegram_family::{
    TOKEN, alice, bob, bot_says, secure_profile, start_on_telegram,
};

const WAIT: Duration = Duration::from_secs(10);

fn stranger() -> TgUser {
    TgUser::new(4242, "Mallory")
}

#[actix::test]
async fn a_private_message_is_answered_threaded_with_typing_shown() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    llm.push(Step::Delay(
        Duration::from_millis(300),
        Box::new(Step::Reply("Hello **Alice**! 2 < 3 & 4 > 1".into())),
    ));
    let pushed = telegram.push_private_text(&alice(), "hi there");
    let reply = bot_says(&telegram, 1001, "Hello Alice!").await;
    let reply = telegram.message(1001, reply).unwrap();
    assert_eq!(reply.text.as_deref(), Some("Hello Alice! 2 < 3 & 4 > 1"));
    assert_eq!(reply.parse_mode.as_deref(), Some("HTML"));
    assert!(reply.sent_text.unwrap().contains("<b>Alice</b>"));
    assert_eq!(reply.reply_to, Some(pushed.message_id));
    assert!(
        telegram
            .calls_of("sendChatAction")
            .iter()
            .any(|call| call.params["action"] == "typing" && call.int("chat_id") == Some(1001)),
        "no typing shown"
    );
    let asked = &llm.requests()[0].body["messages"];
    assert!(asked.to_string().contains("hi there"), "{asked}");
    app.stop().await;
}

#[actix::test]
async fn strangers_get_no_answer_and_in_a_group_only_family_is_heard() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let stranger_pushed = telegram.push_private_text(&stranger(), "let me in");
    let group = TgChat::group(-5001, "Family");
    telegram.push_group_text(&group, &stranger(), "me too", None);
    llm.push(Step::Reply("Dinner is at seven.".into()));
    let asked = telegram.push_group_text(&group, &bob(), "when is dinner?", None);
    let reply = bot_says(&telegram, -5001, "Dinner is at seven.").await;
    assert_eq!(
        telegram.message(-5001, reply).unwrap().reply_to,
        Some(asked.message_id)
    );
    // Every update is confirmed, but nothing reached the model or the strangers.
    let deadline = Instant::now() + WAIT;
    while !telegram.is_confirmed(stranger_pushed.update_id) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(telegram.is_confirmed(stranger_pushed.update_id));
    assert_eq!(llm.requests().len(), 1);
    assert!(telegram.bot_messages_in(4242).is_empty());
    assert_eq!(telegram.bot_messages_in(-5001).len(), 1);
    app.stop().await;
}

#[actix::test]
async fn slash_commands_reach_their_profile_and_help_lists_them() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    // The menu was registered at start-up, with the channel's own commands.
    let menu: Vec<String> = telegram
        .my_commands()
        .into_iter()
        .map(|(command, _)| command)
        .collect();
    assert_eq!(menu, ["focus", "secure", "reminders", "cancel", "help"]);

    let group = TgChat::supergroup(-100777, "Family");
    llm.push(Step::Reply("Focused answer.".into()));
    telegram.push_command(&group, &alice(), "focus", "plan the week");
    bot_says(&telegram, -100777, "Focused answer.").await;
    let request = &llm.requests()[0].body;
    assert!(
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are focused.")
    );
    assert_eq!(
        request["messages"].as_array().unwrap().last().unwrap()["content"],
        "plan the week"
    );

    // A command for another bot in the group is not for hearth.
    telegram.push_group_text(&group, &alice(), "/focus@other_bot hello", None);
    telegram.push_command(&group, &alice(), "help", "");
    let help = bot_says(&telegram, -100777, "/cancel").await;
    let help = telegram.message(-100777, help).unwrap().text.unwrap();
    assert!(
        help.contains("/secure: Changes what hearth knows about you."),
        "{help}"
    );
    assert!(help.contains("/focus"), "{help}");
    assert_eq!(
        llm.requests().len(),
        1,
        "help and the other bot's command reach no model"
    );
    app.stop().await;
}

#[actix::test]
async fn a_long_reply_is_split_and_refused_html_is_resent_as_plain_text() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let paragraph = "A sentence about the family calendar that goes on for a while. ".repeat(20);
    let long = [paragraph.trim_end(); 9].join("\n\n");
    llm.push(Step::Reply(long.clone()));
    telegram.push_private_text(&alice(), "tell me everything");
    let deadline = Instant::now() + WAIT;
    while telegram.bot_messages_in(1001).len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let parts = telegram.bot_messages_in(1001);
    assert_eq!(parts.len(), 3, "{} characters in 3 parts", long.len());
    assert!(
        parts
            .iter()
            .all(|part| part.text.as_ref().unwrap().chars().count() <= 4096)
    );
    let joined: String = parts
        .iter()
        .map(|part| part.text.clone().unwrap())
        .collect();
    assert_eq!(
        joined.split_whitespace().collect::<Vec<_>>(),
        long.split_whitespace().collect::<Vec<_>>()
    );

    telegram.fail_next(
        "sendMessage",
        1,
        TgError::cant_parse_entities("Unsupported start tag \"x\" at byte offset 0"),
    );
    llm.push(Step::Reply("Use **bold** words".into()));
    telegram.push_private_text(&alice(), "again");
    let plain = bot_says(&telegram, 1001, "Use bold words").await;
    let plain = telegram.message(1001, plain).unwrap();
    assert_eq!(plain.parse_mode, None);
    assert_eq!(plain.sent_text.as_deref(), Some("Use bold words"));
    app.stop().await;
}

#[actix::test]
async fn an_answer_that_renders_to_nothing_is_sent_as_written() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    // Only a link reference definition: rendered, nothing would be left to show.
    llm.push(Step::Reply("[docs]: https://example.org/docs".into()));
    telegram.push_private_text(&alice(), "where are the docs?");
    bot_says(&telegram, 1001, "[docs]: https://example.org/docs").await;
    app.stop().await;
}

#[actix::test]
async fn flood_control_is_waited_out_and_the_reply_still_arrives() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    telegram.fail_next("sendMessage", 1, TgError::too_many_requests(1));
    llm.push(Step::Reply("Patience pays.".into()));
    let started = Instant::now();
    telegram.push_private_text(&alice(), "hello");
    bot_says(&telegram, 1001, "Patience pays.").await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    let sends = telegram.calls_of("sendMessage");
    assert_eq!(sends.len(), 2, "one refused with 429, one delivered");
    assert_eq!(sends[0].response["error_code"], 429);
    app.stop().await;
}

#[actix::test]
async fn the_replied_to_message_and_a_photo_reach_the_model() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let chat = TgChat::private(&alice());
    llm.push(Step::Reply("It is on Tuesday.".into()));
    telegram.push_private_text(&alice(), "when is the dentist?");
    let answer = bot_says(&telegram, 1001, "Tuesday").await;
    llm.push(Step::Reply("Noted.".into()));
    telegram.push_reply(&chat, &alice(), answer, "move it to Friday");
    bot_says(&telegram, 1001, "Noted.").await;
    let seen = llm.requests()[1].body["messages"].to_string();
    assert!(
        seen.contains("(Replying to hearth (you): “It is on Tuesday.”)\\nmove it to Friday"),
        "{seen}"
    );

    llm.push(Step::Reply("A nice picture.".into()));
    let photo = telegram.push_photo(&chat, &alice(), &[7u8; 1000], Some("look at this"));
    bot_says(&telegram, 1001, "A nice picture.").await;
    let seen = llm.requests()[2].body["messages"].to_string();
    assert!(
        seen.contains("look at this\\n(Attached: an image"),
        "{seen}"
    );
    let inbox_folder = app.folder().join("attachments");
    let stored: Vec<_> = walk(&inbox_folder);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(std::fs::read(&stored[0]).unwrap().len(), 1000);
    assert!(!photo.file_ids.is_empty());

    // Telegram sends the same message again (as after a lost offset): it was accepted
    // already, so nothing is downloaded, asked or answered again.
    let downloads = telegram.calls_of("getFile").len();
    let again = telegram.redeliver(photo.update_id);
    let deadline = Instant::now() + WAIT;
    while !telegram.is_confirmed(again) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        telegram.is_confirmed(again),
        "the redelivered update was handled"
    );
    assert_eq!(telegram.calls_of("getFile").len(), downloads);
    assert_eq!(walk(&inbox_folder).len(), 1);
    assert_eq!(llm.requests().len(), 3);

    // Over the size limit (4096 bytes in these tests): not downloaded, and the model is told.
    llm.push(Step::Reply("Too big.".into()));
    telegram.push_document(
        &chat,
        &alice(),
        "scan.pdf",
        "application/pdf",
        &[1u8; 5000],
        None,
    );
    bot_says(&telegram, 1001, "Too big.").await;
    let seen = llm.requests()[3].body["messages"].to_string();
    assert!(seen.contains("\\\"scan.pdf\\\""), "{seen}");
    assert!(
        seen.contains("It could not be kept: it is larger than the 4 KB"),
        "{seen}"
    );
    assert_eq!(walk(&inbox_folder).len(), 1);
    app.stop().await;
}

fn walk(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[actix::test]
async fn a_stalled_poll_is_abandoned_and_polling_goes_on() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    telegram.stall_get_updates(Duration::from_secs(60));
    // Let the stalled poll begin, then speak: only a new poll can fetch this.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    llm.push(Step::Reply("Still here.".into()));
    telegram.push_private_text(&alice(), "are you there?");
    bot_says(&telegram, 1001, "Still here.").await;
    let (_, metrics) = app.get("/metrics").await;
    let restarts = metrics
        .lines()
        .find(|line| line.starts_with("hearth_telegram_poll_restarts_total "))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse::<f64>().ok());
    assert!(restarts >= Some(1.0), "{metrics}");
    app.stop().await;
}

#[actix::test]
async fn a_restart_neither_loses_nor_repeats_a_message() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    llm.push(Step::Reply("First answer.".into()));
    telegram.push_private_text(&alice(), "first");
    bot_says(&telegram, 1001, "First answer.").await;
    let folder = app.stop().await.folder();

    // Written while hearth is down.
    telegram.push_private_text(&alice(), "second");
    llm.push(Step::Reply("Second answer.".into()));
    let app = start_on_telegram(&llm, &telegram, &[], Some(folder), &[]).await;
    bot_says(&telegram, 1001, "Second answer.").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let texts: Vec<String> = telegram
        .bot_messages_in(1001)
        .into_iter()
        .filter_map(|message| message.text)
        .collect();
    assert_eq!(texts, ["First answer.", "Second answer."]);
    assert_eq!(llm.requests().len(), 2);
    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert!(ready.contains("telegram"), "{ready}");
    app.stop().await;
}
