//! `/cancel` while a member's plan goes on. It runs in the conversation's lane: it waits for
//! the member's running turn, so it never cancels a plan under the turn that has it loaded,
//! and what it answers is what happened. And a plan cancelled while a turn has it loaded
//! anyway (a write outside the lane) stays cancelled: the turn's write of the older version
//! is refused, the turn stops, and the member is told nothing was done.

use hearth::actors::request_queue::{CancelPending, Cancelled};
use hearth::intents::CANCELLED_REPLY;
use hearth::ports::now_ms;
use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{
    Wire, asked_which_order, classified, example_intents, stages, start, successful_calls,
};
use crate::support::llm_server::{Gate, ScriptedLlmServer, Step};

/// What the plan answers when alice's answer "O-22222" lets it go on.
const PLAN_ANSWER: &str =
    "I'll check order O-22222.\n\nYour order O-22222 is delivered on 2025-10-02.";

fn cancel(member: &str, conversation_key: &str) -> CancelPending {
    CancelPending {
        member_id: member.parse().unwrap(),
        conversation_key: conversation_key.parse().unwrap(),
    }
}

/// Alice's plan waits for her order id; her answer's turn is held at the classifier
/// (`gate`) until the returned future, once the answer's turn runs, has done `meanwhile`.
async fn answer_held_while<T>(
    app: &Hearth,
    llm: &ScriptedLlmServer,
    meanwhile: impl AsyncFnOnce(&Gate) -> T,
) -> (serde_json::Value, T) {
    asked_which_order(app, llm, "alice", "Which order?").await;
    let gate = Gate::new();
    llm.push(Step::Gated(
        gate.clone(),
        Box::new(classified(
            Some("order_status"),
            json!({"order_id": "O-22222"}),
            0.9,
        )),
    ));
    let before = llm.request_count();
    let answer = app.send(json!({"user_id": "alice", "text": "O-22222"}));
    let driven = async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while llm.request_count() == before {
            assert!(
                std::time::Instant::now() < deadline,
                "the answer's turn never reached the classifier"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        meanwhile(&gate).await
    };
    let ((status, body), done) = futures::join!(answer, driven);
    assert_eq!(status, 200, "{body}");
    (body, done)
}

#[actix::test]
async fn cancel_while_the_member_s_plan_goes_on_waits_for_it_and_says_what_happened() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), Wire::OpenAi).await;
    let queue = app.app().queue.clone();
    let (body, cancelled) = answer_held_while(&app, &llm, async |gate: &Gate| {
        // `/cancel` comes while the turn continuing the plan runs (what every channel sends).
        let cancelled = queue.send(cancel("alice", "http:alice"));
        // Handled after it: by now the queue has the cancel.
        let elsewhere = queue.send(cancel("alice", "http:alice/other")).await;
        assert_eq!(elsewhere.unwrap().unwrap(), Cancelled::default());
        gate.open();
        cancelled.await.unwrap().unwrap()
    })
    .await;
    // The plan went on to its answer; the cancel came after it and found nothing waiting,
    // and says so (it never claims a cancel of a plan that ran).
    assert_eq!(body["reply"], PLAN_ANSWER, "{body}");
    assert!(!cancelled.plan, "{cancelled:?}");
    assert_eq!(cancelled.reply(), Some("Nothing is waiting for you."));
    assert_eq!(successful_calls(&stages(&app, "http:alice").await), 1);
    app.stop().await;
}

#[actix::test]
async fn a_plan_cancelled_while_its_turn_has_it_loaded_stops_and_says_so() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), Wire::OpenAi).await;
    let plans = app.app().stores.plans.clone();
    let (body, cancelled) = answer_held_while(&app, &llm, async |gate: &Gate| {
        // Cancelled behind the turn's back, after it loaded the plan.
        let cancelled = plans
            .cancel_open_plans(
                &"http:alice".parse().unwrap(),
                &"alice".parse().unwrap(),
                now_ms(),
            )
            .await
            .unwrap();
        gate.open();
        cancelled
    })
    .await;
    assert_eq!(cancelled, 1);
    // The turn's write of the plan it loaded is refused: it stops, nothing runs.
    assert_eq!(body["reply"], CANCELLED_REPLY, "{body}");
    assert_eq!(successful_calls(&stages(&app, "http:alice").await), 0);
    let id = body["id"].as_str().unwrap();
    let record = app
        .record_when(id, "alice", "answered", std::time::Duration::from_secs(5))
        .await;
    assert_eq!(record["reply"], CANCELLED_REPLY);
    assert_eq!(
        plans
            .open_plan(&"http:alice".parse().unwrap(), &"alice".parse().unwrap())
            .await
            .unwrap(),
        None
    );
    // The next plain message is no answer to a plan any more: the default profile's echo.
    assert_eq!(app.ask("alice", "O-22222").await, "echo: O-22222");
    app.stop().await;
}
