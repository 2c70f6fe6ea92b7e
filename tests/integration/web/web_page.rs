//! The family's web page in a real headless Chromium (WebDriver), against the real binary
//! with the fake Telegram Bot API and the scripted model: a member signs in with the code
//! hearth sends to their Telegram chat, chats, approves with the page's button; a parent
//! approves a child's escalated request on the page and the child's Telegram chat gets the
//! outcome; the shared key's claimed approval is refused; what a member or the model wrote
//! is shown as text; a form without its CSRF token, another member's URLs and a signed-out
//! session open nothing. Each page is saved as a screenshot at phone and desktop width.

use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use crate::support::browser::{Browser, Width};
use crate::support::hearth_app::{API_KEY, Hearth, test_env, wait_for_readyz};
use crate::support::intents_profile::{escalation_config, refund};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says};
use crate::support::web_page::web_link;

const WAIT: Duration = Duration::from_secs(20);
const CONFIRM_PROFILE_UPDATE: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
    "profile_update",
);

/// hearth (the real binary) with alice a parent and bob a child on the fake Telegram, both
/// having written to the bot once (so each has an own chat a code can go to).
struct Family {
    llm: ScriptedLlmServer,
    telegram: TelegramServer,
    hearth: Hearth,
    config: std::path::PathBuf,
    env: std::collections::BTreeMap<String, String>,
    _folder: tempfile::TempDir,
}

async fn start_family() -> Family {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = escalation_config(folder.path(), &llm, &telegram);
    let env = test_env(&[("TEST_TELEGRAM_TOKEN", TOKEN), CONFIRM_PROFILE_UPDATE]);
    let hearth = Hearth::spawn(&config, &env);
    wait_for_readyz(&reqwest::Client::new(), &hearth.base_url).await;
    for (member, chat) in [(alice(), 1001), (bob(), 1002)] {
        telegram.push_private_text(&member, "hello");
        bot_says(&telegram, chat, "echo: hello").await;
    }
    Family {
        llm,
        telegram,
        hearth,
        config,
        env,
        _folder: folder,
    }
}

/// Both widths of the page shown now, saved as `<name>-phone.png` and `<name>-desktop.png`.
async fn screenshots(browser: &mut Browser, name: &str) -> anyhow::Result<()> {
    for width in [Width::Phone, Width::Desktop] {
        browser.set_width(width).await?;
        browser.screenshot(name).await?;
    }
    Ok(())
}

/// The newest six-digit code the bot sent to `chat`.
async fn code_sent_to(telegram: &TelegramServer, chat: i64, after: usize) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let codes: Vec<String> = telegram
            .bot_messages_in(chat)
            .into_iter()
            .filter_map(|message| message.text)
            .filter(|text| text.contains("sign in to hearth's web page"))
            .collect();
        if codes.len() > after {
            let text = codes.last().unwrap();
            return text
                .split(|c: char| !c.is_ascii_digit())
                .find(|part| part.len() == 6)
                .unwrap_or_else(|| panic!("no code in {text:?}"))
                .to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no code sent to chat {chat}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sign `member` in on the page with the code the bot sends to `chat`; the session cookie.
async fn sign_in(
    browser: &mut Browser,
    family: &Family,
    member: &str,
    chat: i64,
    screenshot: bool,
) -> anyhow::Result<String> {
    let codes_before = family
        .telegram
        .bot_messages_in(chat)
        .iter()
        .filter(|message| {
            message
                .text
                .as_deref()
                .is_some_and(|text| text.contains("sign in to hearth's web page"))
        })
        .count();
    browser
        .goto(&format!("{}/", family.hearth.base_url))
        .await?;
    browser.wait_for("select#member").await?;
    if screenshot {
        screenshots(browser, "sign-in").await?;
    }
    browser
        .wait_for("select#member")
        .await?
        .select_by_value(member)
        .await
        .context("pick the member")?;
    browser
        .click("form[action='/sign-in'] button[value='code']")
        .await?;
    browser.wait_for("input#code").await?;
    let code = code_sent_to(&family.telegram, chat, codes_before).await;
    if screenshot {
        screenshots(browser, "sign-in-code").await?;
    }
    browser.fill("input#code", &code).await?;
    browser.click("form[action='/sign-in/code'] button").await?;
    browser.wait_for("form#chat-form").await?;
    let cookie = browser
        .cookie("hearth_session")
        .await?
        .context("a session cookie")?;
    assert_eq!(cookie.http_only(), Some(true), "{cookie:?}");
    assert_eq!(
        format!("{:?}", cookie.same_site()),
        "Some(Strict)",
        "{cookie:?}"
    );
    Ok(cookie.value().to_string())
}

/// Wait until the text of `css` contains `needle`; that text.
async fn wait_for_text(browser: &Browser, css: &str, needle: &str) -> anyhow::Result<String> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let text = browser.text_of(css).await.unwrap_or_default();
        if text.contains(needle) {
            return Ok(text);
        }
        if std::time::Instant::now() > deadline {
            anyhow::bail!("`{css}` never said {needle:?}; it says {text:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client of the page outside the browser, sending `cookie` as the session.
fn with_session(cookie: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::COOKIE,
        format!("hearth_session={cookie}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The CSRF token on a page's forms.
async fn csrf_of(client: &reqwest::Client, url: &str) -> String {
    let page = client.get(url).send().await.unwrap().text().await.unwrap();
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with a csrf field")
        + 19;
    page[at..at + 64].to_string()
}

#[actix::test]
async fn a_member_signs_in_with_a_code_from_their_chat_chats_and_approves() {
    let Some(mut browser) = Browser::start_or_skip("web_page_member").await else {
        return;
    };
    let family = start_family().await;
    let base = family.hearth.base_url.clone();
    let cookie = sign_in(&mut browser, &family, "alice", 1001, true)
        .await
        .unwrap();
    screenshots(&mut browser, "chat-empty").await.unwrap();

    // What a member writes is text on the page, never markup.
    browser
        .fill("#text", "<script>window.hacked = 1</script><b>bold?</b>")
        .await
        .unwrap();
    browser.click("#chat-form button").await.unwrap();
    wait_for_text(&browser, "#log", "echo: <script>window.hacked = 1</script>")
        .await
        .unwrap();
    // The log is fetched again while the reply comes: read it until it holds the line.
    wait_for_text(&browser, "li.member", "<b>bold?</b>")
        .await
        .unwrap();
    let hacked = browser
        .client()
        .execute(
            "return window.hacked === undefined && !document.querySelector('#log b');",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(hacked, json!(true), "the message's markup ran or rendered");

    // The reply streams in as the model writes it: a part shows before the whole.
    family.llm.set_stream_pause(Duration::from_millis(300));
    family
        .llm
        .push(Step::Reply("one two three four five six".into()));
    browser.fill("#text", "count for me").await.unwrap();
    browser.click("#chat-form button").await.unwrap();
    let partial = wait_for_text(&browser, "#log .streaming", "one")
        .await
        .unwrap();
    assert!(!partial.contains("six"), "not streamed: {partial:?}");
    wait_for_text(&browser, "#log ol.messages", "one two three four five six")
        .await
        .unwrap();
    let asked = family.llm.requests();
    let asked = asked.last().unwrap();
    assert_eq!(
        asked.body["stream"], true,
        "the page's turn asks for a stream"
    );
    family.llm.set_stream_pause(Duration::ZERO);

    // A tool call that asks: the page shows the exact call with buttons; Approve runs it.
    family.llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "2 Oak Road"}),
        )]),
        Step::Reply("Saved your address.".into()),
    ]);
    browser
        .fill("#text", "I moved to 2 Oak Road")
        .await
        .unwrap();
    browser.click("#chat-form button").await.unwrap();
    browser.wait_for("#log .confirmation").await.unwrap();
    let card = wait_for_text(&browser, "#log .confirmation", "profile_update")
        .await
        .unwrap();
    assert!(card.contains("value: 2 Oak Road"), "{card}");
    screenshots(&mut browser, "chat-confirmation")
        .await
        .unwrap();
    browser
        .click("#log .confirmation button[value='approve']")
        .await
        .unwrap();
    wait_for_text(&browser, "#log", "Saved your address.")
        .await
        .unwrap();
    assert_eq!(family.llm.last_tool_result(), "saved address = 2 Oak Road");
    screenshots(&mut browser, "chat").await.unwrap();

    // The shared key claims an approval for alice: refused, and the question stays open.
    family.llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "9 Elm Street"}),
        )]),
        Step::Reply("Saved again.".into()),
    ]);
    browser.fill("#text", "no, 9 Elm Street").await.unwrap();
    browser.click("#chat-form button").await.unwrap();
    wait_for_text(&browser, "#log .confirmation", "9 Elm Street")
        .await
        .unwrap();
    let pending = family_pending_id(&family.hearth.base_url, &cookie).await;
    let claimed = reqwest::Client::new()
        .post(format!("{base}/inbound/confirm"))
        .header("X-API-Key", API_KEY)
        .json(&json!({"confirmation_id": pending, "user_id": "alice", "approve": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(claimed.status().as_u16(), 403);
    browser.goto(&format!("{base}/waiting")).await.unwrap();
    wait_for_text(&browser, "main", "9 Elm Street")
        .await
        .unwrap();
    screenshots(&mut browser, "waiting").await.unwrap();

    // A form posted without its CSRF token (or with another) is refused, and sends nothing.
    let session = with_session(&cookie);
    for csrf in [None, Some("0".repeat(64))] {
        let mut form = vec![("text", "forged".to_string()), ("nonce", "a".repeat(64))];
        if let Some(csrf) = csrf {
            form.push(("csrf", csrf));
        }
        let forged = session
            .post(format!("{base}/chat"))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert!(
            [400, 403].contains(&forged.status().as_u16()),
            "{}",
            forged.status()
        );
    }
    let forged_answer = session
        .post(format!("{base}/waiting/{pending}"))
        .form(&[("answer", "approve"), ("csrf", &"0".repeat(64))])
        .send()
        .await
        .unwrap();
    assert_eq!(forged_answer.status().as_u16(), 403);
    assert_eq!(
        pending,
        family_pending_id(&base, &cookie).await,
        "still open"
    );

    // Every answer carries a policy that forbids inline script and framing.
    let csp = session
        .get(format!("{base}/chat"))
        .send()
        .await
        .unwrap()
        .headers()
        .get("content-security-policy")
        .map(|value| value.to_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );

    browser.goto(&format!("{base}/settings")).await.unwrap();
    browser.wait_for("ul.sessions").await.unwrap();
    screenshots(&mut browser, "settings").await.unwrap();

    // Signed out from the settings: the old cookie opens nothing any more.
    browser.click("ul.sessions button").await.unwrap();
    browser.wait_for("select#member").await.unwrap();
    let after = session.get(format!("{base}/chat")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 303);
    assert_eq!(after.headers()["location"], "/sign-in");
    let metrics = reqwest::Client::new()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("hearth_web_sign_ins_total{outcome=\"signed_in\",way=\"code\"} 1")
            || metrics.contains("hearth_web_sign_ins_total{way=\"code\",outcome=\"signed_in\"} 1"),
        "{metrics}"
    );
    assert!(
        !family.hearth.log().contains(&cookie),
        "a session is never logged"
    );
    browser.close().await.unwrap();
}

/// The id of the one confirmation alice's waiting page shows.
async fn family_pending_id(base: &str, cookie: &str) -> String {
    let page = with_session(cookie)
        .get(format!("{base}/waiting"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let at = page
        .find("action=\"/waiting/")
        .expect("a confirmation waits")
        + 17;
    page[at..].split('"').next().unwrap().to_string()
}

#[actix::test]
async fn a_parent_approves_a_child_s_request_on_the_page() {
    let Some(mut browser) = Browser::start_or_skip("web_page_parent").await else {
        return;
    };
    let family = start_family().await;
    let base = family.hearth.base_url.clone();
    let alice_cookie = sign_in(&mut browser, &family, "alice", 1001, false)
        .await
        .unwrap();

    family.llm.push(refund("25"));
    family
        .telegram
        .push_private_text(&bob(), "/orders refund 25 on O-12345");
    bot_says(
        &family.telegram,
        1002,
        "I've asked a parent to approve this",
    )
    .await;
    browser.goto(&format!("{base}/waiting")).await.unwrap();
    let card = wait_for_text(&browser, "main", "Bob asks for your approval")
        .await
        .unwrap();
    assert!(card.contains("refunds over 20 need a parent"), "{card}");
    screenshots(&mut browser, "waiting-escalation")
        .await
        .unwrap();
    browser
        .click(".confirmation button[value='approve']")
        .await
        .unwrap();
    wait_for_text(&browser, "main", "Approved").await.unwrap();
    bot_says(
        &family.telegram,
        1002,
        "Refund of 25 for O-12345 noted (shipped).",
    )
    .await;

    // The family page: members, and what each used (bob's message and its model call).
    browser.goto(&format!("{base}/family")).await.unwrap();
    let usage = wait_for_text(&browser, "table.usage", "Bob").await.unwrap();
    assert!(usage.contains("Alice"), "{usage}");
    screenshots(&mut browser, "family").await.unwrap();
    for page in ["reminders", "notes"] {
        browser.goto(&format!("{base}/{page}")).await.unwrap();
        browser.wait_for("main h1").await.unwrap();
        screenshots(&mut browser, page).await.unwrap();
    }

    // bob signs in with a link printed by `hearth web-link` (beside the running hearth).
    let link = web_link(&family.config, &family.env, "bob");
    browser.delete_cookie("hearth_session").await.unwrap();
    browser.goto(&link).await.unwrap();
    browser
        .click("form[action='/sign-in/link'] button")
        .await
        .unwrap();
    browser.wait_for("form#chat-form").await.unwrap();
    let bob_cookie = browser
        .cookie("hearth_session")
        .await
        .unwrap()
        .unwrap()
        .value()
        .to_string();
    // The link worked once.
    browser.delete_cookie("hearth_session").await.unwrap();
    browser.goto(&link).await.unwrap();
    browser
        .click("form[action='/sign-in/link'] button")
        .await
        .unwrap();
    wait_for_text(&browser, "main", "used already")
        .await
        .unwrap();

    // alice's things, asked for with bob's session: as if they did not exist.
    family.llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "2 Oak Road"}),
        )]),
        Step::Reply("Saved.".into()),
    ]);
    let alice_session = with_session(&alice_cookie);
    let csrf = csrf_of(&alice_session, &format!("{base}/chat")).await;
    let sent = alice_session
        .post(format!("{base}/chat"))
        .header("Accept", "application/json")
        .form(&[
            ("csrf", csrf.as_str()),
            ("nonce", &"b".repeat(64)),
            ("text", "I moved"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status().as_u16(), 202);
    let message: serde_json::Value = sent.json().await.unwrap();
    let message = message["id"].as_str().unwrap().to_string();
    let pending = wait_for_pending(&base, &alice_cookie).await;
    let bob_session = with_session(&bob_cookie);
    let bob_csrf = csrf_of(&bob_session, &format!("{base}/settings")).await;
    let alice_session_id = {
        let page = alice_session
            .get(format!("{base}/settings"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let at = page.find("/settings/sessions/").unwrap() + 19;
        page[at..].split('/').next().unwrap().to_string()
    };
    let status = |response: reqwest::Response| response.status().as_u16();
    assert_eq!(
        status(
            bob_session
                .get(format!("{base}/chat/messages/{message}"))
                .send()
                .await
                .unwrap()
        ),
        404
    );
    assert_eq!(
        status(
            bob_session
                .post(format!("{base}/waiting/{pending}"))
                .form(&[("answer", "approve"), ("csrf", bob_csrf.as_str())])
                .send()
                .await
                .unwrap()
        ),
        404
    );
    assert_eq!(
        status(
            bob_session
                .post(format!("{base}/settings/sessions/{alice_session_id}/end"))
                .form(&[("csrf", bob_csrf.as_str())])
                .send()
                .await
                .unwrap()
        ),
        404
    );
    let bobs_waiting = bob_session
        .get(format!("{base}/waiting"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!bobs_waiting.contains("2 Oak Road"), "{bobs_waiting}");
    let bobs_chat = bob_session
        .get(format!("{base}/chat"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!bobs_chat.contains("I moved"), "{bobs_chat}");
    // A child sees no family page.
    assert!(!bobs_chat.contains("href=\"/family\""));
    // alice's question is still hers to answer.
    assert_eq!(pending, wait_for_pending(&base, &alice_cookie).await);
    browser.close().await.unwrap();
}

async fn wait_for_pending(base: &str, cookie: &str) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let page = with_session(cookie)
            .get(format!("{base}/waiting"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if let Some(at) = page.find("action=\"/waiting/") {
            return page[at + 17..].split('"').next().unwrap().to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing waits: {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
