//! The web page's forms that change things, over HTTP like a browser without script: a
//! reminder added (once, however often its form is posted) and changed by the
//! `schedule_reminder` tool's rules, an edit of one that went off or was cancelled meanwhile
//! told and not applied, another member's reminder `404`; a note turned private leaving the
//! other members' list and URL; and the family page's activity for parents: the intents
//! engine's decisions in a conversation and family script runs with their values and
//! outcome, a url's password masked, a child answered `404`.

use serde_json::json;

use crate::support::family_scripts::{approve_run, ask_to_run, overrides, write_scripts};
use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{classified, example_intents, orders_config};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::web_page::{Member, field, start};

/// The schedules `member` has, as the port keeps them.
async fn reminders_of(app: &Hearth, member: &str) -> Vec<hearth::ports::Schedule> {
    app.app()
        .stores
        .schedules
        .schedules_of(&member.parse().unwrap())
        .await
        .unwrap()
}

#[actix::test]
async fn a_reminder_is_added_once_changed_and_kept_from_other_members() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    let alice = Member::sign_in(&app, "alice").await;
    let bob = Member::sign_in(&app, "bob").await;

    let form = alice.page("/reminders/new").await;
    assert!(form.contains("label for=\"reminder-time\""), "{form}");
    // alice is a parent: she may set one for bob.
    assert!(form.contains("<option value=\"bob\""), "{form}");
    let nonce = field(&form, "nonce");
    let fields = [
        ("nonce", nonce.as_str()),
        ("text", "Water the <b>plants</b>"),
        ("date", ""),
        ("time", "07:30"),
        ("recurrence", "daily"),
    ];
    let added = alice.post("/reminders/new", &fields).await;
    assert_eq!(added.status, 303, "{}", added.body);
    assert_eq!(added.location, "/reminders?answered=added");
    // The same form again (a double click, a reload): still one reminder.
    let again = alice.post("/reminders/new", &fields).await;
    assert_eq!(again.status, 303, "{}", again.body);
    let stored = reminders_of(&app, "alice").await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let reminder = stored[0].clone();
    assert_eq!(reminder.text, "Water the <b>plants</b>");
    assert_eq!(reminder.recurrence.as_deref(), Some("daily"));
    assert!(reminder.next_due_ms.unwrap() > hearth::ports::now_ms());
    let list = alice.page("/reminders?answered=added").await;
    assert!(
        list.contains("Water the &lt;b&gt;plants&lt;/b&gt;"),
        "{list}"
    );
    assert!(list.contains("every day at 07:30"), "{list}");
    assert!(
        list.contains(&format!("/reminders/{}/edit", reminder.id)),
        "{list}"
    );

    // Bad input is named and stores nothing.
    let fresh = field(&alice.page("/reminders/new").await, "nonce");
    let bad_time = alice
        .post(
            "/reminders/new",
            &[
                ("nonce", fresh.as_str()),
                ("text", "Call granny"),
                ("time", "25:99"),
            ],
        )
        .await;
    assert_eq!(bad_time.status, 400);
    assert!(
        bad_time.body.contains("not a time of day"),
        "{}",
        bad_time.body
    );
    assert!(
        bad_time.body.contains("value=\"Call granny\""),
        "{}",
        bad_time.body
    );
    let no_text = alice
        .post(
            "/reminders/new",
            &[("nonce", fresh.as_str()), ("time", "08:00")],
        )
        .await;
    assert_eq!(no_text.status, 400);
    assert!(no_text.body.contains("`text`"), "{}", no_text.body);
    let no_nonce = alice
        .post(
            "/reminders/new",
            &[("text", "Call granny"), ("time", "08:00")],
        )
        .await;
    assert_eq!(no_nonce.status, 400);
    assert!(no_nonce.body.contains("`nonce`"), "{}", no_nonce.body);
    let forged = alice
        .post_without_token(
            "/reminders/new",
            &[
                ("nonce", fresh.as_str()),
                ("text", "Call granny"),
                ("time", "08:00"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    // bob is a child: not for someone else, by the tool's rule.
    let bobs_form = bob.page("/reminders/new").await;
    assert!(!bobs_form.contains("name=\"for_member\""), "{bobs_form}");
    let for_alice = bob
        .post(
            "/reminders/new",
            &[
                ("nonce", field(&bobs_form, "nonce").as_str()),
                ("text", "Buy milk"),
                ("time", "08:00"),
                ("for_member", "alice"),
            ],
        )
        .await;
    assert_eq!(for_alice.status, 400);
    assert!(
        for_alice
            .body
            .contains("Only a parent may set a reminder for someone else"),
        "{}",
        for_alice.body
    );
    assert_eq!(reminders_of(&app, "alice").await.len(), 1);

    // bob cannot open or change alice's reminder by its number.
    let edit_path = format!("/reminders/{}/edit", reminder.id);
    assert_eq!(bob.get(&edit_path).await.status, 404);
    let seen = reminder.next_due_ms.unwrap().to_string();
    let bobs_edit = bob
        .post(
            &edit_path,
            &[("seen", seen.as_str()), ("text", "mine"), ("time", "09:00")],
        )
        .await;
    assert_eq!(bobs_edit.status, 404);
    assert_eq!(bob.get("/reminders/99999/edit").await.status, 404);

    // alice changes its words and time.
    let edit_form = alice.page(&edit_path).await;
    assert_eq!(field(&edit_form, "seen"), seen);
    assert!(edit_form.contains("value=\"07:30\""), "{edit_form}");
    let changed = alice
        .post(
            &edit_path,
            &[
                ("seen", seen.as_str()),
                ("text", "Water the roses"),
                ("time", "19:45"),
                ("recurrence", "daily"),
            ],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.body);
    assert_eq!(changed.location, "/reminders?answered=changed");
    let now = reminders_of(&app, "alice").await;
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].id, reminder.id);
    assert_eq!(now[0].text, "Water the roses");
    assert_ne!(now[0].next_due_ms, reminder.next_due_ms);
    assert!(
        alice
            .page("/reminders")
            .await
            .contains("every day at 19:45"),
        "the list shows the new time"
    );
    // The old form again: it changed since it was opened, so it is told and not applied.
    let stale = alice
        .post(
            &edit_path,
            &[("seen", seen.as_str()), ("text", "Old"), ("time", "06:00")],
        )
        .await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(stale.body.contains("nothing was changed"), "{}", stale.body);
    assert_eq!(reminders_of(&app, "alice").await[0].text, "Water the roses");
    // Cancelled meanwhile: told, not applied.
    let current = now[0].next_due_ms.unwrap().to_string();
    let cancelled = alice
        .post(&format!("/reminders/{}/cancel", reminder.id), &[])
        .await;
    assert_eq!(cancelled.status, 303);
    let after_cancel = alice
        .post(
            &edit_path,
            &[
                ("seen", current.as_str()),
                ("text", "Back"),
                ("time", "06:00"),
            ],
        )
        .await;
    assert_eq!(after_cancel.status, 409, "{}", after_cancel.body);
    assert!(reminders_of(&app, "alice").await.is_empty());
    app.stop().await;
}

#[actix::test]
async fn a_note_turned_private_leaves_the_other_members_list_and_url() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    let alice = Member::sign_in(&app, "alice").await;
    let bob = Member::sign_in(&app, "bob").await;
    let saved = alice
        .post(
            "/notes",
            &[
                ("title", "Alarm code"),
                ("content", "4711"),
                ("visibility", "family"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let path = saved.location.split('?').next().unwrap().to_string();
    assert!(bob.page("/notes").await.contains("Alarm code"));
    assert!(bob.page(&path).await.contains("4711"));
    // Only its author changes who reads it.
    let bobs_page = bob.page(&path).await;
    assert!(!bobs_page.contains("/visibility"), "{bobs_page}");
    let by_bob = bob
        .post(&format!("{path}/visibility"), &[("visibility", "private")])
        .await;
    assert_eq!(by_bob.status, 403, "{}", by_bob.body);
    assert!(bob.page("/notes").await.contains("Alarm code"));
    let alices_page = alice.page(&path).await;
    assert!(alices_page.contains("Make it private"), "{alices_page}");
    let forged = alice
        .post_without_token(&format!("{path}/visibility"), &[("visibility", "private")])
        .await;
    assert_eq!(forged.status, 403);
    let wrong = alice
        .post(&format!("{path}/visibility"), &[("visibility", "secret")])
        .await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.body.contains("secret"), "{}", wrong.body);

    let private = alice
        .post(&format!("{path}/visibility"), &[("visibility", "private")])
        .await;
    assert_eq!(private.status, 303, "{}", private.body);
    assert_eq!(private.location, format!("{path}?saved=private"));
    assert!(!bob.page("/notes").await.contains("Alarm code"));
    assert_eq!(bob.get(&path).await.status, 404);
    // bob's turning it back is as for a note that does not exist.
    let back_by_bob = bob
        .post(&format!("{path}/visibility"), &[("visibility", "family")])
        .await;
    assert_eq!(back_by_bob.status, 404);
    let mine = alice.page(&format!("{path}?saved=private")).await;
    assert!(mine.contains("Now private"), "{mine}");
    assert!(mine.contains("Share it with the family"), "{mine}");
    let shared = alice
        .post(&format!("{path}/visibility"), &[("visibility", "family")])
        .await;
    assert_eq!(shared.status, 303);
    assert!(bob.page(&path).await.contains("4711"));
    app.stop().await;
}

#[actix::test]
async fn parents_see_intent_decisions_and_script_runs_and_a_child_sees_nothing() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = orders_config(folder.path(), &llm, &example_intents());
    let scripts = write_scripts(folder.path());
    let owned = overrides(&scripts);
    let settings: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let app = Hearth::start_from(folder, &config, &settings).await;

    // An intents turn of alice, and one of bob, the child: parents supervise it (the
    // example's policy may deny a child at night, so only its classification is checked).
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-12345"}),
        0.87,
    ));
    let reply = app.ask("alice", "/orders where is O-12345?").await;
    assert!(reply.contains("O-12345"), "{reply}");
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-54321"}),
        0.66,
    ));
    app.ask("bob", "/orders where is O-54321?").await;
    // A family script run by alice, its values holding a url with a password, and one
    // that fails.
    let asked = ask_to_run(
        &app,
        &llm,
        "backup_photos",
        json!({"album": "https://me:hunter2@photos.example/summer"}),
    )
    .await;
    let result = approve_run(&app, &llm, &asked).await;
    assert!(result.contains("finished successfully"), "{result}");
    let asked = ask_to_run(&app, &llm, "failing", json!({})).await;
    let result = approve_run(&app, &llm, &asked).await;
    assert!(result.contains("exit code 3"), "{result}");
    app.app().stores.telemetry.flush().await;

    let alice = Member::sign_in(&app, "alice").await;
    let family = alice.page("/family").await;
    assert!(family.contains("href=\"/family/activity\""), "{family}");
    let activity = alice.page("/family/activity").await;
    assert!(
        activity.contains("<option value=\"http:bob\""),
        "{activity}"
    );
    assert!(
        activity.contains("<option value=\"http:alice\""),
        "{activity}"
    );
    // A member's own conversation is named by whose it is and where, its key kept aside.
    let bobs_option = activity
        .split("<option value=\"http:bob\"")
        .nth(1)
        .and_then(|rest| rest.split("</option>").next())
        .unwrap();
    assert!(
        bobs_option.contains(">Bob (web page or API), last "),
        "{bobs_option}"
    );
    assert!(bobs_option.ends_with(" · http:bob"), "{bobs_option}");
    assert!(activity.contains("backup_photos"), "{activity}");
    assert!(
        activity.contains("album: https://me:***@photos.example/summer"),
        "{activity}"
    );
    assert!(!activity.contains("hunter2"), "{activity}");
    assert!(activity.contains("destination: usb_drive"), "{activity}");
    assert!(activity.contains("failing"), "{activity}");
    assert!(
        activity.contains("failed: exit code 3: disk full"),
        "{activity}"
    );

    let alices = alice
        .page("/family/activity?conversation=http%3Aalice")
        .await;
    assert!(
        alices.contains(
            "decided in Alice (web page or API), newest first <small class=\"key\">http:alice</small>"
        ),
        "{alices}"
    );
    assert!(alices.contains("<td>order_status</td>"), "{alices}");
    assert!(alices.contains("<td>0.87</td>"), "{alices}");
    assert!(alices.contains("<td>orders</td>"), "{alices}");
    assert!(alices.contains("check_order_status: done"), "{alices}");
    let bobs = alice.page("/family/activity?conversation=http%3Abob").await;
    assert!(bobs.contains("<td>order_status</td>"), "{bobs}");
    assert!(bobs.contains("<td>0.66</td>"), "{bobs}");
    // What was decided, never what was said.
    for page in [&alices, &bobs] {
        assert!(!page.contains("where is"), "{page}");
        assert!(
            !page.contains("O-12345") && !page.contains("O-54321"),
            "{page}"
        );
    }
    assert_eq!(
        alice
            .get("/family/activity?conversation=not%20a%20key")
            .await
            .status,
        404
    );

    let bob = Member::sign_in(&app, "bob").await;
    assert_eq!(bob.get("/family/activity").await.status, 404);
    assert_eq!(
        bob.get("/family/activity?conversation=http%3Abob")
            .await
            .status,
        404
    );
    app.stop().await;
}
