//! Signing in on the web page, attacked (form posts over loopback against the app with
//! the fake Telegram Bot API): a wrong code counts down and five lock signing in by code
//! for the member, who is told in their chat and still signs in with a link; at most three
//! codes an hour go to a member's chat; a member without a chat with hearth gets no code; a
//! code is a member's own. And member tokens from the command line: one speaks
//! only as its member, and stops at once when revoked. A member's own time zone and
//! preferred channel, set on the settings page, checked and kept.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::support::hearth_app::{Hearth, test_env, wait_for_readyz};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, bot_says, start_on_telegram};
use crate::support::test_config::TestConfig;
use crate::support::web_page::{
    Visitor, ask_code, codes_in, enter_code, link_in, start_behind_proxy, use_link,
};

#[actix::test]
async fn wrong_codes_lock_signing_in_by_code_and_codes_are_rationed() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_behind_proxy(&llm, &telegram).await;
    telegram.push_private_text(&alice(), "hello");
    bot_says(&telegram, 1001, "echo: hello").await;

    let visitor = Visitor::from_address(&app.base_url, "203.0.113.10");
    let (status, _, location) = ask_code(&visitor, "alice").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/sign-in/code?member=alice"))
    );
    bot_says(&telegram, 1001, "sign in to hearth's web page").await;
    let code = codes_in(&telegram, 1001).pop().unwrap();
    // bob's sign-in with alice's code: bob has no code waiting, and alice's stays good.
    let elsewhere = Visitor::from_address(&app.base_url, "198.51.100.20");
    assert!(
        enter_code(&elsewhere, "bob", &code)
            .await
            .1
            .contains("No code is waiting")
    );
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for left in (1..5).rev() {
        let (status, page, _) = enter_code(&visitor, "alice", wrong).await;
        assert_eq!(status, 401);
        assert!(page.contains(&format!("{left} more tries")), "{page}");
    }
    let (_, page, _) = enter_code(&visitor, "alice", wrong).await;
    assert!(page.contains("5 wrong tries"), "{page}");
    // Five wrong codes for alice this hour: signing in by code is paused for her, and she
    // is told in her chat, with the way in that still works.
    bot_says(&telegram, 1001, "signing in by code is paused for you").await;
    let (status, page, _) = enter_code(&visitor, "alice", &code).await;
    assert_eq!(status, 401);
    assert!(page.contains("Too many wrong codes"), "{page}");
    assert!(visitor.get("/chat").await.2.as_deref() == Some("/sign-in"));

    // A sign-in link still works.
    let (_, page, _) = visitor.get("/sign-in").await;
    let form = Visitor::field(&page, "form");
    let (status, page, _) = visitor
        .post(
            "/sign-in",
            &[("form", &form), ("member", "alice"), ("way", "link")],
        )
        .await;
    assert_eq!(status, 200, "{page}");
    let link = link_in(&telegram, 1001).await;
    let (status, _, location) = use_link(&visitor, &link).await;
    assert_eq!((status, location.as_deref()), (303, Some("/chat")));
    assert_eq!(visitor.get("/chat").await.0, 200);
    bot_says(
        &telegram,
        1001,
        "You signed in to hearth's web page with a sign-in link",
    )
    .await;
    // Used once.
    let again = Visitor::from_address(&app.base_url, "203.0.113.11");
    assert_eq!(use_link(&again, &link).await.0, 401);

    // The third code of the hour is the last.
    assert_eq!(ask_code(&again, "alice").await.0, 303);
    assert_eq!(ask_code(&again, "alice").await.0, 303);
    let (status, page, _) = ask_code(&again, "alice").await;
    assert_eq!(status, 400);
    assert!(page.contains("Three codes went to your chat"), "{page}");

    // Each member's codes go to their own chat only, and are rationed per member.
    telegram.push_private_text(&crate::support::telegram_family::bob(), "hello");
    bot_says(&telegram, 1002, "echo: hello").await;
    assert_eq!(ask_code(&again, "bob").await.0, 303);
    bot_says(&telegram, 1002, "sign in to hearth's web page").await;
    assert_eq!(codes_in(&telegram, 1001).len(), 3);
    // A name that is nobody's.
    assert_eq!(ask_code(&again, "mallory").await.0, 400);
    app.stop().await;
}

fn token_command(
    config: &Path,
    env: &BTreeMap<String, String>,
    args: &[&str],
) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .arg("token")
        .args(args)
        .envs(env)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).trim().to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_token_speaks_only_as_its_member_until_revoked() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let env = test_env(&[]);
    let hearth = Hearth::spawn(&config, &env);
    let client = reqwest::Client::new();
    wait_for_readyz(&client, &hearth.base_url).await;

    let (made, key, said) = token_command(
        &config,
        &env,
        &["create", "--user", "alice", "--label", "kitchen tablet"],
    );
    assert!(made, "{said}");
    assert!(key.starts_with("hearth_token_"), "{key}");
    let send = |body: serde_json::Value, key: String| {
        let (client, url) = (client.clone(), format!("{}/inbound", hearth.base_url));
        async move {
            let response = client
                .post(url)
                .header("Authorization", format!("Bearer {key}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (
                status,
                response
                    .json::<serde_json::Value>()
                    .await
                    .unwrap_or_default(),
            )
        }
    };
    let (status, body) = send(json!({"text": "hi from the kitchen"}), key.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "echo: hi from the kitchen");
    let (status, _) = send(json!({"user_id": "bob", "text": "as bob"}), key.clone()).await;
    assert_eq!(status, 403);

    let (listed, list, _) = token_command(&config, &env, &["list"]);
    assert!(listed);
    assert!(list.contains("alice  kitchen tablet"), "{list}");
    assert!(!list.contains(&key), "a token is never shown again: {list}");
    let id = list.split_whitespace().next().unwrap().to_string();
    let (revoked, _, said) = token_command(&config, &env, &["revoke", &id]);
    assert!(revoked, "{said}");
    let (status, _) = send(json!({"text": "still there?"}), key.clone()).await;
    assert_eq!(status, 401);
    let (again, _, said) = token_command(&config, &env, &["revoke", &id]);
    assert!(!again && said.contains("no token"), "{said}");
    let (made, _, said) = token_command(&config, &env, &["create", "--user", "mallory"]);
    assert!(
        !made && said.contains("--user \"mallory\" is no family member (members: alice, bob)"),
        "{said}"
    );
    assert!(!hearth.log().contains(&key), "a token is never logged");
}

/// `member` signed in through a one-time link made in the app's stores.
async fn signed_in_by_link(app: &Hearth, member: &str) -> Visitor {
    let identity = hearth::identity::Identity::new(app.app().stores.web_access.clone(), 30);
    let secret = identity
        .new_sign_in_link(&member.parse().unwrap(), hearth::ports::now_ms())
        .await
        .unwrap();
    let visitor = Visitor::new(app);
    let (_, page, _) = visitor.get(&format!("/sign-in/link/{secret}")).await;
    let form = Visitor::field(&page, "form");
    let (status, _, location) = visitor
        .post("/sign-in/link", &[("form", &form), ("link", &secret)])
        .await;
    assert_eq!((status, location.as_deref()), (303, Some("/chat")));
    visitor
}

#[actix::test]
async fn a_member_s_time_zone_and_preferred_channel_are_theirs_to_set_and_kept() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let alice_page = signed_in_by_link(&app, "alice").await;
    let (_, page, _) = alice_page.get("/settings").await;
    let csrf = Visitor::field(&page, "csrf");
    let save = |timezone: &'static str, channel: &'static str| {
        let (visitor, csrf) = (&alice_page, csrf.clone());
        async move {
            visitor
                .post(
                    "/settings",
                    &[
                        ("csrf", &csrf),
                        ("timezone", timezone),
                        ("preferred_channel", channel),
                    ],
                )
                .await
        }
    };
    let (status, page, _) = save("Mars/Olympus", "").await;
    assert_eq!(status, 400);
    assert!(
        page.contains("Not saved:") && page.contains("Mars/Olympus"),
        "{page}"
    );
    let (status, page, _) = save("America/New_York", "matrix").await;
    assert_eq!(status, 400);
    assert!(
        page.contains("no own chat with hearth on &quot;matrix&quot;"),
        "{page}"
    );
    let family = app.app().membership.family().clone();
    assert_eq!(
        family.member("alice").unwrap().timezone,
        None,
        "nothing saved"
    );
    // Without the form's token nothing is saved either.
    let (status, _, _) = alice_page
        .post(
            "/settings",
            &[
                ("csrf", "nope"),
                ("timezone", "Asia/Tokyo"),
                ("preferred_channel", ""),
            ],
        )
        .await;
    assert_eq!(status, 403);

    let (status, _, location) = save("America/New_York", "telegram").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/settings?saved=1"))
    );
    assert_eq!(
        family.member("alice").unwrap().timezone.as_deref(),
        Some("America/New_York")
    );
    assert_eq!(family.member("bob").unwrap().timezone, None, "only hers");
    let folder = app.stop().await.folder();

    // Kept across a restart: the zone the roster has, the channel the page shows chosen.
    let app = start_on_telegram(&llm, &telegram, &[], Some(folder), &[]).await;
    let family = app.app().membership.family().clone();
    assert_eq!(
        family.member("alice").unwrap().timezone.as_deref(),
        Some("America/New_York")
    );
    let (_, page, _) = signed_in_by_link(&app, "alice")
        .await
        .get("/settings")
        .await;
    assert!(
        page.contains("<option value=\"telegram\" selected>"),
        "{page}"
    );
    assert!(page.contains("value=\"America/New_York\""), "{page}");
    app.stop().await;
}
