//! The calendar tools against a real CalDAV server (Radicale, with a password): an event is
//! added only after the member approves it and then written once; a search lists events in
//! the member's local time, a weekly one at its hour across a DST change; a change shows the
//! event before and after, writes nothing before the approval, and never overwrites a
//! change made elsewhere meanwhile; a delete asks; a server that is down or refuses the
//! password is told plainly, shows as degraded on `/readyz`, and hearth goes on answering.

use serde_json::{Value, json};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::radicale::{PASSWORD, Radicale, calendar_config, write_calendar_config};
use crate::support::test_config::{ProfileParts, entries, profile};

async fn start(llm: &ScriptedLlmServer, radicale: &Radicale, password: &str) -> Hearth {
    start_at(llm, &radicale.base_url(), password).await
}

/// hearth with its CalDAV `url` (the server, or one calendar collection).
async fn start_at(llm: &ScriptedLlmServer, url: &str, password: &str) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = write_calendar_config(folder.path(), &llm.base_url(), url, true);
    Hearth::start_from(folder, &path, &[("TEST_CALDAV_PASSWORD", password)]).await
}

async fn confirm(app: &Hearth, id: &Value, approve: bool) -> Value {
    let response = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header("X-API-Key", app.member_token("alice").await)
        .json(&json!({"confirmation_id": id, "user_id": "alice", "approve": approve}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// `id` and `version` of the first event a search result lists.
pub fn id_and_version(result: &str) -> (String, String) {
    let at = result
        .find("(id: ")
        .unwrap_or_else(|| panic!("no id in {result}"));
    let rest = &result[at + "(id: ".len()..];
    let (id, rest) = rest.split_once(", version: ").unwrap();
    let version = rest.split(')').next().unwrap();
    (id.to_string(), version.to_string())
}

const SWIMMING: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Phone//EN\r\nBEGIN:VEVENT\r\nUID:swim@phone\r\nDTSTAMP:20270101T100000Z\r\nDTSTART;TZID=Europe/Berlin:20270304T170000\r\nDTEND;TZID=Europe/Berlin:20270304T180000\r\nRRULE:FREQ=WEEKLY;BYDAY=TH\r\nSUMMARY:Swimming\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// Alice's search of the spring weeks around the change to summer time (Sun 28 Mar 2027),
/// answered "Here." by the model; the tool's result.
async fn search_spring(app: &Hearth, llm: &ScriptedLlmServer) -> String {
    llm.push_many([
        Step::ToolCalls(vec![(
            "search_calendar_events".into(),
            json!({"from": "2027-03-18", "to": "2027-04-08"}),
        )]),
        Step::Reply("Here.".into()),
    ]);
    assert_eq!(app.ask("alice", "what's on in late March?").await, "Here.");
    llm.last_tool_result()
}

#[actix::test]
async fn swimming_is_asked_then_written_once_and_listed_in_local_time() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &radicale, PASSWORD).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "add_calendar_event".into(),
            json!({"title": "Swimming", "date": "2027-01-07", "time": "17:00", "recurrence": "weekly on thu"}),
        )]),
        Step::Reply("Swimming is in the calendar.".into()),
    ]);
    let (status, asked) = app
        .send(json!({"user_id": "alice", "text": "add swimming every Thursday 17:00 to the family calendar"}))
        .await;
    assert_eq!(
        (status, asked["status"].as_str()),
        (200, Some("confirmation_required")),
        "{asked}"
    );
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert!(prompt.contains("Add to Family:"), "{prompt}");
    assert!(prompt.contains("Swimming, Thu 7 Jan"), "{prompt}");
    assert!(prompt.contains("17:00-18:00 (Europe/Berlin)"), "{prompt}");
    assert!(
        prompt.contains("every Thursday at 17:00 (Europe/Berlin)"),
        "{prompt}"
    );
    assert!(
        radicale.events(&family).await.is_empty(),
        "nothing written before the approval"
    );

    let answered = confirm(&app, &asked["confirmation"]["id"], true).await;
    assert_eq!(
        answered["reply"], "Swimming is in the calendar.",
        "{answered}"
    );
    let added = llm.last_tool_result();
    assert!(
        added.starts_with("Added to Family: Swimming, Thu 7 Jan"),
        "{added}"
    );
    let stored = radicale.events(&family).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(
        stored[0].text.contains("RRULE:FREQ=WEEKLY;BYDAY=TH"),
        "{}",
        stored[0].text
    );
    assert!(
        stored[0]
            .text
            .contains("DTSTART;TZID=Europe/Berlin:20270107T170000"),
        "{}",
        stored[0].text
    );

    llm.push_many([
        Step::ToolCalls(vec![(
            "search_calendar_events".into(),
            json!({"from": "2027-01-11", "to": "2027-01-17"}),
        )]),
        Step::Reply("Swimming on Thursday.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "what's on this week?").await,
        "Swimming on Thursday."
    );
    let listed = llm.last_tool_result();
    assert!(
        listed.contains("Thu 14 Jan, 17:00-18:00 (Europe/Berlin): Swimming (repeats) [Family]"),
        "{listed}"
    );
    assert_eq!(listed.matches("Swimming").count(), 1, "{listed}");
    app.stop().await;
}

#[actix::test]
async fn a_weekly_event_from_another_client_keeps_its_hour_across_the_dst_change() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    radicale.put(&format!("{family}swim.ics"), SWIMMING).await;
    let llm = ScriptedLlmServer::start();
    // The url names the calendar collection itself, not the server.
    let collection = format!("{}{}", radicale.base_url(), family.trim_start_matches('/'));
    let app = start_at(&llm, &collection, PASSWORD).await;
    let listed = search_spring(&app, &llm).await;
    for day in ["Thu 18 Mar", "Thu 25 Mar", "Thu 1 Apr", "Thu 8 Apr"] {
        assert!(
            listed.contains(&format!("{day}, 17:00-18:00 (Europe/Berlin): Swimming")),
            "{day}: {listed}"
        );
    }
    assert_eq!(listed.matches("Swimming").count(), 4, "{listed}");
    app.stop().await;
}

#[actix::test]
async fn a_change_shows_before_and_after_and_is_written_only_when_approved() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let etag = radicale.put(&format!("{family}swim.ics"), SWIMMING).await;
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &radicale, PASSWORD).await;
    let (id, version) = id_and_version(&search_spring(&app, &llm).await);
    assert_eq!(id, format!("{family}swim.ics"));

    llm.push_many([
        Step::ToolCalls(vec![(
            "modify_calendar_event".into(),
            json!({"id": id, "version": version, "time": "18:00", "location": "City pool"}),
        )]),
        Step::Reply("Moved.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "swimming is at 18:00 now"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert!(prompt.contains("Change in Family:"), "{prompt}");
    assert!(
        prompt.contains(
            "Now: Swimming, Thu 4 Mar, 17:00-18:00 (Europe/Berlin), every Thursday at 17:00"
        ),
        "{prompt}"
    );
    assert!(prompt.contains("After: Swimming, Thu 4 Mar, 18:00-19:00 (Europe/Berlin), every Thursday at 18:00 (Europe/Berlin), at City pool"), "{prompt}");
    assert_eq!(
        radicale.events(&family).await[0].etag,
        etag,
        "nothing written before the approval"
    );

    let answered = confirm(&app, &asked["confirmation"]["id"], true).await;
    assert_eq!(answered["reply"], "Moved.", "{answered}");
    let stored = &radicale.events(&family).await[0];
    assert!(
        stored
            .text
            .contains("DTSTART;TZID=Europe/Berlin:20270304T180000"),
        "{}",
        stored.text
    );
    assert!(
        stored.text.contains("LOCATION:City pool"),
        "{}",
        stored.text
    );
    assert!(stored.text.contains("UID:swim@phone"), "{}", stored.text);
    assert!(stored.text.contains("SEQUENCE:1"), "{}", stored.text);

    // Declined: nothing changes.
    let (id, version) = id_and_version(&search_spring(&app, &llm).await);
    llm.push_many([
        Step::ToolCalls(vec![(
            "delete_calendar_event".into(),
            json!({"id": id, "version": version}),
        )]),
        Step::Reply("Kept.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "delete swimming"}))
        .await;
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert!(
        prompt.starts_with("Delete from Family:\nSwimming, Thu 4 Mar, 18:00-19:00"),
        "{prompt}"
    );
    confirm(&app, &asked["confirmation"]["id"], false).await;
    assert_eq!(radicale.events(&family).await.len(), 1);

    // Approved: gone.
    llm.push_many([
        Step::ToolCalls(vec![(
            "delete_calendar_event".into(),
            json!({"id": id, "version": version}),
        )]),
        Step::Reply("Deleted.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "delete swimming, really"}))
        .await;
    let answered = confirm(&app, &asked["confirmation"]["id"], true).await;
    assert_eq!(answered["reply"], "Deleted.", "{answered}");
    assert!(
        llm.last_tool_result()
            .starts_with("Deleted from Family: Swimming"),
        "{}",
        llm.last_tool_result()
    );
    assert!(radicale.events(&family).await.is_empty());
    app.stop().await;
}

#[actix::test]
async fn a_change_made_elsewhere_meanwhile_is_reported_and_never_overwritten() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let href = format!("{family}swim.ics");
    radicale.put(&href, SWIMMING).await;
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &radicale, PASSWORD).await;
    let (id, version) = id_and_version(&search_spring(&app, &llm).await);
    llm.push_many([
        Step::ToolCalls(vec![(
            "modify_calendar_event".into(),
            json!({"id": id, "version": version, "title": "Swimming with Max"}),
        )]),
        Step::Reply("Hm.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "rename swimming"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    // Bob's phone moves it while Alice is asked.
    let from_phone = SWIMMING
        .replace("T170000", "T163000")
        .replace("SUMMARY:Swimming", "SUMMARY:Swimming (early)");
    radicale.put(&href, &from_phone).await;

    confirm(&app, &asked["confirmation"]["id"], true).await;
    let refused = llm.last_tool_result();
    assert!(
        refused.contains("changed in the calendar since it was read; nothing was overwritten"),
        "{refused}"
    );
    let stored = &radicale.events(&family).await[0];
    assert!(
        stored.text.contains("SUMMARY:Swimming (early)"),
        "{}",
        stored.text
    );
    assert!(
        !stored.text.contains("Swimming with Max"),
        "{}",
        stored.text
    );
    app.stop().await;
}

#[actix::test]
async fn a_calendar_server_that_is_down_is_told_plainly_and_hearth_goes_on() {
    let Some(mut radicale) = Radicale::start() else {
        return;
    };
    radicale.make_calendar("family", "Family").await;
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &radicale, PASSWORD).await;
    radicale.stop();
    let result = {
        llm.push_many([
            Step::ToolCalls(vec![("search_calendar_events".into(), json!({}))]),
            Step::Reply("The calendar is down.".into()),
        ]);
        assert_eq!(
            app.ask("alice", "what's on?").await,
            "The calendar is down."
        );
        llm.last_tool_result()
    };
    assert!(result.contains("cannot be reached"), "{result}");
    let (status, body) = app.get("/readyz?details=true").await;
    assert_eq!(status, 200, "the bot is still ready: {body}");
    let readiness: Value = serde_json::from_str(&body).unwrap();
    let calendar = &readiness["components"]["calendar:default_assistant"];
    assert_eq!(calendar["degraded"], true, "{body}");
    assert!(
        calendar["detail"]
            .as_str()
            .unwrap()
            .contains("cannot be reached"),
        "{body}"
    );

    llm.push_many([Step::Reply("Hello!".into())]);
    assert_eq!(app.ask("alice", "hi").await, "Hello!");
    app.stop().await;
}

#[actix::test]
async fn a_wrong_password_is_told_plainly_and_never_shown() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    radicale.make_calendar("family", "Family").await;
    let llm = ScriptedLlmServer::start();
    let wrong = "not-the-password-1234";
    let app = start(&llm, &radicale, wrong).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "add_calendar_event".into(),
            json!({"title": "Dentist", "date": "2027-02-02", "time": "15:00"}),
        )]),
        Step::Reply("Could not.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "dentist on 2 Feb at 3"}))
        .await;
    // The calendar cannot be read, so the prompt is hearth's plain one.
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    confirm(&app, &asked["confirmation"]["id"], true).await;
    let result = llm.last_tool_result();
    assert!(
        result.contains("refused the user name or password"),
        "{result}"
    );
    assert!(!result.contains(wrong), "{result}");
    let (_, body) = app.get("/readyz?details=true").await;
    assert!(body.contains("refused the user name or password"), "{body}");
    assert!(!body.contains(wrong), "{body}");
    app.stop().await;
}

/// Serves `ics` to every GET on a loopback port, as a school's holiday feed would.
async fn serve_subscription(ics: &'static str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = vec![0u8; 4096];
            let _ = stream.read(&mut request).await;
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/calendar\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ics}",
                ics.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    port
}

const HOLIDAYS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//School//EN\r\nX-WR-CALNAME:School holidays\r\nBEGIN:VEVENT\r\nUID:winter@school\r\nDTSTART;VALUE=DATE:20261221\r\nDTEND;VALUE=DATE:20270102\r\nSUMMARY:Winter break\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

#[actix::test]
async fn a_childs_profile_sees_only_its_subscribed_calendar_and_writes_nothing() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    radicale.put(&format!("{family}swim.ics"), SWIMMING).await;
    let port = serve_subscription(HOLIDAYS).await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    // The child's profile replaces caldav by subscriptions only.
    let holidays = format!("http://127.0.0.1:{port}/holidays.ics");
    let kids = profile("kids").command("/kids").processing(&[(
        "calendar_config",
        entries(&[
            ("caldav", false.into()),
            ("ical_urls", vec![holidays].into()),
        ]),
    )]);
    let path = calendar_config(folder.path(), &llm.base_url(), &radicale.base_url(), true)
        .profile(kids)
        .write(folder.path());
    let app = Hearth::start_from(folder, &path, &[("TEST_CALDAV_PASSWORD", PASSWORD)]).await;

    llm.push_many([
        Step::ToolCalls(vec![(
            "search_calendar_events".into(),
            json!({"from": "2026-12-20", "to": "2027-03-31"}),
        )]),
        Step::Reply("Holidays.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "/kids when are the holidays?").await,
        "Holidays."
    );
    let listed = llm.last_tool_result();
    assert!(
        listed.contains("Mon 21 Dec - Fri 1 Jan (all day): Winter break [School holidays]"),
        "{listed}"
    );
    assert!(
        !listed.contains("Swimming"),
        "the family calendar is not the child's: {listed}"
    );
    assert!(
        !listed.contains("(id:"),
        "a subscription has nothing to change: {listed}"
    );

    llm.push_many([
        Step::ToolCalls(vec![(
            "add_calendar_event".into(),
            json!({"title": "Party", "date": "2027-01-09", "time": "15:00"}),
        )]),
        Step::Reply("Cannot.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "/kids add my party"}))
        .await;
    confirm(&app, &asked["confirmation"]["id"], true).await;
    let refused = llm.last_tool_result();
    assert!(refused.contains("read only"), "{refused}");
    assert_eq!(radicale.events(&family).await.len(), 1, "nothing written");
    app.stop().await;
}
