//! Escalation on Telegram (the fake Bot API): a child's request over a policy limit waits
//! for a parent, who answers with the buttons in their own chat; the child's chat gets the
//! outcome, and a child pressing a parent's button is refused.

use std::time::Duration;

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{WAIT, escalation_family, nth_prompt, refund};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says, press};
use crate::support::test_config::TestConfig;

async fn start(llm: &ScriptedLlmServer, telegram: &TelegramServer) -> Hearth {
    start_with(llm, telegram, |config| config).await
}

/// `start`, the family changed by `family`.
async fn start_with(
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    family: impl FnOnce(TestConfig) -> TestConfig,
) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = family(escalation_family(folder.path(), llm, telegram)).write(folder.path());
    Hearth::start_from(folder, &path, &[("TEST_TELEGRAM_TOKEN", TOKEN)]).await
}

#[actix::test]
async fn a_parent_approves_or_declines_a_child_s_request_from_their_own_chat() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start(&llm, &telegram).await;
    // Telegram lets a bot write only to those who have talked to it.
    telegram.push_private_text(&alice(), "hello");
    bot_says(&telegram, 1001, "echo: hello").await;

    llm.push(refund("25"));
    telegram.push_private_text(&bob(), "/orders refund 25 on O-12345");
    // The child is told a parent was asked, without buttons of their own.
    bot_says(&telegram, 1002, "I've asked a parent to approve this").await;
    assert!(
        telegram
            .bot_messages_in(1002)
            .iter()
            .all(|message| message.button_data().is_empty())
    );
    // The parent gets the exact call, with the buttons, in their own chat.
    let prompt = nth_prompt(&telegram, 1001, 0).await;
    let text = prompt.text.clone().unwrap();
    assert!(
        text.contains("bob asks a parent to approve this (refunds over 20 need a parent)"),
        "{text}"
    );
    assert!(text.contains("• amount: 25"), "{text}");
    assert_eq!(prompt.button_data().len(), 2, "{prompt:?}");
    // The child pressing the parent's button is refused; nothing runs.
    assert_eq!(
        press(&telegram, &bob(), &prompt, 0).await.0,
        "This is not for you."
    );
    assert!(
        !telegram
            .bot_messages_in(1002)
            .iter()
            .any(|message| message.text.as_deref() == Some("Refunding 25 on O-12345.")),
        "what the call will do is said only as it starts"
    );
    assert_eq!(press(&telegram, &alice(), &prompt, 0).await.0, "Confirmed.");
    bot_says(&telegram, 1002, "Refund of 25 for O-12345 noted (shipped).").await;
    // Approved: the child hears what is done as it starts, then the outcome.
    let texts: Vec<String> = telegram
        .bot_messages_in(1002)
        .into_iter()
        .filter_map(|message| message.text)
        .collect();
    assert_eq!(
        texts[texts.len() - 2..],
        [
            "Refunding 25 on O-12345.",
            "Refund of 25 for O-12345 noted (shipped)."
        ]
    );

    llm.push(refund("30"));
    telegram.push_private_text(&bob(), "/orders refund 30 on O-12345");
    let prompt = nth_prompt(&telegram, 1001, 1).await;
    assert!(prompt.text.clone().unwrap().contains("• amount: 30"));
    assert_eq!(press(&telegram, &alice(), &prompt, 1).await.0, "Cancelled.");
    bot_says(
        &telegram,
        1002,
        "A parent declined that request, so nothing was done.",
    )
    .await;
    assert!(
        !telegram
            .bot_messages_in(1002)
            .iter()
            .any(|message| message.text.as_deref().is_some_and(|t| t.contains("30 "))),
        "the declined call never ran"
    );
    app.stop().await;
}

#[actix::test]
async fn with_two_parents_one_answers_and_both_prompts_lose_their_buttons() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let with_carol = |config: TestConfig| config.named("carol", "Carol").on_telegram("carol", 1003);
    let app = start_with(&llm, &telegram, with_carol).await;
    let carol = crate::support::telegram::TgUser::new(1003, "Carol");
    for (parent, chat) in [(alice(), 1001), (carol.clone(), 1003)] {
        telegram.push_private_text(&parent, "hello");
        bot_says(&telegram, chat, "echo: hello").await;
    }

    llm.push(refund("25"));
    telegram.push_private_text(&bob(), "/orders refund 25 on O-12345");
    let alices = nth_prompt(&telegram, 1001, 0).await;
    let carols = nth_prompt(&telegram, 1003, 0).await;
    assert_eq!(press(&telegram, &carol, &carols, 0).await.0, "Confirmed.");
    bot_says(&telegram, 1002, "Refund of 25 for O-12345 noted (shipped).").await;
    // Both parents' prompts are closed, not only the one pressed.
    for (chat, prompt) in [(1001, &alices), (1003, &carols)] {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let now = telegram
                .bot_messages_in(chat)
                .into_iter()
                .find(|message| message.message_id == prompt.message_id)
                .expect("the prompt is still there");
            if now.button_data().is_empty() && now.text != prompt.text {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the prompt in chat {chat} kept its buttons: {now:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(
        press(&telegram, &alice(), &alices, 0).await.0,
        "This was already answered."
    );
    app.stop().await;
}

#[actix::test]
async fn a_parent_approving_over_http_leaves_the_outcome_to_the_child_s_chat() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start(&llm, &telegram).await;
    telegram.push_private_text(&alice(), "hello");
    bot_says(&telegram, 1001, "echo: hello").await;

    llm.push(refund("25"));
    telegram.push_private_text(&bob(), "/orders refund 25 on O-12345");
    bot_says(&telegram, 1002, "I've asked a parent to approve this").await;
    nth_prompt(&telegram, 1001, 0).await;
    let open = app.app().stores.pending.open().await.unwrap();
    let [escalation] = open.as_slice() else {
        panic!("one escalation waits: {open:?}");
    };
    // The child may not answer it over HTTP either.
    let answer = |user: &str| json!({"confirmation_id": escalation.confirmation.id, "user_id": user, "approve": true});
    let (status, body) = app.confirm(answer("bob")).await;
    assert_eq!(status, 403, "{body}");
    // The parent answers over HTTP: their call hears that it counted, not the outcome.
    let (status, body) = app.confirm(answer("alice")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "approved", "{body}");
    assert_eq!(body["asked_by"], "bob", "{body}");
    assert_eq!(body["confirmation_id"], json!(escalation.confirmation.id));
    assert!(
        body.get("reply").is_none(),
        "the outcome is the child's: {body}"
    );
    // The outcome goes where the request came from: the child's Telegram chat.
    bot_says(&telegram, 1002, "Refund of 25 for O-12345 noted (shipped).").await;
    assert!(
        !telegram
            .bot_messages_in(1001)
            .iter()
            .any(|message| message.text.as_deref().is_some_and(|t| t.contains("noted"))),
        "the parent's chat does not get the child's outcome"
    );
    app.stop().await;
}
