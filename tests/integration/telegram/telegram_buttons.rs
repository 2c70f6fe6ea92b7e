//! Telegram confirmation buttons end to end: ✅ runs the exact call, ❌ declines, only the
//! member asked can answer and only once, expiry takes the buttons away, `/cancel`
//! cancels (once: the same `/cancel` delivered again changes nothing), and a restart
//! between the question and the press loses nothing. Also the
//! webhook mode, with its secret token.

use std::time::Duration;

use serde_json::json;

use crate::support::delivery::wait_for;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{StoredMessage, TelegramServer, TgChat, TgUser};
use crate::support::telegram_family::{
    TOKEN, alice, bob, bot_says, press, prompt_in, secure_profile, start_on_telegram,
};
use hearth::actors::processing::{DECLINED_RESULT, EXPIRED_RESULT};

const WAIT: Duration = Duration::from_secs(10);

fn script_city(llm: &ScriptedLlmServer, city: &str) {
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "city", "value": city}),
        )]),
        Step::Reply(format!("Done: {city}.")),
    ]);
}

async fn edited_to(telegram: &TelegramServer, prompt: &StoredMessage, outcome: &str) {
    let edited = telegram
        .wait_for_message(
            prompt.chat_id,
            |message| {
                message.message_id == prompt.message_id
                    && message.text.as_deref().unwrap_or("").ends_with(outcome)
            },
            WAIT,
        )
        .await
        .unwrap_or_else(|| panic!("the prompt never said {outcome:?}"));
    assert!(edited.button_data().is_empty(), "buttons still there");
}

#[actix::test]
async fn confirm_runs_the_call_and_a_second_press_changes_nothing() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    script_city(&llm, "Berlin");
    let asked = telegram.push_private_text(&alice(), "/secure I live in Berlin");
    let prompt = prompt_in(&telegram, 1001).await;
    let text = prompt.text.clone().unwrap();
    assert!(text.contains("profile_update"), "{text}");
    assert!(text.contains("Berlin"), "{text}");
    assert_eq!(prompt.reply_to, Some(asked.message_id));
    // Opaque ids only: the arguments never travel in the buttons.
    assert!(
        prompt
            .button_data()
            .iter()
            .all(|data| !data.contains("Berlin"))
    );

    assert_eq!(
        press(&telegram, &alice(), &prompt, 0).await,
        ("Confirmed.".into(), false)
    );
    edited_to(&telegram, &prompt, "✅ Confirmed by Alice.").await;
    bot_says(&telegram, 1001, "Done: Berlin.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Berlin"));

    let (notice, alert) = press(&telegram, &alice(), &prompt, 1).await;
    assert_eq!(
        (notice.as_str(), alert),
        ("This was already answered.", true)
    );
    assert_eq!(llm.requests().len(), 2);
    app.stop().await;
}

#[actix::test]
async fn cancel_declines_and_the_model_is_told() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    script_city(&llm, "Paris");
    telegram.push_private_text(&alice(), "/secure I live in Paris");
    let prompt = prompt_in(&telegram, 1001).await;
    assert_eq!(press(&telegram, &alice(), &prompt, 1).await.0, "Cancelled.");
    edited_to(&telegram, &prompt, "❌ Cancelled.").await;
    bot_says(&telegram, 1001, "Done: Paris.").await;
    assert_eq!(llm.tool_result_seen(1), DECLINED_RESULT);
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city"), None);
    app.stop().await;
}

#[actix::test]
async fn in_a_group_only_the_member_asked_can_answer() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    let group = TgChat::group(-6001, "Family");
    script_city(&llm, "Rome");
    telegram.push_group_text(&group, &alice(), "/secure I live in Rome", None);
    let prompt = prompt_in(&telegram, -6001).await;
    assert_eq!(
        press(&telegram, &bob(), &prompt, 0).await,
        ("This is not for you.".into(), true)
    );
    let stranger = TgUser::new(4242, "Mallory");
    assert_eq!(
        press(&telegram, &stranger, &prompt, 0).await,
        ("This is not for you.".into(), true)
    );
    // Still open, buttons and all, for alice.
    let still = telegram.message(-6001, prompt.message_id).unwrap();
    assert_eq!(still.button_data().len(), 2);
    assert_eq!(llm.requests().len(), 1);
    assert_eq!(press(&telegram, &alice(), &prompt, 0).await.0, "Confirmed.");
    bot_says(&telegram, -6001, "Done: Rome.").await;
    app.stop().await;
}

#[actix::test]
async fn a_confirmation_is_answered_only_where_it_was_asked() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    llm.push(Step::ToolCalls(vec![(
        "profile_update".into(),
        json!({"key": "city", "value": "Lima"}),
    )]));
    telegram.push_private_text(&alice(), "/secure I live in Lima");
    let prompt = prompt_in(&telegram, 1001).await;
    let confirmation_id = prompt.button_data()[0]
        .strip_prefix("hc:")
        .and_then(|rest| rest.rsplit_once(':'))
        .map(|(id, _)| id.to_string())
        .unwrap();

    // The shared HTTP key answers no confirmation, for anyone.
    let (status, body) = app
        .post_json(
            "/inbound/confirm",
            json!({"confirmation_id": confirmation_id, "user_id": "alice", "approve": true}),
        )
        .await;
    assert_eq!(status, 403, "{body}");

    // Nor does alice's own press in another chat (the same button data on another message).
    let group = TgChat::group(-6002, "Family");
    llm.push(Step::Reply("Hello family.".into()));
    telegram.push_group_text(&group, &bob(), "hello", None);
    let elsewhere = telegram
        .wait_for_message(-6002, |message| message.from_bot, WAIT)
        .await
        .unwrap();
    let pushed = telegram.push_callback(
        &alice(),
        -6002,
        elsewhere.message_id,
        &prompt.button_data()[0],
    );
    let id = pushed.callback_query_id.unwrap();
    let answered = telegram
        .wait_for_call(
            "answerCallbackQuery",
            |call| call.str("callback_query_id") == Some(id.as_str()),
            WAIT,
        )
        .await
        .unwrap();
    assert_eq!(
        answered.str("text"),
        Some("This request is no longer open.")
    );
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city"), None, "nothing ran");

    // In the chat where it was asked, it is answered, and the reply goes there.
    llm.push(Step::Reply("Done: Lima.".into()));
    assert_eq!(press(&telegram, &alice(), &prompt, 0).await.0, "Confirmed.");
    bot_says(&telegram, 1001, "Done: Lima.").await;
    app.stop().await;
}

#[actix::test]
async fn an_unanswered_confirmation_expires_and_loses_its_buttons() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let timeout = (
        "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__CONFIRMATION_TIMEOUT_SECONDS",
        "1",
    );
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[timeout]).await;
    script_city(&llm, "Oslo");
    telegram.push_private_text(&alice(), "/secure I live in Oslo");
    let prompt = prompt_in(&telegram, 1001).await;
    edited_to(&telegram, &prompt, "⌛ Expired: nothing was done.").await;
    bot_says(&telegram, 1001, "Done: Oslo.").await;
    assert_eq!(llm.tool_result_seen(1), EXPIRED_RESULT);
    let (notice, alert) = press(&telegram, &alice(), &prompt, 0).await;
    assert!(alert);
    assert!(
        notice == "This request has expired." || notice == "This was already answered.",
        "{notice}"
    );
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city"), None);
    app.stop().await;
}

#[actix::test]
async fn slash_cancel_cancels_what_waits_for_you() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    script_city(&llm, "Lima");
    telegram.push_private_text(&alice(), "/secure I live in Lima");
    let prompt = prompt_in(&telegram, 1001).await;
    telegram.push_private_text(&alice(), "/cancel");
    edited_to(&telegram, &prompt, "❌ Cancelled with /cancel.").await;
    bot_says(&telegram, 1001, "Done: Lima.").await;
    assert_eq!(llm.tool_result_seen(1), DECLINED_RESULT);
    telegram.push_private_text(&alice(), "/cancel");
    bot_says(&telegram, 1001, "Nothing is waiting for you.").await;
    app.stop().await;
}

#[actix::test]
async fn a_cancel_telegram_delivers_again_leaves_what_was_asked_since_alone() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    script_city(&llm, "Lima");
    telegram.push_private_text(&alice(), "/secure I live in Lima");
    let first = prompt_in(&telegram, 1001).await;
    let cancel = telegram.push_private_text(&alice(), "/cancel");
    edited_to(&telegram, &first, "❌ Cancelled with /cancel.").await;
    bot_says(&telegram, 1001, "Done: Lima.").await;

    script_city(&llm, "Oslo");
    telegram.push_private_text(&alice(), "/secure I live in Oslo");
    let second = prompt_in(&telegram, 1001).await;
    assert_ne!(second.message_id, first.message_id);
    // Telegram delivers the /cancel again, as after hearth lost its offset.
    let again = telegram.redeliver(cancel.update_id);
    wait_for("the redelivered /cancel is confirmed", WAIT, || {
        telegram.is_confirmed(again)
    })
    .await;
    assert_eq!(press(&telegram, &alice(), &second, 0).await.0, "Confirmed.");
    edited_to(&telegram, &second, "✅ Confirmed by Alice.").await;
    bot_says(&telegram, 1001, "Done: Oslo.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Oslo"));
    app.stop().await;
}

#[actix::test]
async fn a_confirmation_survives_a_restart_between_question_and_press() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[]).await;
    script_city(&llm, "Kyiv");
    telegram.push_private_text(&alice(), "/secure I live in Kyiv");
    let prompt = prompt_in(&telegram, 1001).await;
    let folder = app.stop().await.folder();

    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], Some(folder), &[]).await;
    assert_eq!(press(&telegram, &alice(), &prompt, 0).await.0, "Confirmed.");
    edited_to(&telegram, &prompt, "✅ Confirmed by Alice.").await;
    bot_says(&telegram, 1001, "Done: Kyiv.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Kyiv"));
    // The question was asked once, the action run once.
    assert_eq!(llm.requests().len(), 2);
    app.stop().await;
}

#[actix::test]
async fn webhook_mode_takes_updates_only_with_the_secret_token() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    telegram.add_chat(&TgChat::private(&alice()));
    let webhook = [
        ("HEARTH__CHANNELS__TELEGRAM__MODE", "webhook"),
        (
            "HEARTH__CHANNELS__TELEGRAM__WEBHOOK_URL",
            "https://hearth.example/telegram/hook",
        ),
        (
            "HEARTH__CHANNELS__TELEGRAM__WEBHOOK_SECRET_ENV",
            "TEST_TELEGRAM_WEBHOOK_SECRET",
        ),
        ("TEST_TELEGRAM_WEBHOOK_SECRET", "s3cret-token"),
    ];
    let app = start_on_telegram(&llm, &telegram, &[], None, &webhook).await;
    assert_eq!(
        telegram.webhook_url().as_deref(),
        Some("https://hearth.example/telegram/hook")
    );
    let update = json!({
        "update_id": 900,
        "message": {
            "message_id": 55, "date": 1_790_000_000,
            "chat": {"id": 1001, "type": "private", "first_name": "Alice"},
            "from": {"id": 1001, "is_bot": false, "first_name": "Alice"},
            "text": "hello by webhook"
        }
    });
    let post = |secret: &'static str| {
        app.client
            .post(format!("{}/telegram/hook", app.base_url))
            .header("X-Telegram-Bot-Api-Secret-Token", secret)
            .json(&update)
            .send()
    };
    assert_eq!(post("wrong").await.unwrap().status().as_u16(), 401);
    assert!(llm.requests().is_empty());
    llm.push(Step::Reply("Hooked.".into()));
    assert_eq!(post("s3cret-token").await.unwrap().status().as_u16(), 200);
    bot_says(&telegram, 1001, "Hooked.").await;
    let sent = telegram.calls_of("sendMessage");
    assert_eq!(sent[0].params["reply_parameters"]["message_id"], 55);
    // Telegram delivering the same update again is answered once.
    assert_eq!(post("s3cret-token").await.unwrap().status().as_u16(), 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(llm.requests().len(), 1);
    assert_eq!(telegram.calls_of("getUpdates").len(), 0);
    app.stop().await;
}
