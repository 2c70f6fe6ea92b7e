//! A scripted guesser against the web page, over HTTP, behind a proxy hearth trusts (so
//! each try says the address it came from): sign-in codes guessed from one address and
//! from many get no more checks than the README's limits allow, the member is told in
//! their chat and still signs in with the link `/signin` sends them; invite codes guessed
//! on the join page the same. And what stays in the outbox: no code or link once
//! delivered.

use hearth::ports::{JOIN_LIMITS_OVERALL, JOIN_LIMITS_PER_SOURCE};

use crate::support::delivery::outbox_keeps_no_secret;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, bob, bot_says};
use crate::support::web_page::Visitor;
use crate::support::web_page::{
    ask_code, codes_in, enter_code, link_in, start_behind_proxy, use_link,
};

/// Guesses a guesser makes, far more than any limit allows.
const GUESSES: usize = 30;

/// How the page answered a guess: a code was checked (right or wrong), or no code was
/// checked because of the limits.
fn was_checked(page: &str) -> bool {
    !page.contains("Too many wrong codes")
}

/// `GUESSES` six-digit guesses for `member`, each from `address(n)`; how many were checked.
async fn guess(
    base_url: &str,
    member: &str,
    avoid: &str,
    address: impl Fn(usize) -> String,
) -> usize {
    let mut checked = 0;
    for n in 0..GUESSES {
        let visitor = Visitor::from_address(base_url, &address(n));
        let mut guess = format!("{:06}", (n * 7919 + 13) % 1_000_000);
        if guess == avoid {
            guess = format!("{:06}", (n * 7919 + 14) % 1_000_000);
        }
        let (status, page, _) = enter_code(&visitor, member, &guess).await;
        assert_eq!(status, 401, "a guess signed in: {page}");
        if was_checked(&page) {
            checked += 1;
        }
    }
    checked
}

#[actix::test]
async fn a_guesser_gets_few_checks_the_member_is_told_and_signs_in_by_link() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_behind_proxy(&llm, &telegram).await;
    for (member, chat) in [(alice(), 1001), (bob(), 1002)] {
        telegram.push_private_text(&member, "hello");
        bot_says(&telegram, chat, "echo: hello").await;
    }
    // The guesser asks a code for alice (it goes to her chat) and guesses from one address.
    let guesser = Visitor::from_address(&app.base_url, "203.0.113.66");
    assert_eq!(ask_code(&guesser, "alice").await.0, 303);
    bot_says(&telegram, 1001, "sign in to hearth's web page").await;
    let alice_code = codes_in(&telegram, 1001).pop().unwrap();
    let checked = guess(&app.base_url, "alice", &alice_code, |_| {
        "203.0.113.66".into()
    })
    .await;
    // The README: 5 wrong codes an hour per member, per address.
    assert!(checked <= 5, "{checked} guesses checked from one address");
    assert_eq!(checked, 5, "the limit is what counts, not fewer");
    bot_says(&telegram, 1001, "signing in by code is paused for you").await;
    // Even alice's own code is no longer checked this hour...
    let own = Visitor::from_address(&app.base_url, "198.51.100.1");
    assert!(!was_checked(
        &enter_code(&own, "alice", &alice_code).await.1
    ));
    // ...but the link `/signin` sends her signs her in.
    telegram.push_private_text(&alice(), "/signin");
    let link = link_in(&telegram, 1001).await;
    let (status, _, location) = use_link(&own, &link).await;
    assert_eq!((status, location.as_deref()), (303, Some("/chat")));
    assert_eq!(own.get("/chat").await.0, 200);
    bot_says(&telegram, 1001, "You signed in to hearth's web page").await;

    // From many addresses, against bob: the member's limit holds.
    let guesser = Visitor::from_address(&app.base_url, "192.0.2.1");
    assert_eq!(ask_code(&guesser, "bob").await.0, 303);
    bot_says(&telegram, 1002, "sign in to hearth's web page").await;
    let bob_code = codes_in(&telegram, 1002).pop().unwrap();
    let checked = guess(&app.base_url, "bob", &bob_code, |n| {
        format!("192.0.2.{}", n + 1)
    })
    .await;
    assert_eq!(checked, 5, "{checked} guesses checked from many addresses");
    bot_says(&telegram, 1002, "signing in by code is paused for you").await;

    // Once delivered, no code or link is left in the outbox.
    let secrets = [alice_code, bob_code, link];
    outbox_keeps_no_secret(&app, &secrets).await;
    app.stop().await;
}

#[actix::test]
async fn a_guesser_of_invite_codes_on_the_page_is_limited_per_address_and_overall() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_behind_proxy(&llm, &telegram).await;
    telegram.push_private_text(&alice(), "/invite child Max");
    let code =
        crate::support::telegram_family::code_said(&telegram, 1001, "Invite code for Max").await;
    let wrong = |n: usize| {
        let letters = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
        let pick = |k: usize| letters[(n * 7 + k * 13) % letters.len()] as char;
        format!(
            "{}{}{}{}-{}{}{}{}",
            pick(0),
            pick(1),
            pick(2),
            pick(3),
            pick(4),
            pick(5),
            pick(6),
            pick(7)
        )
    };
    let try_join = |visitor: Visitor, code: String| async move {
        let (_, page, _) = visitor.get("/join").await;
        let form = Visitor::field(&page, "form");
        let (status, page, location) = visitor
            .post(
                "/join",
                &[("form", &form), ("code", &code), ("name", "Guess")],
            )
            .await;
        (status, page, location)
    };
    // From one address: the hour's limit per sender.
    let mut checked = 0;
    for n in 0..GUESSES {
        let visitor = Visitor::from_address(&app.base_url, "203.0.113.77");
        let (status, page, _) = try_join(visitor, wrong(n)).await;
        assert_eq!(status, 400, "{page}");
        if !page.contains("Too many wrong codes") {
            checked += 1;
        }
    }
    assert_eq!(checked, JOIN_LIMITS_PER_SOURCE[0].max as usize);
    // From many addresses: everyone's day limit, whatever the addresses.
    let overall = JOIN_LIMITS_OVERALL[0].max as usize;
    let mut n = 0;
    while checked < overall + 10 {
        let address = format!("198.51.{}.{}", n / 200, n % 200);
        let (status, page, _) = try_join(
            Visitor::from_address(&app.base_url, &address),
            wrong(n + 1000),
        )
        .await;
        assert_eq!(status, 400, "{page}");
        if page.contains("from everyone today") {
            break;
        }
        checked += 1;
        n += 1;
    }
    assert_eq!(checked, overall, "wrong invite codes checked in a day");
    // Now even the right code waits for the day to pass on the page, and in chat.
    let max = Visitor::from_address(&app.base_url, "192.0.2.200");
    let (status, page, _) = try_join(max, code.clone()).await;
    assert_eq!(status, 400);
    assert!(page.contains("from everyone today"), "{page}");
    let stranger = crate::support::telegram::TgUser::new(3003, "Max");
    telegram.push_private_text(&stranger, &format!("/join {code}"));
    bot_says(&telegram, 3003, "Too many wrong codes from everyone today").await;
    app.stop().await;
}
