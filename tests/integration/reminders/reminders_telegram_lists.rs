//! `/reminders` on Telegram end to end, through the real teloxide client and the fake Bot
//! API: the member's reminders listed with a "❌ Cancel #N" button each (the list sent
//! through the outbox, so Telegram failing at that moment only delays it); a press cancels
//! that one, which never fires, the list edited to say so and that button gone; the same
//! press delivered again changes nothing, also to the real binary killed and started
//! again in between; a child's press on a parent's list, or a stranger's, cancels nothing.

use std::time::Duration;

use hearth::ports::{Schedule, ScheduleStatus};
use serde_json::json;

use crate::support::delivery::{undelivered, wait_for};
use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::reminders::remind_profile;
use crate::support::telegram::{StoredMessage, TelegramServer, TgChat, TgError, TgUser};
use crate::support::telegram_family::{
    TOKEN, alice, bob, bot_says, press, start_on_telegram, telegram_env, telegram_family,
    write_telegram_config,
};

const WAIT: Duration = Duration::from_secs(15);

/// The model sets a reminder for `text` in `delay` (ISO 8601) and says `reply`; `who` asks
/// in `chat`, and it is said.
async fn set_reminder(
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    who: &TgUser,
    text: &str,
    delay: &str,
    reply: &str,
) {
    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_reminder".into(),
            json!({"text": text, "delay": delay}),
        )]),
        Step::Reply(reply.into()),
    ]);
    telegram.push_private_text(who, &format!("/remind {text}"));
    bot_says(telegram, who.id, reply).await;
}

/// The list the bot showed in `chat` holding `needle`, once there.
async fn list_in(telegram: &TelegramServer, chat: i64, needle: &str) -> StoredMessage {
    telegram
        .wait_for_message(
            chat,
            |message| {
                message.from_bot
                    && message
                        .button_data()
                        .iter()
                        .all(|data| data.starts_with("hr:"))
                    && message.text.as_deref().unwrap_or("").contains(needle)
            },
            WAIT,
        )
        .await
        .unwrap_or_else(|| panic!("no reminder list with {needle:?} in chat {chat}"))
}

/// Once the outbox has nothing left for Telegram: what was shown is noted as shown (a
/// list is noted just after Telegram took it; a person cannot press that fast).
async fn all_delivered(app: &Hearth) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !app
        .app()
        .stores
        .outbox
        .undelivered("telegram")
        .await
        .unwrap()
        .is_empty()
    {
        assert!(tokio::time::Instant::now() < deadline, "still undelivered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `member`'s active schedules, soonest first.
async fn schedules_of(app: &Hearth, member: &str) -> Vec<Schedule> {
    app.app()
        .stores
        .schedules
        .schedules_of(&member.parse().unwrap())
        .await
        .unwrap()
}

async fn status_of(app: &Hearth, id: i64) -> ScheduleStatus {
    let schedule = app.app().stores.schedules.schedule(id).await.unwrap();
    schedule.expect("the schedule is stored").status
}

/// Whether the bot's message `list` was edited to say `mark` and keep only `buttons`.
fn shows(telegram: &TelegramServer, list: &StoredMessage, mark: &str, buttons: &[String]) -> bool {
    telegram
        .message(list.chat_id, list.message_id)
        .is_some_and(|now| {
            now.text.as_deref().unwrap_or("").contains(mark) && now.button_data() == buttons
        })
}

#[actix::test]
async fn a_press_on_the_list_cancels_that_reminder_once_and_it_never_fires() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[remind_profile()], None, &[]).await;
    let set_at = tokio::time::Instant::now();
    set_reminder(&llm, &telegram, &alice(), "call grandma", "PT10S", "Set.").await;
    set_reminder(
        &llm,
        &telegram,
        &alice(),
        "water the plants",
        "PT2H",
        "Set too.",
    )
    .await;
    // Soonest first.
    let ids: Vec<i64> = schedules_of(&app, "alice")
        .await
        .iter()
        .map(|s| s.id)
        .collect();
    let [grandma, plants] = [ids[0], ids[1]];

    telegram.push_private_text(&alice(), "/REMINDERS");
    let list = list_in(&telegram, 1001, "water the plants").await;
    all_delivered(&app).await;
    let text = list.text.clone().unwrap();
    assert!(
        text.starts_with(&format!("#{grandma} “call grandma”: Today at ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n#{plants} “water the plants”: ")),
        "{text}"
    );
    assert_eq!(
        list.button_data(),
        [format!("hr:{grandma}"), format!("hr:{plants}")]
    );
    let labels: Vec<String> = list.reply_markup.as_ref().unwrap()["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[0]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        labels,
        [
            format!("❌ Cancel #{grandma}"),
            format!("❌ Cancel #{plants}")
        ]
    );

    let pushed = telegram.push_callback(
        &alice(),
        list.chat_id,
        list.message_id,
        &format!("hr:{grandma}"),
    );
    let query = pushed.callback_query_id.clone().unwrap();
    let answer = telegram
        .wait_for_call(
            "answerCallbackQuery",
            |call| call.str("callback_query_id") == Some(query.as_str()),
            WAIT,
        )
        .await
        .expect("the press is answered");
    assert_eq!(
        answer.str("text"),
        Some(format!("Cancelled #{grandma}: “call grandma”.").as_str())
    );
    assert_ne!(answer.params["show_alert"], true);
    let left = [format!("hr:{plants}")];
    wait_for("the list shows the reminder cancelled", WAIT, || {
        shows(&telegram, &list, "“call grandma”", &left)
    })
    .await;
    let edited = telegram.message(list.chat_id, list.message_id).unwrap();
    assert!(
        edited
            .text
            .as_deref()
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .ends_with(" — ❌ cancelled"),
        "{:?}",
        edited.text
    );
    assert_eq!(status_of(&app, grandma).await, ScheduleStatus::Cancelled);
    assert_eq!(status_of(&app, plants).await, ScheduleStatus::Active);

    // The same press again (Telegram delivering the update anew): nothing changes, and
    // the press, answered once, is not answered again.
    let again = telegram.redeliver(pushed.update_id);
    wait_for("the press delivered again is confirmed", WAIT, || {
        telegram.is_confirmed(again)
    })
    .await;
    let answers = telegram
        .calls_of("answerCallbackQuery")
        .iter()
        .filter(|call| call.str("callback_query_id") == Some(query.as_str()))
        .count();
    assert_eq!(answers, 1);
    let after = telegram.message(list.chat_id, list.message_id).unwrap();
    assert_eq!(after.edit_count, edited.edit_count, "edited again");
    assert_eq!(after.text, edited.text);

    // Past its time: it never fired.
    tokio::time::sleep_until(set_at + Duration::from_secs(12)).await;
    let fired = telegram
        .bot_messages_in(1001)
        .iter()
        .filter(|message| {
            message
                .text
                .as_deref()
                .unwrap_or("")
                .starts_with("⏰ Reminder")
        })
        .count();
    assert_eq!(fired, 0);
    app.stop().await;
}

#[actix::test]
async fn a_child_or_a_stranger_pressing_a_parent_s_list_cancels_nothing() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let path = telegram_family(folder.path(), &llm, &telegram)
        .profile(remind_profile())
        .child("bob")
        .write(folder.path());
    let app = Hearth::start_from(folder, &path, &[("TEST_TELEGRAM_TOKEN", TOKEN)]).await;
    set_reminder(&llm, &telegram, &alice(), "pay the rent", "PT2H", "Set.").await;
    let rent = schedules_of(&app, "alice").await[0].id;

    // Alice lists hers in the family group, where Bob sees the list too. Telegram fails
    // as it goes out: it is an outbox row, sent once Telegram is back.
    let group = TgChat::supergroup(-100555, "Family");
    telegram.fail_next("sendMessage", 1, TgError::bad_gateway());
    telegram.push_command(&group, &alice(), "reminders", "");
    let list = list_in(&telegram, -100555, "pay the rent").await;
    all_delivered(&app).await;
    assert_eq!(list.button_data(), [format!("hr:{rent}")]);

    let child = press(&telegram, &bob(), &list, 0).await;
    assert_eq!(
        child,
        (
            "This list is not yours: send /reminders for your own.".into(),
            true
        )
    );
    let stranger = press(&telegram, &TgUser::new(4242, "Mallory"), &list, 0).await;
    assert_eq!(stranger, ("This is not for you.".into(), true));
    // His own list has none of hers to press.
    telegram.push_command(&group, &bob(), "reminders", "");
    bot_says(&telegram, -100555, "No reminders or scheduled tasks.").await;

    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(status_of(&app, rent).await, ScheduleStatus::Active);
    let now = telegram.message(list.chat_id, list.message_id).unwrap();
    assert_eq!(now.edit_count, 0, "the list was edited");
    assert_eq!(now.button_data(), [format!("hr:{rent}")]);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_delivered_again_after_a_kill_and_restart_changes_nothing() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = write_telegram_config(folder.path(), &llm, &telegram, &[remind_profile()]);
    let env = telegram_env(&[]);
    let first = Hearth::spawn(&config, &env);
    set_reminder(&llm, &telegram, &alice(), "call grandma", "PT2H", "Set.").await;
    telegram.push_private_text(&alice(), "/reminders");
    let list = list_in(&telegram, 1001, "call grandma").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !undelivered(folder.path()).await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the list is still undelivered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let data = list.button_data();
    let [data] = data.as_slice() else {
        panic!("one button expected: {data:?}");
    };
    let pushed = telegram.push_callback(&alice(), list.chat_id, list.message_id, data);
    let query = pushed.callback_query_id.clone().unwrap();
    let answer = telegram
        .wait_for_call(
            "answerCallbackQuery",
            |call| call.str("callback_query_id") == Some(query.as_str()),
            WAIT,
        )
        .await
        .expect("the press is answered");
    assert!(
        answer.str("text").unwrap_or("").starts_with("Cancelled #"),
        "{:?}",
        answer.str("text")
    );
    wait_for("the list shows it cancelled", WAIT, || {
        shows(&telegram, &list, "— ❌ cancelled", &[])
    })
    .await;
    wait_for("the press is confirmed", WAIT, || {
        telegram.is_confirmed(pushed.update_id)
    })
    .await;
    let edited = telegram.message(list.chat_id, list.message_id).unwrap();
    let _second = first.kill().start().await;
    let again = telegram.redeliver(pushed.update_id);
    wait_for("the press delivered again is confirmed", WAIT, || {
        telegram.is_confirmed(again)
    })
    .await;
    telegram.push_private_text(&alice(), "/reminders");
    bot_says(&telegram, 1001, "No reminders or scheduled tasks.").await;
    let after = telegram.message(list.chat_id, list.message_id).unwrap();
    assert_eq!(after.edit_count, edited.edit_count, "edited again");
    assert_eq!(after.text, edited.text);
    let answers = telegram
        .calls_of("answerCallbackQuery")
        .iter()
        .filter(|call| call.str("callback_query_id") == Some(query.as_str()))
        .count();
    assert_eq!(answers, 1);
}
