//! Calendars written by strangers, against the real binary on loopback: a subscribed `.ics`
//! nested twelve thousand levels deep (which once aborted the whole process) is said to be
//! unreadable, by name, in chat and on the web page's Calendar, `/readyz` shows the calendar
//! degraded and hearth goes on answering; a feed of costly recurring events (every five
//! minutes, a hundred thousand times, from 340 days ago, walked from their start) is
//! searched with a note for each event cut short, and another member's plain message is
//! answered while that search still runs. In process: a CalDAV server that names addresses on another server (a principal, a
//! calendar, an event, a redirect) never gets the account's password sent there; nothing
//! is sent there at all.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};

use crate::support::calendar_server::{Answer, CalendarServer, Recorded};
use crate::support::hearth_app::{API_KEY, Hearth, test_env, wait_for_readyz};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::{TestConfig, entries};
use crate::support::web_page::{Member, web_link};

/// The test config with `feeds` subscribed in every profile and the search tool on.
fn subscribed_config(folder: &std::path::Path, llm: &str, feeds: &[String]) -> std::path::PathBuf {
    let urls: Vec<&str> = feeds.iter().map(String::as_str).collect();
    TestConfig::new(folder, llm)
        .default_processing("calendar_config", entries(&[("ical_urls", urls.into())]))
        .default_tools("profile_get, search_calendar_events")
        .write(folder)
}

/// A feed named `name` holding `events` (VEVENT text).
fn feed(name: &str, events: &str) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Feed//EN\r\nX-WR-CALNAME:{name}\r\n{events}END:VCALENDAR\r\n"
    )
}

/// Swimming tomorrow at 17:00 UTC.
fn swimming() -> String {
    let tomorrow = (Utc::now() + TimeDelta::days(1)).format("%Y%m%d");
    format!(
        "BEGIN:VEVENT\r\nUID:swim@school\r\nDTSTART:{tomorrow}T170000Z\r\nDTEND:{tomorrow}T180000Z\r\nSUMMARY:Swimming\r\nEND:VEVENT\r\n"
    )
}

/// About 110 KB: twelve thousand components, each inside the one before.
fn nested_feed() -> String {
    let levels = 12_000;
    format!(
        "BEGIN:VCALENDAR\r\nX-WR-CALNAME:Nested feed\r\n{}{}END:VCALENDAR\r\n",
        "BEGIN:VEVENT\r\n".repeat(levels),
        "END:VEVENT\r\n".repeat(levels)
    )
}

async fn ask(hearth: &Hearth, member: &str, text: &str) -> String {
    let (status, body) = hearth
        .post_json("/inbound", json!({"user_id": member, "text": text}))
        .await;
    assert_eq!(status, 200, "{body}");
    body["reply"].as_str().expect("a reply").to_string()
}

/// `GET /readyz?details=true`: its status and the calendar's component.
async fn calendar_readiness(hearth: &Hearth) -> (u16, Value) {
    let response = reqwest::Client::new()
        .get(format!("{}/readyz?details=true", hearth.base_url))
        .header("X-API-Key", API_KEY)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (
        status,
        body["components"]["calendar:default_assistant"].clone(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_nested_twelve_thousand_deep_is_named_unreadable_and_hearth_stays_up() {
    let nested = CalendarServer::feed(nested_feed());
    let school = CalendarServer::feed(feed("School", &swimming()));
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = subscribed_config(
        folder.path(),
        &llm.base_url(),
        &[nested.url("/deep.ics"), school.url("/school.ics")],
    );
    let env = test_env(&[]);
    let mut hearth = Hearth::spawn(&config, &env);
    wait_for_readyz(&reqwest::Client::new(), &hearth.base_url).await;

    llm.push_many([
        Step::ToolCalls(vec![("search_calendar_events".into(), json!({}))]),
        Step::Reply("One calendar could not be read.".into()),
    ]);
    assert_eq!(
        ask(&hearth, "alice", "what's on this week?").await,
        "One calendar could not be read."
    );
    let result = llm.last_tool_result();
    assert!(
        result.contains("Not searched: Nested feed: the calendar could not be read (its components are nested more than 8 deep"),
        "{result}"
    );
    assert!(result.contains(": Swimming [School]"), "{result}");
    assert_eq!(nested.requests().len(), 1);

    let (status, calendar) = calendar_readiness(&hearth).await;
    assert_eq!(status, 200, "degraded, never unready: {calendar}");
    assert_eq!(calendar["degraded"], true, "{calendar}");
    let detail = calendar["detail"].as_str().unwrap();
    assert!(
        detail.contains("Nested feed: the calendar could not be read"),
        "{detail}"
    );

    // The web page's Calendar: read on an actix-web worker (2 MiB of stack), said plainly.
    let link = web_link(&config, &env, "alice");
    let secret = link.rsplit("/sign-in/link/").next().unwrap();
    let alice = Member::sign_in_with_link(&hearth.base_url, secret).await;
    let page = alice.page("/calendar").await;
    assert!(
        page.contains("Not read: Nested feed: the calendar could not be read (its components are nested more than 8 deep"),
        "{page}"
    );
    assert!(page.contains(": Swimming"), "{page}");
    assert_eq!(nested.requests().len(), 2);

    assert!(hearth.exited().is_none(), "hearth is still running");
    llm.push(Step::Reply("Hello!".into()));
    assert_eq!(ask(&hearth, "bob", "hi").await, "Hello!");
    assert!(hearth.exited().is_none(), "hearth is still running");
}

/// `count` events repeating every five minutes of every hour, a hundred thousand times,
/// from 340 days ago, on every day of the week: with BYDAY, a rule hearth walks from its
/// start to count its times (without it, hearth counts them by whole hours).
fn costly_events(count: usize) -> String {
    let start = (Utc::now() - TimeDelta::days(340)).format("%Y%m%dT%H0000Z");
    let minutes: Vec<String> = (0..60).step_by(5).map(|m| m.to_string()).collect();
    (0..count)
        .map(|n| {
            format!(
                "BEGIN:VEVENT\r\nUID:costly-{n}\r\nDTSTART:{start}\r\nDURATION:PT5M\r\nRRULE:FREQ=HOURLY;BYMINUTE={};BYDAY=MO,TU,WE,TH,FR,SA,SU;COUNT=100000\r\nSUMMARY:Costly {n}\r\nEND:VEVENT\r\n",
                minutes.join(",")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_message_is_answered_while_a_costly_calendar_search_runs() {
    let costly = CalendarServer::feed(feed(
        "Club",
        &format!("{}{}", swimming(), costly_events(400)),
    ));
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = subscribed_config(folder.path(), &llm.base_url(), &[costly.url("/club.ics")]);
    let hearth = Arc::new(Hearth::spawn(&config, &test_env(&[])));
    wait_for_readyz(&reqwest::Client::new(), &hearth.base_url).await;

    // alice's search, bob's plain question, then the answer to alice's search: the model
    // hears them in the order they reach it.
    llm.push_many([
        Step::ToolCalls(vec![("search_calendar_events".into(), json!({}))]),
        Step::Reply("Quick answer.".into()),
        Step::Reply("Here is your week.".into()),
    ]);
    let searching = {
        let hearth = Arc::clone(&hearth);
        tokio::spawn(async move { ask(&hearth, "alice", "what's on this week?").await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while costly.requests().is_empty() {
        assert!(Instant::now() < deadline, "the search never read the feed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The feed is read; its events are being expanded (for seconds on a debug build, until
    // the search's budget ends it). bob asks meanwhile.
    assert_eq!(ask(&hearth, "bob", "quick question").await, "Quick answer.");
    assert_eq!(
        llm.request_count(),
        2,
        "bob was answered before alice's search gave its result to the model"
    );
    assert!(!searching.is_finished(), "alice's search is still running");

    assert_eq!(searching.await.unwrap(), "Here is your week.");
    let result = llm.last_tool_result();
    assert!(result.contains(": Swimming [Club]"), "{result}");
    assert!(
        result.contains("repeats by a rule hearth could not expand (FREQ=HOURLY;BYMINUTE=0,5,10"),
        "{result}"
    );
    assert!(
        result.contains("more repeating events could not be expanded"),
        "{result}"
    );
    // hearth answers on.
    llm.push(Step::Reply("Still here.".into()));
    assert_eq!(ask(&hearth, "alice", "hello?").await, "Still here.");
}

/// A multistatus of `responses` (each `<D:response>` text).
fn multistatus(responses: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">{responses}</D:multistatus>"#
    )
}

fn response(href: &str, props: &str) -> String {
    format!(
        "<D:response><D:href>{href}</D:href><D:propstat><D:prop>{props}</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
    )
}

fn calendar_collection(href: &str, name: &str) -> String {
    response(
        href,
        &format!(
            "<D:resourcetype><D:collection/><C:calendar/></D:resourcetype><D:displayname>{name}</D:displayname>"
        ),
    )
}

fn event_resource(href: &str, summary: &str) -> String {
    let day = (Utc::now() + TimeDelta::days(1)).format("%Y%m%d");
    response(
        href,
        &format!(
            "<D:getetag>\"1\"</D:getetag><C:calendar-data>BEGIN:VCALENDAR&#13;\nBEGIN:VEVENT&#13;\nUID:{summary}&#13;\nDTSTART:{day}T100000Z&#13;\nSUMMARY:{summary}&#13;\nEND:VEVENT&#13;\nEND:VCALENDAR&#13;\n</C:calendar-data>"
        ),
    )
}

/// The profile's calendars on the CalDAV server at `port`, the account `alice`.
fn account_on(port: u16) -> hearth::calendar::ProfileCalendars {
    let config = hearth::config::CalendarConfig {
        caldav: Some(hearth::config::CaldavConfig {
            url: format!("http://127.0.0.1:{port}/"),
            username: "alice".into(),
            password_env: "UNUSED".into(),
            calendars: Vec::new(),
            read_only: true,
        }),
        ical_urls: Vec::new(),
    };
    hearth::calendar::ProfileCalendars::new(
        "family",
        &config,
        Some(hearth::config::Secret::new("the-account-password")),
        Arc::new(hearth::readiness::Readiness::default()),
    )
}

fn this_week() -> hearth::calendar::SearchRange {
    hearth::calendar::SearchRange {
        from: Utc::now(),
        to: Utc::now() + TimeDelta::days(7),
        zone: hearth::local_time::ZoneName::parse("Europe/Berlin").unwrap(),
        words: Vec::new(),
    }
}

/// Searches the account on a server answering with `answer` (given the other server's
/// address); what the search said, and every request each server got.
async fn search_with(
    answer: impl Fn(&Recorded, &str) -> Answer + Send + Sync + 'static,
) -> (String, Vec<Recorded>, Vec<Recorded>) {
    let elsewhere =
        CalendarServer::start(|_| Answer::calendar("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"));
    let other = format!("http://127.0.0.1:{}", elsewhere.port);
    let server = CalendarServer::start(move |request| answer(request, &other));
    let calendars = account_on(server.port);
    let said = match calendars.search(this_week()).await {
        Ok(searched) => {
            let found: Vec<&str> = searched
                .found
                .iter()
                .map(|found| found.occurrence.event.summary.as_str())
                .collect();
            format!("found {found:?}; problems {:?}", searched.problems)
        }
        Err(problem) => problem.to_string(),
    };
    (said, server.requests(), elsewhere.requests())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caldav_server_naming_another_server_never_gets_the_password_sent_there() {
    // The account's principal on another server.
    let (said, asked, elsewhere) = search_with(|_, other| {
        Answer::multistatus(&multistatus(&response(
            "/",
            &format!("<D:current-user-principal><D:href>{other}/alice/</D:href></D:current-user-principal>"),
        )))
    })
    .await;
    assert!(said.contains("pointed to another server"), "{said}");
    assert!(elsewhere.is_empty(), "{elsewhere:?}");
    assert!(asked.iter().all(|request| request.authorization.is_some()));

    // Its calendar home there.
    let (said, _, elsewhere) = search_with(|_, other| {
        Answer::multistatus(&multistatus(&response(
            "/",
            &format!(
                "<C:calendar-home-set><D:href>{other}/calendars/</D:href></C:calendar-home-set>"
            ),
        )))
    })
    .await;
    assert!(said.contains("pointed to another server"), "{said}");
    assert!(elsewhere.is_empty(), "{elsewhere:?}");

    // One calendar of the listing there, and one event of a search there: both left out.
    let (said, asked, elsewhere) = search_with(|request, other| match request.method.as_str() {
        "PROPFIND" if request.path == "/" => Answer::multistatus(&multistatus(&response(
            "/",
            "<C:calendar-home-set><D:href>/calendars/</D:href></C:calendar-home-set>",
        ))),
        "PROPFIND" => Answer::multistatus(&multistatus(&format!(
            "{}{}",
            calendar_collection("/calendars/family/", "Family"),
            calendar_collection(&format!("{other}/calendars/stolen/"), "Stolen")
        ))),
        _ => Answer::multistatus(&multistatus(&format!(
            "{}{}",
            event_resource("/calendars/family/dentist.ics", "Dentist"),
            event_resource(&format!("{other}/calendars/family/x.ics"), "Elsewhere")
        ))),
    })
    .await;
    assert_eq!(said, "found [\"Dentist\"]; problems []");
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(elsewhere.is_empty(), "{elsewhere:?}");

    // A redirect there is not taken.
    let (said, _, elsewhere) = search_with(|request, other| match request.method.as_str() {
        "PROPFIND" => Answer::multistatus(&multistatus(&calendar_collection("/", "Family"))),
        _ => Answer {
            status: 307,
            headers: vec![("Location".into(), format!("{other}/report"))],
            body: String::new(),
        },
    })
    .await;
    assert!(said.contains("answered 307"), "{said}");
    assert!(elsewhere.is_empty(), "{elsewhere:?}");
}
