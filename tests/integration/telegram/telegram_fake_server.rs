//! The fake Telegram Bot API server against the real teloxide client and its own polling loop:
//! proof that the fake speaks the Bot API closely enough for the Telegram channel's tests.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use teloxide::net::Download;
use teloxide::prelude::*;
use teloxide::types::{
    BotCommand, CallbackQueryId, FileId, InlineKeyboardButton, InlineKeyboardMarkup, InputFile,
    MessageEntityKind, MessageId, ParseMode, ReplyParameters, Seconds, ThreadId, UpdateKind,
};
use teloxide::{ApiError, RequestError};

use crate::support::telegram::*;

const TOKEN: &str = "123456:TEST-token";
const WAIT: Duration = Duration::from_secs(5);

fn bot(server: &TelegramServer) -> Bot {
    let url = reqwest::Url::parse(&server.api_url()).expect("api url");
    Bot::new(TOKEN).set_api_url(url)
}

fn alice() -> TgUser {
    TgUser::new(1001, "Alice").username("alice")
}

/// The messages of a batch of updates, failing on any other kind.
fn messages(updates: Vec<Update>) -> Vec<Message> {
    updates
        .into_iter()
        .map(|update| match update.kind {
            UpdateKind::Message(message) => message,
            other => panic!("expected a message update, got {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn get_me_reports_the_bot_from_its_token() {
    let server = TelegramServer::start(TOKEN);
    let me = bot(&server).get_me().await.expect("getMe");
    assert_eq!(me.id, UserId(123_456));
    assert!(me.is_bot);
    assert_eq!(me.username(), BOT_USERNAME);
    assert_eq!(server.calls_of("getMe").len(), 1);

    let stranger =
        Bot::new("999:wrong").set_api_url(reqwest::Url::parse(&server.api_url()).unwrap());
    let refused = stranger.get_me().await.expect_err("wrong token");
    assert!(
        matches!(refused, RequestError::Api(ApiError::InvalidToken)),
        "{refused:?}"
    );
}

#[tokio::test]
async fn long_poll_returns_a_pushed_update_promptly_then_honours_offset() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    let started = Instant::now();
    let poll = tokio::spawn({
        let bot = bot.clone();
        async move { bot.get_updates().timeout(10).await }
    });
    server
        .wait_for_call("getUpdates", |_| true, WAIT)
        .await
        .expect("the poll arrives");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pushed = server.push_private_text(&alice(), "hello");
    let updates = poll.await.unwrap().expect("getUpdates");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "answered on push, not on timeout"
    );
    assert_eq!(updates.len(), 1);
    assert_eq!(i64::from(updates[0].id.0), pushed.update_id);
    let message = &messages(updates)[0];
    assert_eq!(message.text(), Some("hello"));
    assert_eq!(message.chat.id, ChatId(1001));
    assert_eq!(message.id, MessageId(pushed.message_id as i32));

    // Unconfirmed, the update is delivered again; an offset past it confirms it for good.
    let again = bot.get_updates().timeout(0).await.unwrap();
    assert_eq!(again.len(), 1);
    assert!(!server.is_confirmed(pushed.update_id));
    let next = again[0].id.as_offset();
    let after = bot.get_updates().offset(next).timeout(0).await.unwrap();
    assert!(after.is_empty());
    assert!(server.is_confirmed(pushed.update_id));
    assert!(bot.get_updates().timeout(0).await.unwrap().is_empty());

    // With nothing pushed, a long poll answers `[]` once its timeout is over.
    let started = Instant::now();
    assert!(
        bot.get_updates()
            .offset(next)
            .timeout(1)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(server.get_updates_count(), 5);
}

#[tokio::test]
async fn a_newer_poll_terminates_the_waiting_one_and_a_stall_hangs() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    let first = tokio::spawn({
        let bot = bot.clone();
        async move { bot.get_updates().timeout(10).await }
    });
    server
        .wait_for_call("getUpdates", |_| true, WAIT)
        .await
        .unwrap();
    assert!(bot.get_updates().timeout(0).await.unwrap().is_empty());
    let superseded = first.await.unwrap().expect_err("409");
    assert!(
        matches!(
            superseded,
            RequestError::Api(ApiError::TerminatedByOtherGetUpdates)
        ),
        "{superseded:?}"
    );

    server.stall_get_updates(Duration::from_secs(2));
    let pushed = server.push_private_text(&alice(), "are you there?");
    let stalled = tokio::time::timeout(Duration::from_millis(500), bot.get_updates().send()).await;
    assert!(stalled.is_err(), "the stalled poll does not answer");
    let updates = bot
        .get_updates()
        .timeout(0)
        .await
        .expect("a fresh poll works");
    assert_eq!(i64::from(updates[0].id.0), pushed.update_id);
    assert_eq!(server.get_updates_count(), 4);
}

#[tokio::test]
async fn html_is_checked_and_parsed_as_telegram_does() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    server.push_private_text(&alice(), "hi");
    let html = "<b>Tom &amp; Jerry</b> <a href=\"example.com\">site</a> \
                <pre><code class=\"language-rust\">fn</code></pre>";
    let sent = bot
        .send_message(ChatId(1001), html)
        .parse_mode(ParseMode::Html)
        .await
        .expect("valid HTML");
    assert_eq!(sent.text(), Some("Tom & Jerry site fn"));
    let kinds: Vec<_> = sent
        .entities()
        .unwrap()
        .iter()
        .map(|entity| (entity.kind.clone(), entity.offset, entity.length))
        .collect();
    let url = reqwest::Url::parse("http://example.com/").unwrap();
    assert_eq!(
        kinds,
        vec![
            (MessageEntityKind::Bold, 0, 11),
            (MessageEntityKind::TextLink { url }, 12, 4),
            (
                MessageEntityKind::Pre {
                    language: Some("rust".into())
                },
                17,
                2
            ),
        ]
    );
    let stored = server.bot_messages_in(1001);
    assert_eq!(stored[0].sent_text.as_deref(), Some(html));
    // Nested tags over the same text: outer entity first, `<pre><code>` without language kept.
    let nested = bot
        .send_message(
            ChatId(1001),
            "<pre><code>x</code></pre><a>telegram.org </a>",
        )
        .parse_mode(ParseMode::Html)
        .await
        .unwrap();
    let kinds: Vec<_> = nested
        .entities()
        .unwrap()
        .iter()
        .map(|e| e.kind.clone())
        .collect();
    assert_eq!(
        kinds,
        [
            MessageEntityKind::Pre { language: None },
            MessageEntityKind::Code
        ],
        "a link text with a space is no URL"
    );

    // Descriptions and byte offsets as in TDLib's own tests.
    for (text, detail) in [
        (
            "<b>bold",
            "Can't find end tag corresponding to start tag \"b\"",
        ),
        ("a < b", "Unsupported start tag \"\" at byte offset 2"),
        (
            "🏟 🏟&lt;<abac>",
            "Unsupported start tag \"abac\" at byte offset 13",
        ),
        (
            "<i>a</em   >",
            "Unmatched end tag at byte offset 4, expected \"</i>\", found \"</em>\"",
        ),
        (
            "<span>x</span>",
            "Tag \"span\" must have class \"tg-spoiler\" at byte offset 0",
        ),
        (
            "Tom & Jerry",
            "Character \"&\" at byte offset 4 must be escaped as \"&amp;\"",
        ),
        ("🏟 🏟&lt;<i>a</i   ", "Unclosed end tag at byte offset 17"),
        ("🏟 🏟&lt;<b></b></", "Unexpected end tag at byte offset 20"),
        (
            "🏟 🏟&lt;<i    aba  =  190azAz-.,",
            "Unexpected end of name token at byte offset 27",
        ),
    ] {
        let refused = bot
            .send_message(ChatId(1001), text)
            .parse_mode(ParseMode::Html)
            .await
            .expect_err(text);
        let expected = format!("Bad Request: can't parse entities: {detail}");
        assert!(
            matches!(&refused, RequestError::Api(ApiError::CantParseEntities(got)) if *got == expected),
            "{text}: {refused:?}"
        );
    }
    server.set_strict_ampersand(false);
    let lenient = bot
        .send_message(ChatId(1001), "Tom & Jerry")
        .parse_mode(ParseMode::Html);
    assert_eq!(lenient.await.unwrap().text(), Some("Tom & Jerry"));

    // Length counts UTF-16 units of the parsed text: 2049 emoji are 4098 units.
    let long = bot.send_message(ChatId(1001), "😀".repeat(2049)).await;
    assert!(
        matches!(long, Err(RequestError::Api(ApiError::MessageIsTooLong))),
        "{long:?}"
    );
    assert!(
        bot.send_message(ChatId(1001), "a".repeat(4096))
            .await
            .is_ok()
    );
    let empty = bot
        .send_message(ChatId(1001), "<b></b> ")
        .parse_mode(ParseMode::Html)
        .await;
    assert!(
        matches!(empty, Err(RequestError::Api(ApiError::MessageTextIsEmpty))),
        "{empty:?}"
    );
    let nowhere = bot.send_message(ChatId(555), "hi").await;
    assert!(
        matches!(nowhere, Err(RequestError::Api(ApiError::ChatNotFound))),
        "{nowhere:?}"
    );
}

#[tokio::test]
async fn injected_failures_surface_as_teloxide_errors() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    server.push_private_text(&alice(), "hi");
    server.fail_next("sendMessage", 1, TgError::too_many_requests(3));
    server.fail_next("sendmessage", 1, TgError::cant_parse_entities("injected"));
    let limited = bot
        .send_message(ChatId(1001), "one")
        .await
        .expect_err("429");
    assert!(
        matches!(limited, RequestError::RetryAfter(after) if after == Seconds::from_seconds(3)),
        "{limited:?}"
    );
    let refused = bot
        .send_message(ChatId(1001), "two")
        .await
        .expect_err("400");
    assert!(
        matches!(refused, RequestError::Api(ApiError::CantParseEntities(_))),
        "{refused:?}"
    );
    bot.send_message(ChatId(1001), "three")
        .await
        .expect("faults used up");
    let calls = server.calls_of("sendMessage");
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].response["parameters"], json!({"retry_after": 3}));
    assert_eq!(calls[0].response["error_code"], json!(429));
    assert_eq!(calls[2].ok(), Some(true));
    let texts: Vec<_> = server
        .bot_messages_in(1001)
        .into_iter()
        .filter_map(|m| m.text)
        .collect();
    assert_eq!(texts, vec!["three"]);
}

#[tokio::test]
async fn inline_button_press_arrives_as_callback_query_and_edits_apply() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    let asked = server.push_private_text(&alice(), "delete my notes");
    let keyboard = InlineKeyboardMarkup::new(vec![vec![
        InlineKeyboardButton::callback("Yes", "confirm:1"),
        InlineKeyboardButton::callback("No", "deny:1"),
    ]]);
    let prompt = bot
        .send_message(ChatId(1001), "Sure?")
        .reply_parameters(ReplyParameters::new(MessageId(asked.message_id as i32)))
        .reply_markup(keyboard)
        .await
        .unwrap();
    assert_eq!(
        prompt.from.as_ref().map(|user| user.id),
        Some(UserId(123_456))
    );
    assert_eq!(
        prompt.reply_to_message().and_then(|m| m.text()),
        Some("delete my notes")
    );
    assert_eq!(prompt.id.0 as i64, asked.message_id + 1);
    assert!(prompt.reply_markup().is_some());

    let pressed = server.push_callback(&alice(), 1001, prompt.id.0 as i64, "confirm:1");
    let updates = bot
        .get_updates()
        .offset(asked.update_id as i32 + 1)
        .await
        .unwrap();
    let [update] = updates.as_slice() else {
        panic!("{updates:?}")
    };
    let UpdateKind::CallbackQuery(query) = &update.kind else {
        panic!("{update:?}")
    };
    assert_eq!(query.data.as_deref(), Some("confirm:1"));
    assert_eq!(query.from.id, UserId(1001));
    assert_eq!(query.regular_message().map(|m| m.id), Some(prompt.id));
    assert_eq!(Some(&query.id.0), pressed.callback_query_id.as_ref());
    bot.answer_callback_query(query.id.clone())
        .text("Done")
        .await
        .unwrap();
    assert!(server.callback_answered(&query.id.0));
    // Telegram writes "query ID"; teloxide's `InvalidQueryId` expects "query id", so the error
    // arrives as `Unknown`.
    let stale = "Bad Request: query is too old and response timeout expired or query ID is invalid";
    let twice = bot.answer_callback_query(query.id.clone()).await;
    assert!(
        matches!(&twice, Err(RequestError::Api(ApiError::Unknown(text))) if text == stale),
        "a query is answered once: {twice:?}"
    );
    let bogus = bot
        .answer_callback_query(CallbackQueryId("nope".into()))
        .await;
    assert!(bogus.is_err());

    // Editing the text without reply_markup drops the keyboard, as on Telegram.
    let edited = bot
        .edit_message_text(ChatId(1001), prompt.id, "<i>Deleted.</i>")
        .parse_mode(ParseMode::Html)
        .await
        .unwrap();
    assert_eq!(edited.text(), Some("Deleted."));
    assert!(edited.edit_date().is_some());
    let stored = server.message(1001, prompt.id.0 as i64).unwrap();
    assert_eq!(
        (stored.text.as_deref(), stored.edit_count),
        (Some("Deleted."), 1)
    );
    assert_eq!(stored.reply_markup, None);
    let same = bot
        .edit_message_text(ChatId(1001), prompt.id, "<i>Deleted.</i>")
        .parse_mode(ParseMode::Html)
        .await;
    assert!(
        matches!(same, Err(RequestError::Api(ApiError::MessageNotModified))),
        "{same:?}"
    );
    let unknown = bot
        .edit_message_text(ChatId(1001), MessageId(99), "x")
        .await;
    assert!(matches!(
        unknown,
        Err(RequestError::Api(ApiError::MessageToEditNotFound))
    ));
    let markup =
        InlineKeyboardMarkup::new(vec![vec![InlineKeyboardButton::callback("Undo", "undo")]]);
    let with_markup = bot
        .edit_message_reply_markup(ChatId(1001), prompt.id)
        .reply_markup(markup)
        .await
        .unwrap();
    assert!(with_markup.reply_markup().is_some());
    assert_eq!(
        server
            .message(1001, prompt.id.0 as i64)
            .unwrap()
            .button_data(),
        ["undo"]
    );
    bot.delete_message(ChatId(1001), prompt.id).await.unwrap();
    assert!(server.message(1001, prompt.id.0 as i64).is_none());
}

#[tokio::test]
async fn pushed_messages_of_every_kind_parse_in_teloxide() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    let family = TgChat::supergroup(-100_200_300, "Family");
    let forum = TgChat::forum(-100_400_500, "House");
    let bob = TgUser::new(1002, "Bob");
    let group = server.push_group_text(&family, &alice(), "dinner?", None);
    server.push_reply(&family, &bob, group.message_id, "yes");
    let topic = server.create_topic(&forum, "Shopping");
    server.push_group_text(&forum, &bob, "milk", Some(topic));
    server.push_command(&family, &alice(), "remind", "tomorrow 9am");
    let photo = server.push_photo(
        &TgChat::private(&alice()),
        &alice(),
        b"\x89PNG fake",
        Some("look"),
    );
    let doc = server.push_document(
        &family,
        &bob,
        "list.txt",
        "text/plain",
        b"eggs",
        Some("list"),
    );

    let all = messages(bot.get_updates().await.unwrap());
    assert_eq!(all.len(), 6);
    assert!(all[0].chat.is_supergroup() && all[0].from.as_ref().unwrap().id == UserId(1001));
    assert_eq!(
        all[1].reply_to_message().map(|m| m.id.0 as i64),
        Some(group.message_id)
    );
    assert_eq!(all[2].thread_id, Some(ThreadId(MessageId(topic as i32))));
    assert!(all[2].is_topic_message);
    let entity = &all[3].entities().unwrap()[0];
    assert_eq!(entity.kind, MessageEntityKind::BotCommand);
    assert_eq!(all[3].text(), Some("/remind@hearth_test_bot tomorrow 9am"));
    assert_eq!(entity.length, "/remind@hearth_test_bot".len());
    assert_eq!(all[4].caption(), Some("look"));
    assert_eq!(all[5].document().unwrap().file.id.0, doc.file_ids[0]);
    assert_eq!(all[5].caption(), Some("list"));

    // The largest photo size downloads through getFile and the file route.
    let largest = all[4].photo().unwrap().last().unwrap();
    assert_eq!(&largest.file.id.0, photo.file_ids.last().unwrap());
    let file = bot.get_file(largest.file.id.clone()).await.unwrap();
    assert_eq!(file.meta.size, 9);
    let mut bytes = Vec::new();
    bot.download_file(&file.path, &mut bytes).await.unwrap();
    assert_eq!(bytes, b"\x89PNG fake");
    assert!(bot.get_file(FileId("unknown".into())).await.is_err());

    // The bot's reply in a topic stays in it.
    let reply = bot
        .send_message(ChatId(forum.id), "noted")
        .message_thread_id(ThreadId(MessageId(topic as i32)))
        .await
        .unwrap();
    assert!(reply.is_topic_message);
    assert_eq!(server.bot_messages_in(forum.id)[0].thread_id, Some(topic));
}

#[tokio::test]
async fn uploads_commands_and_other_encodings_are_understood() {
    let server = TelegramServer::start(TOKEN);
    let bot = bot(&server);
    server.push_private_text(&alice(), "send me the list");
    let upload = InputFile::memory(b"milk\neggs".to_vec()).file_name("list.txt");
    let sent = bot
        .send_document(ChatId(1001), upload)
        .caption("<b>list</b>")
        .parse_mode(ParseMode::Html)
        .await
        .expect("multipart upload");
    assert_eq!(sent.caption(), Some("list"));
    let document = sent.document().unwrap();
    assert_eq!(document.file_name.as_deref(), Some("list.txt"));
    assert_eq!(
        server.file_bytes(&document.file.id.0).unwrap(),
        b"milk\neggs"
    );
    let call = &server.calls_of("sendDocument")[0];
    assert_eq!(
        call.params["chat_id"],
        json!(1001),
        "multipart values are typed"
    );
    assert_eq!(call.files[0].bytes, b"milk\neggs");

    bot.set_my_commands(vec![
        BotCommand::new("start", "Say hello"),
        BotCommand::new("remind", "Set a reminder"),
    ])
    .await
    .unwrap();
    assert_eq!(
        server.my_commands(),
        vec![
            ("start".to_string(), "Say hello".to_string()),
            ("remind".to_string(), "Set a reminder".to_string()),
        ]
    );
    assert_eq!(bot.get_my_commands().await.unwrap().len(), 2);
    assert!(
        bot.set_my_commands(vec![BotCommand::new("Bad Name", "x")])
            .await
            .is_err()
    );
    bot.send_chat_action(ChatId(1001), teloxide::types::ChatAction::Typing)
        .await
        .unwrap();

    // Urlencoded form, query string, unknown method and wrong token, as Telegram answers them.
    let base = format!("{}bot{TOKEN}", server.api_url());
    let form = "chat_id=1001&text=hi%20there&reply_markup=%7B%22inline_keyboard%22%3A%5B%5D%7D";
    let (_, body) = raw(&format!("{base}/sendMessage"), Some(form)).await;
    assert_eq!(body["result"]["text"], json!("hi there"));
    let (_, body) = raw(
        &format!("{base}/sendMessage?chat_id=1001&text=from%20query"),
        None,
    )
    .await;
    assert_eq!(body["result"]["text"], json!("from query"));
    let not_found = json!({"ok": false, "error_code": 404, "description": "Not Found"});
    assert_eq!(
        raw(&format!("{base}/launchRocket"), None).await,
        (404, not_found)
    );
    let unauthorized = json!({"ok": false, "error_code": 401, "description": "Unauthorized"});
    let wrong_token = format!("{}bot1:nope/getMe", server.api_url());
    assert_eq!(raw(&wrong_token, None).await, (401, unauthorized));
}

/// A hand-made request: POST of a urlencoded `form`, or GET.
async fn raw(url: &str, form: Option<&str>) -> (u16, Value) {
    let http = reqwest::Client::new();
    let request = match form {
        Some(form) => http
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_string()),
        None => http.get(url),
    };
    let response = request.send().await.expect("reaches the fake");
    (
        response.status().as_u16(),
        response.json().await.expect("JSON"),
    )
}

#[tokio::test]
async fn teloxide_dispatcher_receives_a_pushed_message_end_to_end() {
    let server = TelegramServer::start(TOKEN);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let handler = Update::filter_message().endpoint(
        |message: Message, tx: tokio::sync::mpsc::UnboundedSender<String>| async move {
            let _ = tx.send(message.text().unwrap_or_default().to_string());
            respond(())
        },
    );
    let mut dispatcher = Dispatcher::builder(bot(&server), handler)
        .dependencies(dptree::deps![tx])
        .build();
    let shutdown = dispatcher.shutdown_token();
    let task = tokio::spawn(async move { dispatcher.dispatch().await });

    let first_poll = server.wait_for_call("getUpdates", |_| true, WAIT).await;
    let first_poll = first_poll.expect("the dispatcher polls");
    assert_eq!(first_poll.int("timeout"), Some(10));
    assert_eq!(first_poll.params["allowed_updates"], json!(["message"]));
    let before: Vec<_> = server.calls().into_iter().map(|call| call.method).collect();
    assert_eq!(before, ["getWebhookInfo", "getMe", "getUpdates"]);

    let pushed = server.push_private_text(&alice(), "hello dispatcher");
    let received = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("delivered");
    assert_eq!(received.as_deref(), Some("hello dispatcher"));

    shutdown.shutdown().expect("dispatching").await;
    tokio::time::timeout(WAIT, task)
        .await
        .expect("stopped")
        .unwrap();
    assert!(
        server.is_confirmed(pushed.update_id),
        "graceful stop confirms what was handled"
    );
}
