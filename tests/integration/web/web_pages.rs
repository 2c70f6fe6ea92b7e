//! The web page's reminders and notes, in process and without a browser: a member signs in
//! with a one-time link and the page's own forms, then sees and cancels what the chat's
//! rules let them (alice, a parent, the family's; bob, a child, his own), answers a fired
//! reminder once, and reads only the notes the port shows them. Another member's reminder
//! or private note answers `404`, like one that does not exist; what a member wrote is
//! shown as text; a form without its CSRF token is refused and changes nothing.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::web_page::{Answer, Member, start};

/// `member` asks in the chat; the model schedules `arguments` and answers.
pub(crate) async fn schedule(
    app: &Hearth,
    llm: &ScriptedLlmServer,
    member: &str,
    arguments: serde_json::Value,
) {
    llm.push_many([
        Step::ToolCalls(vec![("schedule_reminder".into(), arguments)]),
        Step::Reply("Sure.".into()),
    ]);
    assert_eq!(app.ask(member, "remind me").await, "Sure.");
}

/// The number in the first `action="/reminders/<n>/<what>"` after `text` on a page.
fn action_after(page: &str, text: &str, what: &str) -> String {
    let at = page
        .find(text)
        .unwrap_or_else(|| panic!("no {text:?}: {page}"));
    let rest = &page[at..];
    let end = rest
        .find(&format!("/{what}\""))
        .unwrap_or_else(|| panic!("no {what} after {text:?}: {page}"));
    let start = rest[..end].rfind("/reminders/").unwrap() + "/reminders/".len();
    rest[start..end].to_string()
}

#[actix::test]
async fn each_member_sees_and_cancels_the_reminders_the_chat_s_rules_give_them() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    schedule(
        &app,
        &llm,
        "alice",
        json!({"text": "call grandma", "delay": "PT2H"}),
    )
    .await;
    schedule(
        &app,
        &llm,
        "bob",
        json!({"text": "feed the cat", "delay": "PT3H"}),
    )
    .await;
    let alice = Member::sign_in(&app, "alice").await;
    let bob = Member::sign_in(&app, "bob").await;

    // alice, a parent, sees the family's, each with its next time in words.
    let listed = alice.page("/reminders").await;
    assert!(listed.contains("“call grandma”"), "{listed}");
    assert!(listed.contains("(Europe/Berlin)"), "{listed}");
    assert!(
        listed.contains("“feed the cat”") && listed.contains("(for Bob)"),
        "{listed}"
    );
    assert!(
        listed.contains("href=\"/reminders\" aria-current=\"page\""),
        "{listed}"
    );
    let grandma = action_after(&listed, "call grandma", "cancel");

    // bob, a child, sees his own only; alice's is as one that does not exist.
    let his = bob.page("/reminders").await;
    assert!(his.contains("“feed the cat”"), "{his}");
    assert!(!his.contains("call grandma"), "{his}");
    let refused = bob.post(&format!("/reminders/{grandma}/cancel"), &[]).await;
    let unknown = bob.post("/reminders/987654/cancel", &[]).await;
    let nonsense = bob.post("/reminders/not-a-number/cancel", &[]).await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert_eq!((unknown.status, &unknown.body), (404, &refused.body));
    assert_eq!((nonsense.status, &nonsense.body), (404, &refused.body));

    // Without the token nothing is cancelled.
    let forged = alice
        .post_without_token(&format!("/reminders/{grandma}/cancel"), &[])
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let forged = alice
        .post_without_token(
            &format!("/reminders/{grandma}/cancel"),
            &[("csrf", &"0".repeat(64))],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(alice.page("/reminders").await.contains("call grandma"));

    let cancelled = alice
        .post(&format!("/reminders/{grandma}/cancel"), &[])
        .await;
    assert_eq!(
        (cancelled.status, cancelled.location.as_str()),
        (303, "/reminders?answered=cancelled")
    );
    let listed = alice.page("/reminders?answered=cancelled").await;
    assert!(listed.contains("Cancelled"), "{listed}");
    assert!(!listed.contains("call grandma"), "{listed}");
    let again = alice
        .post(&format!("/reminders/{grandma}/cancel"), &[])
        .await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(
        again.body.contains("is not active any more"),
        "{}",
        again.body
    );
    // bob's own is still his.
    assert!(bob.page("/reminders").await.contains("feed the cat"));
    app.stop().await;
}

#[actix::test]
async fn done_on_a_fired_reminder_settles_it_once() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    schedule(
        &app,
        &llm,
        "alice",
        json!({"text": "stretch", "delay": "PT1S"}),
    )
    .await;
    let alice = Member::sign_in(&app, "alice").await;
    let bob = Member::sign_in(&app, "bob").await;

    let deadline = Instant::now() + Duration::from_secs(15);
    let occurrence = loop {
        let page = alice.page("/reminders").await;
        if page.contains("/done\"") {
            assert!(page.contains("It was due "), "{page}");
            break action_after(&page, "Waiting for Done or Snooze", "done");
        }
        assert!(Instant::now() < deadline, "never fired: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(occurrence.contains('.'), "{occurrence}");
    assert!(!bob.page("/reminders").await.contains("/done\""));

    // Not bob's to answer: as if it did not exist.
    let refused = bob
        .post(&format!("/reminders/{occurrence}/done"), &[])
        .await;
    let unknown = bob.post("/reminders/987654.1/done", &[]).await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert_eq!((unknown.status, &unknown.body), (404, &refused.body));
    let forged = alice
        .post_without_token(&format!("/reminders/{occurrence}/done"), &[])
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(alice.page("/reminders").await.contains("/done\""));

    // A snooze of a length the page does not take changes nothing.
    let too_long = alice
        .post(
            &format!("/reminders/{occurrence}/snooze"),
            &[("minutes", "5000")],
        )
        .await;
    assert_eq!(too_long.status, 400, "{}", too_long.body);
    assert!(
        too_long.body.contains("Snooze for 1 to 1440 minutes"),
        "{}",
        too_long.body
    );
    assert!(alice.page("/reminders").await.contains("/done\""));
    let snoozed = alice
        .post(
            &format!("/reminders/{occurrence}/snooze"),
            &[("minutes", "30")],
        )
        .await;
    assert_eq!(
        (snoozed.status, snoozed.location.as_str()),
        (303, "/reminders?answered=snooze")
    );
    for answer in ["done", "snooze"] {
        let again = alice
            .post(&format!("/reminders/{occurrence}/{answer}"), &[])
            .await;
        assert_eq!(again.status, 409, "{}", again.body);
        assert!(
            again.body.contains("was answered already"),
            "{}",
            again.body
        );
    }
    let page = alice.page("/reminders?answered=snooze").await;
    assert!(page.contains("Snoozed"), "{page}");
    assert!(!page.contains("/done\""), "{page}");
    app.stop().await;
}

/// The fields of a note's form.
fn note<'a>(title: &'a str, content: &'a str, visibility: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("title", title),
        ("content", content),
        ("visibility", visibility),
    ]
}

/// The note number in a save's `Location` (`/notes/<id>?saved=...`).
fn saved_id(saved: &Answer) -> String {
    assert_eq!(saved.status, 303, "{}", saved.body);
    let rest = saved.location.strip_prefix("/notes/").unwrap();
    rest.split('?').next().unwrap().to_string()
}

#[actix::test]
async fn a_private_note_is_its_author_s_alone_and_everything_written_is_text() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    let alice = Member::sign_in(&app, "alice").await;
    let bob = Member::sign_in(&app, "bob").await;
    let saved = alice
        .post("/notes", &note("Alarm code", "4711 then enter", "private"))
        .await;
    assert!(
        saved.location.ends_with("?saved=added"),
        "{}",
        saved.location
    );
    let alarm = saved_id(&saved);
    let wifi = saved_id(
        &alice
            .post(
                "/notes",
                &note("Wifi", "the password is hearth-rocks", "family"),
            )
            .await,
    );

    // bob never meets alice's private note: not listed, not found, not shown, not deleted.
    let listed = bob.page("/notes").await;
    assert!(
        listed.contains("Wifi") && !listed.contains("Alarm"),
        "{listed}"
    );
    for query in ["4711", "alarm", "enter"] {
        let found = bob.page(&format!("/notes?q={query}")).await;
        assert!(found.contains("No note you can read matches."), "{found}");
        assert!(!found.contains("Alarm"), "{found}");
    }
    let found = bob.page("/notes?q=password").await;
    assert!(
        found.contains(&format!("href=\"/notes/{wifi}\"")),
        "{found}"
    );
    assert!(found.contains("the password is hearth-rocks"), "{found}");
    let hidden = bob.get(&format!("/notes/{alarm}")).await;
    let unknown = bob.get("/notes/987654").await;
    assert_eq!(hidden.status, 404, "{}", hidden.body);
    assert_eq!((unknown.status, &unknown.body), (404, &hidden.body));
    let refused = bob.post(&format!("/notes/{alarm}/delete"), &[]).await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert!(
        alice
            .page(&format!("/notes/{alarm}"))
            .await
            .contains("4711 then enter")
    );

    // bob reads and updates the family's note, but only its author or a parent deletes it.
    let shown = bob.page(&format!("/notes/{wifi}")).await;
    assert!(shown.contains("the password is hearth-rocks"), "{shown}");
    assert!(!shown.contains("/delete\""), "{shown}");
    let updated = bob
        .post("/notes", &note("wifi", "hearth-rocks-2", "family"))
        .await;
    assert_eq!(saved_id(&updated), wifi);
    assert!(updated.location.ends_with("?saved=updated"));
    let refused = bob.post(&format!("/notes/{wifi}/delete"), &[]).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let shown = alice.page(&format!("/notes/{wifi}")).await;
    assert!(
        shown.contains("hearth-rocks-2") && shown.contains("last changed by Bob"),
        "{shown}"
    );

    // What a member wrote is text, never markup.
    let script = saved_id(
        &bob.post(
            "/notes",
            &note(
                "<script>alert(1)</script>",
                "<script>alert(2)</script><b>bold?</b>",
                "family",
            ),
        )
        .await,
    );
    for page in [
        alice.page(&format!("/notes/{script}")).await,
        alice.page("/notes").await,
        alice.page("/notes?q=alert").await,
    ] {
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(
            !page.contains("<script>alert") && !page.contains("<b>bold"),
            "{page}"
        );
    }
    assert!(
        alice
            .page(&format!("/notes/{script}"))
            .await
            .contains("&lt;script&gt;alert(2)&lt;/script&gt;&lt;b&gt;bold?&lt;/b&gt;")
    );

    // A form without its token is refused and changes nothing.
    let forged = bob
        .post_without_token("/notes", &note("Forged", "by another site", "family"))
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let forged = alice
        .post_without_token(&format!("/notes/{alarm}/delete"), &[])
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(!alice.page("/notes").await.contains("Forged"));
    assert!(
        alice
            .page(&format!("/notes/{alarm}"))
            .await
            .contains("4711")
    );

    // A title out of bounds is refused with the text kept.
    let long = "t".repeat(201);
    let refused = alice.post("/notes", &note(&long, "kept", "family")).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("201 characters") && refused.body.contains(">kept<"));

    let deleted = alice.post(&format!("/notes/{alarm}/delete"), &[]).await;
    assert_eq!(
        (deleted.status, deleted.location.as_str()),
        (303, "/notes?deleted=1")
    );
    assert_eq!(alice.get(&format!("/notes/{alarm}")).await.status, 404);
    app.stop().await;
}
