//! Reminders on Telegram end to end, through the real teloxide client and the fake Bot API:
//! a reminder set in chat is said back in the member's zone and fires once in their chat
//! with ✅ Done and ⏰ Snooze, which only its member may press, once; a parent sets one for
//! a child (delivered to the child's own chat, saying who set it) while a child setting one
//! for a sibling is refused; Telegram failing at the moment of firing delays it, never
//! repeats it (the real binary killed meanwhile: `reminders_telegram_kill.rs`). A
//! scheduled task runs as a turn of its profile, whose tool that asks first waits for the
//! member. A child's reminder left unanswered is told to the parent's own chat once, after
//! its `escalate_after_minutes`, and the child still answers it.

use std::time::{Duration, Instant};

use hearth::reminders::DONE_OUTCOME;
use serde_json::json;

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::reminders::{WAIT, fired_in, remind_profile, script_reminder, times_said};
use crate::support::telegram::{TelegramServer, TgError, TgUser};
use crate::support::telegram_family::{
    TOKEN, alice, bob, bot_says, press, secure_profile, start_on_telegram, telegram_family,
};

fn carol() -> TgUser {
    TgUser::new(1003, "Carol")
}

#[actix::test]
async fn a_reminder_fires_once_in_the_member_s_chat_and_only_they_answer_it_once() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[remind_profile()], None, &[]).await;
    script_reminder(
        &llm,
        json!({"text": "call grandma", "delay": "PT2S"}),
        "I'll remind you.",
    );
    telegram.push_private_text(&alice(), "/remind in 2 seconds remind me to call grandma");
    bot_says(&telegram, 1001, "I'll remind you.").await;
    // The tool said back when, in the member's zone (the profile's: Europe/Berlin).
    let stored = llm.tool_result_seen(1);
    assert!(stored.contains("call grandma"), "{stored}");
    assert!(stored.contains("(Europe/Berlin)"), "{stored}");

    let prompt = fired_in(&telegram, 1001, "call grandma").await;
    assert_eq!(
        prompt.text.as_deref(),
        Some("⏰ Reminder: call grandma"),
        "on time, so not said late"
    );
    assert_eq!(prompt.button_data().len(), 2);
    // Bob is in the family, but the reminder is not his.
    assert_eq!(
        press(&telegram, &bob(), &prompt, 0).await,
        ("This is not for you.".into(), true)
    );
    assert_eq!(
        press(&telegram, &alice(), &prompt, 0).await,
        ("Done.".into(), false)
    );
    let closed = telegram
        .wait_for_message(
            1001,
            |message| {
                message.message_id == prompt.message_id
                    && message
                        .text
                        .as_deref()
                        .unwrap_or("")
                        .ends_with(DONE_OUTCOME)
            },
            WAIT,
        )
        .await
        .expect("the reminder says it is done");
    assert!(closed.button_data().is_empty(), "buttons still there");
    // Snoozing what is done is refused.
    assert_eq!(
        press(&telegram, &alice(), &prompt, 1).await,
        ("This was already answered.".into(), true)
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(times_said(&telegram, 1001, "call grandma"), 1);
    app.stop().await;
}

#[actix::test]
async fn snooze_puts_the_reminder_off_by_the_configured_minutes() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(
        &llm,
        &telegram,
        &[remind_profile()],
        None,
        &[("HEARTH__REMINDERS__SNOOZE_MINUTES", "15")],
    )
    .await;
    script_reminder(
        &llm,
        json!({"text": "water the plants", "delay": "PT1S"}),
        "Noted.",
    );
    telegram.push_private_text(&alice(), "/remind water the plants in a second");
    let prompt = fired_in(&telegram, 1001, "water the plants").await;
    assert_eq!(
        press(&telegram, &alice(), &prompt, 1).await,
        ("Snoozed.".into(), false)
    );
    telegram
        .wait_for_message(
            1001,
            |message| {
                message.message_id == prompt.message_id
                    && message
                        .text
                        .as_deref()
                        .unwrap_or("")
                        .contains("⏰ Snoozed until")
            },
            WAIT,
        )
        .await
        .expect("the reminder says until when it is snoozed");
    let schedules = app
        .app()
        .stores
        .schedules
        .schedules_of(&"alice".parse().unwrap())
        .await
        .unwrap();
    let snoozed = schedules
        .iter()
        .find(|schedule| schedule.snoozed_from.is_some())
        .expect("a snooze is stored");
    let due_in = snoozed.next_due_ms.unwrap() - hearth::clock::now_ms();
    assert!(
        (14 * 60_000..=15 * 60_000).contains(&due_in),
        "due in {due_in} ms"
    );
    app.stop().await;
}

#[actix::test]
async fn a_parent_sets_one_for_a_child_and_a_child_cannot_for_a_sibling() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let path = telegram_family(folder.path(), &llm, &telegram)
        .profile(remind_profile())
        .child("bob")
        .named("carol", "Carol")
        .on_telegram("carol", 1003)
        .child("carol")
        .write(folder.path());
    let app = crate::support::hearth_app::Hearth::start_from(
        folder,
        &path,
        &[("TEST_TELEGRAM_TOKEN", TOKEN)],
    )
    .await;

    script_reminder(
        &llm,
        json!({"text": "feed the cat", "delay": "PT1S", "for_member": "carol"}),
        "Hm.",
    );
    telegram.push_private_text(&bob(), "/remind remind carol to feed the cat");
    bot_says(&telegram, 1002, "Hm.").await;
    let refused = llm.tool_result_seen(1);
    assert!(
        refused.contains("only a parent may set a reminder for someone else"),
        "{refused}"
    );
    assert!(
        app.app()
            .stores
            .schedules
            .schedules_of(&"carol".parse().unwrap())
            .await
            .unwrap()
            .is_empty()
    );

    script_reminder(
        &llm,
        json!({"text": "homework", "delay": "PT1S", "for_member": "bob"}),
        "Set.",
    );
    telegram.push_private_text(&alice(), "/remind remind bob to do his homework");
    let prompt = fired_in(&telegram, 1002, "homework").await;
    assert!(
        prompt.text.as_deref().unwrap().contains("from Alice"),
        "{:?}",
        prompt.text
    );
    // The parent who set it does not answer it for the child; the child does.
    assert_eq!(
        press(&telegram, &alice(), &prompt, 0).await,
        ("This is not for you.".into(), true)
    );
    assert_eq!(
        press(&telegram, &bob(), &prompt, 0).await,
        ("Done.".into(), false)
    );
    assert_eq!(times_said(&telegram, 1003, "feed the cat"), 0);
    let _ = carol();
    app.stop().await;
}

/// hearth on Telegram with `bob` a child.
async fn start_with_a_child(
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
) -> crate::support::hearth_app::Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = telegram_family(folder.path(), llm, telegram)
        .profile(remind_profile())
        .child("bob")
        .write(folder.path());
    crate::support::hearth_app::Hearth::start_from(folder, &path, &[("TEST_TELEGRAM_TOKEN", TOKEN)])
        .await
}

#[actix::test]
async fn an_unanswered_child_s_reminder_is_told_to_the_parent_once_and_the_child_still_answers() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_with_a_child(&llm, &telegram).await;
    // Telegram lets a bot write only to whoever started a chat with it.
    telegram.push_private_text(&alice(), "/help");
    bot_says(&telegram, 1001, "/cancel").await;
    script_reminder(
        &llm,
        json!({"text": "take the medicine", "delay": "PT1S", "escalate_after_minutes": 1}),
        "Set.",
    );
    telegram.push_private_text(&bob(), "/remind medicine in a second, tell mum if I forget");
    let prompt = fired_in(&telegram, 1002, "take the medicine").await;
    let fired_at = Instant::now();
    let said = llm.tool_result_seen(1);
    assert!(
        said.contains("within 1 min, the parents are told"),
        "{said}"
    );
    // Nobody answers: a minute later the parent's own chat hears of it, the child's not.
    let told = telegram
        .wait_for_message(
            1001,
            |message| {
                message.from_bot
                    && message
                        .text
                        .as_deref()
                        .unwrap_or("")
                        .contains("was not acknowledged within 1 min")
            },
            Duration::from_secs(90),
        )
        .await
        .expect("the parent is told");
    assert!(fired_at.elapsed() >= Duration::from_secs(55), "told early");
    let text = told.text.as_deref().unwrap();
    assert!(
        text.starts_with("⚠️ Bob's reminder “take the medicine”"),
        "{text}"
    );
    assert_eq!(times_said(&telegram, 1002, "was not acknowledged"), 0);
    // Told once, however long it stays unanswered; the child's own answer still counts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(times_said(&telegram, 1001, "was not acknowledged"), 1);
    assert_eq!(
        press(&telegram, &bob(), &prompt, 0).await,
        ("Done.".into(), false)
    );
    assert_eq!(
        app.app()
            .metrics
            .value("hearth_reminders_escalated_total", &[]),
        1.0
    );
    app.stop().await;
}

#[actix::test]
async fn telegram_failing_when_it_fires_delays_the_reminder_and_never_repeats_it() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[remind_profile()], None, &[]).await;
    script_reminder(
        &llm,
        json!({"text": "take out the bins", "delay": "PT2S"}),
        "Will do.",
    );
    telegram.push_private_text(&alice(), "/remind bins in 2 seconds");
    bot_says(&telegram, 1001, "Will do.").await;
    telegram.fail_next("sendMessage", 2, TgError::bad_gateway());
    // Each failed call takes the client's own wait: give the retries their time.
    telegram
        .wait_for_message(
            1001,
            |message| message.from_bot && message.text.as_deref().unwrap_or("").contains("bins"),
            Duration::from_secs(60),
        )
        .await
        .expect("the reminder is delivered once telegram is back");
    assert_eq!(
        telegram.calls_of("sendMessage").len(),
        4,
        "the reply, two failures, the reminder"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(times_said(&telegram, 1001, "take out the bins"), 1);
    app.stop().await;
}

#[actix::test]
async fn a_scheduled_task_runs_its_profile_s_turn_whose_asking_tool_waits_for_the_member() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let profiles = [remind_profile(), secure_profile()];
    let app = start_on_telegram(&llm, &telegram, &profiles, None, &[]).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_task".into(),
            json!({"prompt": "set my city to Oslo", "profile": "secure", "delay": "PT1S"}),
        )]),
        Step::Reply("Scheduled.".into()),
        // The task's turn, on the secure profile, whose profile_update asks first.
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "city", "value": "Oslo"}),
        )]),
        Step::Reply("Done: Oslo.".into()),
    ]);
    telegram.push_private_text(&alice(), "/remind in a second set my city to Oslo");
    bot_says(&telegram, 1001, "Scheduled.").await;
    let prompt = telegram
        .wait_for_message(
            1001,
            |message| {
                message.from_bot
                    && !message.button_data().is_empty()
                    && message
                        .text
                        .as_deref()
                        .unwrap_or("")
                        .contains("profile_update")
            },
            WAIT,
        )
        .await
        .expect("the task's tool asks the member first");
    // Nothing ran before the member said yes.
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city"), None);
    assert_eq!(
        press(&telegram, &alice(), &prompt, 0).await,
        ("Confirmed.".into(), false)
    );
    bot_says(&telegram, 1001, "Done: Oslo.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Oslo"));
    // The task's turn ran on the profile it names: its tools, not the reminder profile's.
    let offered = llm.requests()[2].body["tools"].to_string();
    assert!(offered.contains("profile_update"), "{offered}");
    assert!(!offered.contains("schedule_task"), "{offered}");
    assert_eq!(llm.requests().len(), 4);
    app.stop().await;
}
