//! Where a member's message goes while an intents plan waits for their answer: an answer
//! continues the plan (`engine.rs`); a message the plan's profile cannot place goes to the
//! profile it would have gone to without the plan (the default one), and the plan stops
//! waiting.

use hearth::intents::STAGES;
use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{
    Wire, asked_which_order, classified, example_intents, orders_profile, stage_names, stages,
    start,
};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::test_config::TestConfig;

#[actix::test]
async fn a_message_the_waiting_plan_cannot_place_goes_to_the_default_profile() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    // The example's policy stops a child's request at night in the profile's timezone: bob
    // is a parent here, so what this test sees does not depend on the hour it runs at.
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .parent("bob")
        .profile(orders_profile(&example_intents(), &[]))
        .write(folder.path());
    let app = Hearth::start_from(folder, &path, &[]).await;
    asked_which_order(&app, &llm, "alice", "Which order?").await;
    // Bob's plan waits too, in his own conversation.
    asked_which_order(&app, &llm, "bob", "Which order, Bob?").await;

    // Not an answer, and no intent of /orders: the default profile (an echo here) answers.
    llm.push(classified(None, json!({}), 0.2));
    assert_eq!(
        app.ask("alice", "what's for dinner?").await,
        "echo: what's for dinner?"
    );
    // Alice's plan stopped waiting: an order id now is an ordinary message too.
    assert_eq!(app.ask("alice", "O-12345").await, "echo: O-12345");
    // Bob's still waits, and his answer continues it.
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-12345"}),
        0.9,
    ));
    assert_eq!(
        app.ask("bob", "O-12345").await,
        "I'll check order O-12345.\n\nYour order O-12345 is shipped via UPS, ETA 2025-10-20."
    );

    // The message handed on has its ten stages, the reason at plan_created; the intents
    // profile stored nothing of it, the default profile stored it once.
    let events = stages(&app, "http:alice").await;
    let names = stage_names(&events);
    assert_eq!(names.len(), 20, "{names:?}");
    assert_eq!(names[10..], STAGES);
    let reason = events[14]["payload"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("handed back"), "{}", events[14]);
    let history = app
        .app()
        .stores
        .memory
        .recent(&"http:alice".parse().unwrap(), 100, 0)
        .await
        .unwrap();
    let dinner: Vec<_> = history
        .iter()
        .filter(|entry| entry.content.contains("what's for dinner?"))
        .map(|entry| (entry.profile_id.as_str(), entry.content.as_str()))
        .collect();
    assert_eq!(
        dinner,
        [
            ("default_assistant", "what's for dinner?"),
            ("default_assistant", "echo: what's for dinner?")
        ]
    );
    app.stop().await;
}

#[actix::test]
async fn an_answer_the_classifier_is_not_sure_of_does_not_continue_the_plan() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), Wire::OpenAi).await;
    asked_which_order(&app, &llm, "alice", "Which order?").await;
    // The plan's intent, below min_confidence (0.5): no order is looked up with it.
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "the blue one"}),
        0.2,
    ));
    assert_eq!(app.ask("alice", "the blue one").await, "echo: the blue one");
    let events = stages(&app, "http:alice").await;
    assert!(
        events
            .iter()
            .all(|event| event["stage"] != "tool_execute" || event["payload"]["skipped"] == true),
        "{events:?}"
    );
    app.stop().await;
}
