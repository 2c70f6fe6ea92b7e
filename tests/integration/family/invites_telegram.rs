//! Joining the family by invite on Telegram, through the real teloxide client and the fake
//! Bot API: a parent's `/invite` gives a code, a stranger's `/join` with it makes them a
//! member who then chats and whose role counts (a child cannot invite), the parents are
//! told; a used, guessed or mistyped code refused, wrong codes limited per sender; a removed
//! member ignored at once; members kept across a restart; strangers told how to join only
//! when configured, once.

use std::time::Duration;

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{TelegramServer, TgUser};
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says, code_said, start_on_telegram};

fn max() -> TgUser {
    TgUser::new(3003, "Maximilian")
}

fn mallory() -> TgUser {
    TgUser::new(6666, "Mallory")
}

/// Nothing more from the bot in `chat` than the `before` messages, after a while.
async fn bot_stays_silent(telegram: &TelegramServer, chat: i64, before: usize) {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let said: Vec<_> = telegram
        .bot_messages_in(chat)
        .into_iter()
        .map(|message| message.text)
        .collect();
    assert_eq!(said.len(), before, "the bot said {said:?}");
}

#[actix::test]
async fn a_parent_invites_a_child_who_joins_chats_and_is_removed() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    // Bob has written to the bot before, so it can write to him.
    telegram.push_private_text(&bob(), "/help");
    bot_says(&telegram, 1002, "/cancel").await;

    // A stranger gets nothing, not even with a wrong code... only the answer to the code.
    telegram.push_private_text(&max(), "hello?");
    bot_stays_silent(&telegram, 3003, 0).await;
    telegram.push_private_text(&max(), "/join ABCD-EFGH");
    bot_says(&telegram, 3003, "That code is not valid").await;

    telegram.push_private_text(&alice(), "/invite child Max");
    let code = code_said(&telegram, 1001, "Invite code for Max as a child").await;
    bot_says(&telegram, 1001, &format!("/join {code}")).await;
    // A code just given is said to hold for the whole day, not an hour less.
    bot_says(&telegram, 1001, "within 24 hours").await;

    // Written in lower case with a space, as people type what they are told.
    let typed = code.to_lowercase().replace('-', " ");
    telegram.push_private_text(&max(), &format!("/join {typed}"));
    bot_says(
        &telegram,
        3003,
        "Welcome to the family, Max! You joined as a child",
    )
    .await;
    // Both parents are told, in their own chats.
    for chat in [1001, 1002] {
        bot_says(
            &telegram,
            chat,
            "Max joined the family as a child (on telegram, invited by Alice)",
        )
        .await;
    }

    // Max chats like any member.
    llm.push(Step::Reply("Hello Max!".into()));
    telegram.push_private_text(&max(), "hi, I'm new here");
    bot_says(&telegram, 3003, "Hello Max!").await;

    // The code was used: anyone else is refused, and so is Max's second try.
    telegram.push_private_text(&mallory(), &format!("/join {code}"));
    bot_says(&telegram, 6666, "That code is not valid").await;

    // A child's role counts: no invites, not of a parent either, and no changes.
    telegram.push_private_text(&max(), "/invite parent Eve");
    bot_says(&telegram, 3003, "Only a parent can invite someone").await;
    telegram.push_private_text(&max(), "/family remove bob");
    bot_says(&telegram, 3003, "Only a parent can change the family").await;
    telegram.push_private_text(&max(), "/family");
    bot_says(&telegram, 3003, "Max (max, child): Telegram 3003").await;
    // The configuration's members are the file's.
    telegram.push_private_text(&alice(), "/family remove bob");
    bot_says(&telegram, 1001, "Bob is in the configuration file").await;

    // Removed: a stranger again from the next message.
    telegram.push_private_text(&alice(), "/family remove max");
    bot_says(&telegram, 1001, "Max is no longer in the family").await;
    let requests = llm.request_count();
    let said = telegram.bot_messages_in(3003).len();
    telegram.push_private_text(&max(), "are you still there?");
    bot_stays_silent(&telegram, 3003, said).await;
    assert_eq!(llm.request_count(), requests);
    app.stop().await;
}

#[actix::test]
async fn wrong_codes_are_limited_and_members_stay_across_a_restart() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    telegram.push_private_text(&bob(), "/invite parent Carol");
    let code = code_said(&telegram, 1002, "Invite code for Carol as a parent").await;

    // Five wrong codes an hour; then even the right one is refused.
    let carol = TgUser::new(5005, "Carol");
    for n in 0..5 {
        telegram.push_private_text(&carol, &format!("/join WXYZ-234{n}"));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    telegram.push_private_text(&carol, &format!("/join {code}"));
    bot_says(&telegram, 5005, "Too many wrong codes").await;
    // Another sender is not limited by Carol's tries.
    let dave = TgUser::new(5006, "Dave");
    telegram.push_private_text(&dave, &format!("/join {code}"));
    bot_says(
        &telegram,
        5006,
        "Welcome to the family, Carol! You joined as a parent",
    )
    .await;

    let folder = app.stop().await.folder();
    let app = start_on_telegram(&llm, &telegram, &[], Some(folder), &[]).await;
    llm.push(Step::Reply("Still here, Carol.".into()));
    telegram.push_private_text(&dave, "still a member?");
    bot_says(&telegram, 5006, "Still here, Carol.").await;
    // A parent now: Carol may invite.
    telegram.push_private_text(&dave, "/invite");
    code_said(&telegram, 5006, "Invite code for someone as a child").await;
    app.stop().await;
}

#[actix::test]
async fn strangers_are_told_how_to_join_once_a_day_when_configured() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(
        &llm,
        &telegram,
        &[],
        None,
        &[("HEARTH__INVITES__TELL_STRANGERS", "true")],
    )
    .await;
    telegram.push_private_text(&mallory(), "hi");
    bot_says(&telegram, 6666, "ask a parent for an invite code").await;
    telegram.push_private_text(&mallory(), "hello??");
    bot_stays_silent(&telegram, 6666, 1).await;
    assert_eq!(llm.request_count(), 0);
    app.stop().await;
}
