//! Codes only where the member alone reads them, on the fake Bot API: `/invite`, `/link`
//! and `/signin` typed in a group leave no code there (every message and every call the
//! fake saw for that chat), the code arrives in the asker's private chat, and the group
//! hears only that it went there (and how to open one); a member without a private chat
//! gets no code at all. A `/link` code used from a second Telegram account asks the member
//! in the chat of the account they have, and `/link switch` there says yes. And what
//! stays in the outbox once delivered: no code.

use crate::support::delivery::outbox_keeps_no_secret;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{TelegramServer, TgChat, TgUser};
use crate::support::telegram_family::code_in;
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says, start_on_telegram};

const GROUP: i64 = -4242;

/// The invite and link codes the bot sent to `chat`, oldest first.
fn codes_in(telegram: &TelegramServer, chat: i64) -> Vec<String> {
    telegram
        .bot_texts_in(chat)
        .iter()
        .filter_map(|text| code_in(text))
        .collect()
}

/// Every text the fake saw for `chat`: the messages stored there, and every call to send
/// or edit one there, answered or refused.
fn everything_in(telegram: &TelegramServer, chat: i64) -> Vec<String> {
    let mut texts: Vec<String> = telegram
        .messages_in(chat)
        .into_iter()
        .filter_map(|message| message.sent_text.or(message.text))
        .collect();
    for call in telegram.calls() {
        if call.params["chat_id"].as_i64() == Some(chat) {
            texts.push(call.params.to_string());
        }
    }
    texts
}

/// No invite or link code, sign-in link or six-digit code in anything `chat` saw.
fn no_code_in(telegram: &TelegramServer, chat: i64, codes: &[String]) {
    for text in everything_in(telegram, chat) {
        assert!(code_in(&text).is_none(), "a code in the group: {text}");
        assert!(
            !text.contains("/sign-in/link/"),
            "a link in the group: {text}"
        );
        for code in codes {
            assert!(!text.contains(code.as_str()), "{code} in the group: {text}");
        }
    }
}

#[actix::test]
async fn codes_asked_in_a_group_go_to_the_private_chat_only() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let group = TgChat::group(GROUP, "The family");
    telegram.add_chat(&group);
    // Alice has written to the bot before: it may write to her private chat.
    telegram.push_private_text(&alice(), "hello");
    bot_says(&telegram, 1001, "echo: hello").await;

    telegram.push_group_text(&group, &alice(), "/invite child Max", None);
    bot_says(
        &telegram,
        GROUP,
        "I sent the invite code to our private chat, Alice",
    )
    .await;
    let invite =
        crate::support::telegram_family::code_said(&telegram, 1001, "Invite code for Max").await;
    telegram.push_group_text(&group, &alice(), "/link", None);
    bot_says(&telegram, GROUP, "I sent the link code to our private chat").await;
    let link =
        crate::support::telegram_family::code_said(&telegram, 1001, "To be the same Alice").await;
    telegram.push_group_text(&group, &alice(), "/signin", None);
    bot_says(
        &telegram,
        GROUP,
        "I sent the sign-in link to our private chat",
    )
    .await;
    bot_says(&telegram, 1001, "/sign-in/link/").await;

    // Bob never wrote to the bot: his code goes to a private chat Telegram refuses, and
    // the group is told how to open one; the code is never shown anywhere.
    telegram.push_group_text(&group, &bob(), "/link", None);
    bot_says(
        &telegram,
        GROUP,
        "Nothing there? Open a private chat with me",
    )
    .await;

    // The codes work where they went: Max joins with the invite in his private chat.
    let max = TgUser::new(3003, "Max");
    telegram.push_private_text(&max, &format!("/join {invite}"));
    bot_says(&telegram, 3003, "Welcome to the family, Max!").await;
    telegram.settle().await;
    no_code_in(&telegram, GROUP, &[invite.clone(), link.clone()]);
    outbox_keeps_no_secret(&app, &[invite, link]).await;
    app.stop().await;
}

#[actix::test]
async fn a_second_account_of_a_platform_asks_the_member_first() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Echo);
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    telegram.push_private_text(&alice(), "/invite child Max");
    let invite =
        crate::support::telegram_family::code_said(&telegram, 1001, "Invite code for Max").await;
    let max = TgUser::new(3003, "Max");
    telegram.push_private_text(&max, &format!("/join {invite}"));
    bot_says(&telegram, 3003, "Welcome to the family, Max!").await;

    // Max's link code used from the account he has: nothing changes, and it says so.
    telegram.push_private_text(&max, "/link");
    let code =
        crate::support::telegram_family::code_said(&telegram, 3003, "To be the same Max").await;
    telegram.push_private_text(&max, &format!("/join {code}"));
    bot_says(
        &telegram,
        3003,
        "This account is yours already, Max: nothing changed",
    )
    .await;

    // From a second Telegram account: asked first, in the chat of the first.
    let codes_before = codes_in(&telegram, 3003).len();
    telegram.push_private_text(&max, "/link");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while codes_in(&telegram, 3003).len() == codes_before {
        assert!(std::time::Instant::now() < deadline, "no second link code");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let code = codes_in(&telegram, 3003).pop().unwrap();
    let new_phone = TgUser::new(3004, "Max");
    telegram.push_private_text(&new_phone, &format!("/join {code}"));
    bot_says(
        &telegram,
        3004,
        "You have another Telegram account in the family",
    )
    .await;
    bot_says(
        &telegram,
        3003,
        "Someone used your /link code from Telegram 3004",
    )
    .await;
    // Not linked yet: the new account is nobody's.
    let said = telegram.bot_messages_in(3004).len();
    telegram.push_private_text(&new_phone, "am I Max?");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(telegram.bot_messages_in(3004).len(), said);
    // Max says yes from the account he has: the new one is his, the old one no longer.
    telegram.push_private_text(&max, "/link switch");
    bot_says(
        &telegram,
        3003,
        "Telegram 3004 is now your account on telegram",
    )
    .await;
    telegram.push_private_text(&new_phone, "hello from the new phone");
    bot_says(&telegram, 3004, "echo: hello from the new phone").await;
    let said = telegram.bot_messages_in(3003).len();
    telegram.push_private_text(&max, "still me?");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(telegram.bot_messages_in(3003).len(), said);
    app.stop().await;
}
