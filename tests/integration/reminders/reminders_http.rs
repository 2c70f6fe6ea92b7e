//! Reminders over HTTP: a member's reminder fired where no chat shows it waits in
//! `GET /api/reminders` for Done or Snooze, which only that member may give, once; a time
//! in the past is refused with nothing stored; and the time the model reads is the
//! member's own zone.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::reminders::REMIND_TOOLS;
use crate::support::test_config::TestConfig;

async fn start(llm: &ScriptedLlmServer) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .member("alice", |alice| {
            alice.timezone = Some("America/New_York".into())
        })
        .default_tools(&format!("profile_get, profile_update, {REMIND_TOOLS}"))
        .write(folder.path());
    Hearth::start_from(folder, &path, &[]).await
}

/// `GET /api/reminders` for `member`, as JSON.
async fn reminders_of(app: &Hearth, member: &str) -> serde_json::Value {
    let (status, body) = app.get(&format!("/api/reminders?user_id={member}")).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[actix::test]
async fn a_fired_reminder_waits_for_its_member_s_done_over_http_once() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_reminder".into(),
            json!({"text": "stretch", "delay": "PT1S"}),
        )]),
        Step::Reply("Sure.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "remind me to stretch in a second").await,
        "Sure."
    );
    let stored = llm.tool_result_seen(1);
    assert!(stored.contains("(America/New_York)"), "{stored}");

    let deadline = Instant::now() + Duration::from_secs(15);
    let occurrence = loop {
        let listed = reminders_of(&app, "alice").await;
        if let Some(waiting) = listed["waiting"].as_array().and_then(|w| w.first()) {
            assert_eq!(waiting["text"], "stretch");
            break waiting["occurrence"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "never fired: {listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Bob (a parent) sees the family's reminders, but answers none that is not his.
    assert!(
        reminders_of(&app, "bob").await["waiting"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let path = format!("/api/reminders/{occurrence}/done");
    let (status, _) = app.post_json(&path, json!({"user_id": "bob"})).await;
    assert_eq!(status, 404);
    let (status, body) = app.post_json(&path, json!({"user_id": "alice"})).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (200, Some("done")),
        "{body}"
    );
    let (status, body) = app
        .post_json(
            &format!("/api/reminders/{occurrence}/snooze"),
            json!({"user_id": "alice"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = app
        .post_json(
            &format!("/api/reminders/{occurrence}/later"),
            json!({"user_id": "alice"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert!(
        reminders_of(&app, "alice").await["waiting"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    app.stop().await;
}

#[actix::test]
async fn a_time_in_the_past_is_refused_and_nothing_is_stored() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_reminder".into(),
            json!({"text": "the past", "date": "2020-01-01", "time": "08:00"}),
        )]),
        Step::Reply("Hm.".into()),
    ]);
    app.ask("alice", "remind me in 2020").await;
    let refused = llm.tool_result_seen(1);
    assert!(refused.contains("2020-01-01"), "{refused}");
    assert!(refused.contains("past"), "{refused}");
    assert!(
        reminders_of(&app, "alice").await["reminders"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    app.stop().await;
}

#[actix::test]
async fn the_model_reads_the_time_in_the_member_s_own_zone() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm).await;
    llm.push(Step::Reply("Hi Alice.".into()));
    app.ask("alice", "hello").await;
    llm.push(Step::Reply("Hi Bob.".into()));
    app.ask("bob", "hello").await;
    let system = |index: usize| llm.requests()[index].body["messages"][0]["content"].to_string();
    // New York in November is EST; Bob has no zone of his own: the profile's, Berlin (CET).
    assert!(system(0).contains(" EST"), "{}", system(0));
    assert!(system(1).contains(" CET"), "{}", system(1));
    app.stop().await;
}
