//! The web page's Calendar against a real CalDAV server (Radicale, with a password), over
//! the page's own forms without a browser: alice lists the coming events (one written on
//! Radicale directly, a weekly one expanded), adds one (once, though the form is posted
//! twice), changes it, is told and overwrites nothing when it was changed elsewhere
//! meanwhile, and deletes it; bad input is answered naming the field; a form without its
//! CSRF token writes nothing; an event outside the profile's calendars answers `404`. On a
//! profile whose intents policy sends a child's calendar entry to a parent, bob (a child)
//! cannot add one from the page, and a tool the profile does not enable is refused.

use chrono::{NaiveDate, TimeDelta};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::radicale::{
    PASSWORD, Radicale, StoredEvent, calendar_config, write_calendar_config,
};
use crate::support::test_config::{ProfileParts, TestConfig, profile};
use crate::support::web_page::{Member, field};

/// Today in Berlin, the profile's zone (alice and bob have none of their own).
fn berlin_today() -> NaiveDate {
    chrono::Utc::now()
        .with_timezone(&chrono_tz::Europe::Berlin)
        .date_naive()
}

fn compact(day: NaiveDate) -> String {
    day.format("%Y%m%d").to_string()
}

/// A calendar object another client wrote: `uid`, from `start` (`HH:MM:SS` on `day`,
/// Berlin) for an hour, `rrule` if any.
fn event_text(uid: &str, summary: &str, day: NaiveDate, start: &str, rrule: &str) -> String {
    let (hour, rest) = start.split_once(':').unwrap();
    let end_hour: u32 = hour.parse::<u32>().unwrap() + 1;
    let rest = rest.replace(':', "");
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Phone//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260101T100000Z\r\nDTSTART;TZID=Europe/Berlin:{d}T{hour}{rest}\r\nDTEND;TZID=Europe/Berlin:{d}T{end_hour:02}{rest}\r\n{rrule}SUMMARY:{summary}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        d = compact(day)
    )
}

/// hearth on Radicale's Family calendar with the four tools, `confirm_tools` asking for
/// every write (the page's form stands for that approval); `change` changes the config
/// (given the folder it is written in).
async fn start(
    llm: &ScriptedLlmServer,
    radicale: &Radicale,
    change: impl FnOnce(TestConfig, &std::path::Path) -> TestConfig,
) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let config = calendar_config(folder.path(), &llm.base_url(), &radicale.base_url(), true);
    let path = change(config, folder.path()).write(folder.path());
    Hearth::start_from(folder, &path, &[("TEST_CALDAV_PASSWORD", PASSWORD)]).await
}

/// The stored events whose text holds `summary`.
async fn stored(radicale: &Radicale, calendar: &str, summary: &str) -> Vec<StoredEvent> {
    radicale
        .events(calendar)
        .await
        .into_iter()
        .filter(|event| event.text.contains(&format!("SUMMARY:{summary}")))
        .collect()
}

fn version(event: &StoredEvent) -> String {
    event.etag.trim_matches('"').to_string()
}

/// The add form's fields for `title` on `day`, 15:00 to 16:00, with `nonce`.
fn piano<'a>(nonce: &'a str, title: &'a str, day: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("nonce", nonce),
        ("title", title),
        ("date", day),
        ("time", "15:00"),
        ("end_time", "16:00"),
        ("location", "Music school"),
        ("description", "Bring the red book"),
        ("calendar", "Family"),
    ]
}

#[actix::test]
async fn alice_lists_adds_changes_and_deletes_events_through_the_page() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let today = berlin_today();
    let dentist_day = today + TimeDelta::days(3);
    radicale
        .put(
            &format!("{family}dentist.ics"),
            &event_text("dentist@phone", "Dentist", dentist_day, "10:00:00", ""),
        )
        .await;
    // Weekly from a week ago: today's and next week's times in the coming 14 days.
    radicale
        .put(
            &format!("{family}swim.ics"),
            &event_text(
                "swim@phone",
                "Swimming",
                today - TimeDelta::days(7),
                "22:30:00",
                "RRULE:FREQ=WEEKLY\r\n",
            ),
        )
        .await;
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &radicale, |config, _| config).await;
    let alice = Member::sign_in(&app, "alice").await;

    let list = alice.page("/calendar").await;
    assert!(
        list.contains("Dentist") && list.contains("[Family]"),
        "{list}"
    );
    assert_eq!(list.matches(": Swimming (repeats)").count(), 2, "{list}");
    assert!(list.contains("Europe/Berlin"), "{list}");
    // Another range: the weekly one a third time, the dentist not at all.
    let later = today + TimeDelta::days(14);
    let ranged = alice
        .page(&format!(
            "/calendar?from={later}&to={}",
            later + TimeDelta::days(6)
        ))
        .await;
    assert_eq!(
        ranged.matches(": Swimming (repeats)").count(),
        1,
        "{ranged}"
    );
    assert!(!ranged.contains("Dentist"), "{ranged}");
    let backwards = alice
        .get(&format!("/calendar?from={later}&to={today}"))
        .await;
    assert_eq!(backwards.status, 400, "{}", backwards.body);
    assert!(backwards.body.contains("“To”"), "{}", backwards.body);

    // Added once, though the same form is posted twice.
    let day = (today + TimeDelta::days(2)).format("%Y-%m-%d").to_string();
    let nonce = field(&list, "nonce");
    let first = alice
        .post("/calendar", &piano(&nonce, "Piano lesson", &day))
        .await;
    assert_eq!(
        (first.status, first.location.as_str()),
        (303, "/calendar?done=added"),
        "{}",
        first.body
    );
    let again = alice
        .post("/calendar", &piano(&nonce, "Piano lesson", &day))
        .await;
    assert_eq!(
        (again.status, again.location.as_str()),
        (303, "/calendar?done=again"),
        "{}",
        again.body
    );
    let written = stored(&radicale, &family, "Piano lesson").await;
    assert_eq!(
        written.len(),
        1,
        "{:?}",
        written.iter().map(|e| &e.text).collect::<Vec<_>>()
    );
    assert!(
        written[0].text.contains(&format!(
            "DTSTART;TZID=Europe/Berlin:{}T150000",
            compact(today + TimeDelta::days(2))
        )),
        "{}",
        written[0].text
    );
    assert!(
        written[0].text.contains("LOCATION:Music school"),
        "{}",
        written[0].text
    );
    assert!(
        written[0].text.contains("DESCRIPTION:Bring the red book"),
        "{}",
        written[0].text
    );
    let listed = alice.page("/calendar?done=added").await;
    assert!(listed.contains("Piano lesson, at Music school"), "{listed}");

    // Bad input is answered with the field it is about, and writes nothing.
    let fresh = field(&listed, "nonce");
    let mut backwards = piano(&fresh, "Piano lesson", &day);
    backwards[4] = ("end_time", "14:00");
    let told = alice.post("/calendar", &backwards).await;
    assert_eq!(told.status, 400, "{}", told.body);
    assert!(
        told.body.contains("“End time”") && told.body.contains("is not after the start"),
        "{}",
        told.body
    );
    let told = alice
        .post("/calendar", &piano(&fresh, "Piano lesson", "someday"))
        .await;
    assert_eq!(told.status, 400, "{}", told.body);
    assert!(told.body.contains("“Day”"), "{}", told.body);
    let long = "x".repeat(201);
    let told = alice.post("/calendar", &piano(&fresh, &long, &day)).await;
    assert_eq!(told.status, 400, "{}", told.body);
    assert!(
        told.body.contains("“Title” is longer than 200 characters"),
        "{}",
        told.body
    );
    // What was typed comes back in the form.
    assert!(
        told.body.contains("value=\"Music school\""),
        "{}",
        told.body
    );
    assert_eq!(radicale.events(&family).await.len(), 3);

    // Without the CSRF token nothing is written.
    let forged = alice
        .post_without_token("/calendar", &piano(&fresh, "Forged", &day))
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(stored(&radicale, &family, "Forged").await.is_empty());

    // The change form shows the event as it is, then writes the change over that version.
    let piano_event = &written[0];
    let id = piano_event.href.clone();
    let shown = alice
        .page(&format!(
            "/calendar/event?id={id}&version={}",
            version(piano_event)
        ))
        .await;
    assert!(
        shown.contains("Now, in Family: <strong>Piano lesson, ")
            && shown.contains("at Music school"),
        "{shown}"
    );
    assert!(shown.contains(">Bring the red book</textarea>"), "{shown}");
    assert!(
        shown.contains("value=\"15:00\"") && shown.contains("value=\"16:00\""),
        "{shown}"
    );
    let current = version(piano_event);
    let changed = alice
        .post(
            "/calendar/event",
            &[
                ("id", id.as_str()),
                ("version", current.as_str()),
                ("title", "Piano lesson (moved)"),
                ("date", day.as_str()),
                ("time", "16:30"),
                ("end_time", "17:30"),
                ("location", "Music school"),
                ("description", "Bring the blue book"),
            ],
        )
        .await;
    assert_eq!(
        (changed.status, changed.location.as_str()),
        (303, "/calendar?done=changed"),
        "{}",
        changed.body
    );
    let moved = stored(&radicale, &family, "Piano lesson (moved)").await;
    assert_eq!(moved.len(), 1);
    assert!(moved[0].text.contains("T163000"), "{}", moved[0].text);
    assert!(
        moved[0].text.contains("DESCRIPTION:Bring the blue book"),
        "{}",
        moved[0].text
    );

    // Changed on the phone meanwhile: the page's change is refused and overwrites nothing.
    let stale = version(&moved[0]);
    let phone_text = moved[0]
        .text
        .replace("SUMMARY:Piano lesson (moved)", "SUMMARY:Piano (phone)");
    radicale.put(&id, &phone_text).await;
    let refused = alice
        .post(
            "/calendar/event",
            &[
                ("id", id.as_str()),
                ("version", stale.as_str()),
                ("title", "Piano lesson (page)"),
                ("date", day.as_str()),
                ("time", "16:30"),
            ],
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains("changed elsewhere"),
        "{}",
        refused.body
    );
    let kept = stored(&radicale, &family, "Piano (phone)").await;
    assert_eq!(kept.len(), 1);
    assert!(
        stored(&radicale, &family, "Piano lesson (page)")
            .await
            .is_empty()
    );
    let stale_delete = alice
        .post(
            "/calendar/delete",
            &[("id", id.as_str()), ("version", stale.as_str())],
        )
        .await;
    assert_eq!(stale_delete.status, 409, "{}", stale_delete.body);

    // Delete shows the event as it is, then deletes that version.
    let current = version(&kept[0]);
    let asked = alice
        .page(&format!("/calendar/delete?id={id}&version={current}"))
        .await;
    assert!(
        asked.contains("Delete from Family:") && asked.contains("Piano (phone)"),
        "{asked}"
    );
    let deleted = alice
        .post(
            "/calendar/delete",
            &[("id", id.as_str()), ("version", current.as_str())],
        )
        .await;
    assert_eq!(
        (deleted.status, deleted.location.as_str()),
        (303, "/calendar?done=deleted"),
        "{}",
        deleted.body
    );
    assert!(stored(&radicale, &family, "Piano").await.is_empty());
    assert_eq!(radicale.events(&family).await.len(), 2);

    // An event outside the profile's calendars is as one that does not exist.
    let bob = Member::sign_in(&app, "bob").await;
    let elsewhere = bob
        .get("/calendar/event?id=/alice/other/x.ics&version=1")
        .await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.body);
    let elsewhere = bob
        .post(
            "/calendar/delete",
            &[("id", "/alice/family/nothing.ics"), ("version", "1")],
        )
        .await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.body);
    assert_eq!(radicale.events(&family).await.len(), 2);
}

#[actix::test]
async fn a_calendar_refusing_the_password_or_none_at_all_is_said_on_the_page() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let app = Hearth::start_from(folder, &path, &[]).await;
    let alice = Member::sign_in(&app, "alice").await;
    let page = alice.page("/calendar").await;
    assert!(
        page.contains("No calendar is set up") && page.contains("calendar_config"),
        "{page}"
    );

    let Some(radicale) = Radicale::start() else {
        return;
    };
    radicale.make_calendar("family", "Family").await;
    let folder = tempfile::tempdir().unwrap();
    let path = write_calendar_config(folder.path(), &llm.base_url(), &radicale.base_url(), true);
    let app = Hearth::start_from(folder, &path, &[("TEST_CALDAV_PASSWORD", "wrong")]).await;
    let alice = Member::sign_in(&app, "alice").await;
    let page = alice.page("/calendar").await;
    assert!(page.contains("Not read:"), "{page}");
    // A calendar that cannot be read offers no form that would fail on it.
    assert!(!page.contains("name=\"nonce\""), "{page}");
}

const CHILD_ASKS_A_PARENT: &str = r#"
intents:
  - id: add_event
    description: Add an event to the family calendar
    required_params: [title, date]
    tool: add_calendar_event
  - id: find_events
    description: List the calendar's events
    required_params: []
    tool: search_calendar_events
policy:
  rules:
    - { intent: add_event, role: child, decision: escalate, message: "a child's calendar entry needs a parent" }
"#;

#[actix::test]
async fn a_child_whose_entry_needs_a_parent_and_a_tool_not_enabled_are_refused_on_the_page() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &radicale, |config, folder| {
        let intents = folder.join("intents.yaml");
        std::fs::write(&intents, CHILD_ASKS_A_PARENT).unwrap();
        let intents_file = intents.display().to_string();
        config.child("bob").with(|config| {
            config.service_profiles[0] = profile("default_assistant")
                .processing(&[
                    ("engine", "intents".into()),
                    ("intents_file", intents_file.into()),
                ])
                .local_tools(&["search_calendar_events", "add_calendar_event"])
                .confirm(&[]);
        })
    })
    .await;
    let day = (berlin_today() + TimeDelta::days(1))
        .format("%Y-%m-%d")
        .to_string();

    let bob = Member::sign_in(&app, "bob").await;
    let list = bob.page("/calendar").await;
    assert!(
        list.contains("A child&#39;s calendar entry needs a parent")
            || list.contains("A child's calendar entry needs a parent"),
        "{list}"
    );
    assert!(!list.contains("name=\"nonce\""), "{list}");
    let nonce = "a".repeat(64);
    let refused = bob
        .post("/calendar", &piano(&nonce, "Sleepover", &day))
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("a parent has to approve it"),
        "{}",
        refused.body
    );
    assert!(radicale.events(&family).await.is_empty());

    // alice may add; the profile enables neither change nor delete, so neither is offered
    // nor done.
    let alice = Member::sign_in(&app, "alice").await;
    let list = alice.page("/calendar").await;
    let added = alice
        .post(
            "/calendar",
            &piano(&field(&list, "nonce"), "Sleepover", &day),
        )
        .await;
    assert_eq!(added.status, 303, "{}", added.body);
    let written = stored(&radicale, &family, "Sleepover").await;
    assert_eq!(written.len(), 1);
    let list = alice.page("/calendar").await;
    assert!(list.contains("Sleepover"), "{list}");
    assert!(
        !list.contains("action=\"/calendar/event\"")
            && !list.contains("action=\"/calendar/delete\""),
        "{list}"
    );
    let id = written[0].href.clone();
    let current = version(&written[0]);
    let refused = alice
        .post(
            "/calendar/delete",
            &[("id", id.as_str()), ("version", current.as_str())],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("does not enable delete_calendar_event"),
        "{}",
        refused.body
    );
    assert_eq!(stored(&radicale, &family, "Sleepover").await.len(), 1);
}
