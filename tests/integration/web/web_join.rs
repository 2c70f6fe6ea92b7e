//! Joining and linking on the web page (no browser needed: plain form posts over loopback
//! against the app with the fake Telegram Bot API): an invite code entered on the page makes
//! a member with the invite's role and the name given, signed in, and the parents are told
//! in their Telegram chats; a `/link` code from a member's Telegram chat signs them in as
//! themselves, one identity: what they are asked on Telegram waits for them on the page and
//! is answered there; wrong codes are limited per visitor.

use std::time::Duration;

use serde_json::json;

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::code_said;
use crate::support::telegram_family::{TOKEN, alice, bot_says, start_on_telegram};
use crate::support::web_page::Visitor;

const CONFIRM_PROFILE_UPDATE: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
    "profile_update",
);

#[actix::test]
async fn an_invite_code_entered_on_the_page_makes_a_member_and_tells_the_parents() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    telegram.push_private_text(&alice(), "/invite child Max");
    let code = code_said(&telegram, 1001, "Invite code for Max as a child").await;

    let max = Visitor::new(&app);
    // A form without its token joins nobody, and does not spend the code.
    let (status, _, _) = max
        .post(
            "/join",
            &[("form", "nope"), ("code", &code), ("name", "Max")],
        )
        .await;
    assert_eq!(status, 403);
    let (status, body, location) = max.join(&code.to_lowercase(), "").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/chat")),
        "{body}"
    );
    let (status, page, _) = max.get("/chat").await;
    assert_eq!(status, 200);
    assert!(page.contains("<span class=\"who\">Max</span>"), "{page}");
    // A child: no family page, and the invite's role is what the policy sees.
    assert!(!page.contains("href=\"/family\""));
    assert_eq!(max.get("/family").await.0, 404);
    bot_says(
        &telegram,
        1001,
        "Max joined the family as a child (on the web page, invited by Alice)",
    )
    .await;
    let member = app.app().membership.family().member("max").unwrap();
    assert_eq!(member.role.as_str(), "child");
    assert!(member.telegram_user_id.is_none() && member.matrix_user_id.is_none());

    // Used once.
    let other = Visitor::new(&app);
    let (status, page, _) = other.join(&code, "Mallory").await;
    assert_eq!(status, 400);
    assert!(page.contains("That code is not valid"), "{page}");
    app.stop().await;
}

#[actix::test]
async fn a_link_code_signs_a_member_in_as_themselves_with_their_telegram_questions() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[CONFIRM_PROFILE_UPDATE]).await;
    telegram.push_private_text(&alice(), "/link");
    let code = code_said(&telegram, 1001, "To be the same Alice").await;
    let web = Visitor::new(&app);
    let (status, _, location) = web.join(&code, "").await;
    assert_eq!((status, location.as_deref()), (303, Some("/chat")));
    assert!(
        web.get("/chat")
            .await
            .1
            .contains("<span class=\"who\">Alice</span>")
    );

    // Asked on Telegram, waiting on the page, answered there: the outcome goes to Telegram.
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "2 Oak Road"}),
        )]),
        Step::Reply("Saved your address.".into()),
    ]);
    telegram.push_private_text(&alice(), "I moved to 2 Oak Road");
    bot_says(&telegram, 1001, "Run profile_update?").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let page = loop {
        let (_, page, _) = web.get("/waiting").await;
        if page.contains("2 Oak Road") {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(page.contains("You were asked on Telegram"), "{page}");
    let at = page.find("action=\"/waiting/").unwrap() + 17;
    let id = page[at..].split('"').next().unwrap().to_string();
    let csrf = Visitor::field(&page, "csrf");
    let (status, _, location) = web
        .post(
            &format!("/waiting/{id}"),
            &[("csrf", &csrf), ("answer", "approve"), ("back", "waiting")],
        )
        .await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/waiting?answered=approve"))
    );
    bot_says(&telegram, 1001, "Saved your address.").await;
    assert_eq!(llm.last_tool_result(), "saved address = 2 Oak Road");
    // Answered once: the same answer again finds nothing open.
    let (status, _, _) = web
        .post(
            &format!("/waiting/{id}"),
            &[("csrf", &csrf), ("answer", "approve")],
        )
        .await;
    assert_eq!(status, 409);
    app.stop().await;
}

#[actix::test]
async fn wrong_codes_on_the_page_are_limited() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let guesser = Visitor::new(&app);
    for _ in 0..5 {
        let (status, page, _) = guesser.join("AAAA-AAAA", "Eve").await;
        assert_eq!(status, 400);
        assert!(page.contains("That code is not valid"), "{page}");
    }
    // Now even a right code is refused for an hour from this address.
    telegram.push_private_text(&alice(), "/invite child Eve");
    let code = code_said(&telegram, 1001, "Invite code for Eve").await;
    let (status, page, _) = guesser.join(&code, "Eve").await;
    assert_eq!(status, 400);
    assert!(page.contains("Too many wrong codes"), "{page}");
    assert!(app.app().membership.family().member("eve").is_none());
    app.stop().await;
}
