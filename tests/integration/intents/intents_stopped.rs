//! What a stop between two writes of the intents engine leaves, met by the restart. The
//! database is written as hearth leaves it at that instant (the message accepted and not
//! answered, its plan journaled), then hearth starts on it:
//! - the plan had ended and its answer was not yet stored with the message: the same
//!   answer is given, and nothing is run or asked of the model again;
//! - the plan had stopped for the member's confirmation, which was not yet stored: nobody
//!   saw it, so it is asked anew, and the approved call runs once;
//! - the member had approved, and the resumed turn had taken the answer, but the call had
//!   not started (its step still `blocked`): nothing is in doubt, and since the answer is
//!   not known any more it is asked anew, never told as of unknown outcome.

use std::path::Path;
use std::time::Duration;

use hearth::ports::{
    AnswerPlace, Inbound, PendingConfirmation, PlanExecution, PlanStep, StepExecution, StepStatus,
};
use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{example_intents, orders_config, orders_config_confirming};
use crate::support::llm_server::ScriptedLlmServer;

const ASKED: &str = "/orders where is O-12345?";
const PRE: &str = "I'll check order O-12345.";
const POST: &str = "Your order O-12345 is shipped via UPS, ETA 2025-10-20.";

/// A step of the `order_status` plan for O-12345 with `status`.
fn step(step: PlanStep, status: StepStatus) -> StepExecution {
    StepExecution {
        status,
        ..StepExecution::pending(step)
    }
}

fn order_status_plan(steps: Vec<StepExecution>, current_index: usize) -> PlanExecution {
    PlanExecution {
        plan_id: "plan-stopped".into(),
        intent_id: "order_status".into(),
        conversation_key: "http:alice".parse().unwrap(),
        member_id: "alice".parse().unwrap(),
        profile_id: "orders".into(),
        params: [("order_id".to_string(), json!("O-12345"))].into(),
        steps,
        current_index,
        created_at_ms: 1,
        updated_at_ms: 2,
        waiting_until_ms: None,
        answer: None,
        version: 0,
    }
}

fn pre() -> PlanStep {
    PlanStep::Respond {
        when: "pre".into(),
        message: PRE.into(),
    }
}

fn call() -> PlanStep {
    PlanStep::ToolCall {
        tool_name: "check_order_status".into(),
        params: [("order_id".to_string(), json!("O-12345"))].into(),
    }
}

fn inbound() -> Inbound {
    Inbound {
        id: "stopped-1".into(),
        conversation: "http:alice".parse().unwrap(),
        member_id: "alice".parse().unwrap(),
        text: ASKED.into(),
        platform_event_id: None,
        received_at_ms: 1,
        extras: Default::default(),
    }
}

/// The database in `folder` as a stop leaves it: alice's message accepted and unanswered,
/// its turn journaled on `plan`.
async fn stopped_with(folder: &Path, plan: &PlanExecution) {
    let database = format!("sqlite://{}", folder.join("hearth.db").display());
    let stores = hearth::storage::open(&database, 2).await.unwrap();
    stores.inbox.accept(&inbound()).await.unwrap();
    stores.plans.save_plan(&mut plan.clone()).await.unwrap();
    stores
        .turn_journal
        .save_turn("stopped-1", &json!({"intents_plan": plan.plan_id}))
        .await
        .unwrap();
}

#[actix::test]
async fn an_ended_plan_whose_answer_was_not_stored_gives_the_same_answer() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let answer = format!("{PRE}\n\n{POST}");
    let mut done = step(call(), StepStatus::Completed);
    done.result = Some(r#"{"status": "shipped"}"#.into());
    let mut plan = order_status_plan(
        vec![
            step(pre(), StepStatus::Completed),
            done,
            step(
                PlanStep::Respond {
                    when: "post".into(),
                    message: POST.into(),
                },
                StepStatus::Completed,
            ),
        ],
        3,
    );
    plan.answer = Some(answer.clone());
    stopped_with(folder.path(), &plan).await;

    let path = orders_config(folder.path(), &llm, &example_intents());
    let app = Hearth::start_from(folder, &path, &[]).await;
    let record = app
        .record_when("stopped-1", "alice", "answered", Duration::from_secs(10))
        .await;
    assert_eq!(record["reply"], answer.as_str());
    assert_eq!(
        llm.request_count(),
        0,
        "nothing was asked of the model again"
    );
    app.stop().await;
}

#[actix::test]
async fn a_confirmation_that_was_never_stored_is_asked_anew() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let plan = blocked_plan();
    stopped_with(folder.path(), &plan).await;
    asked_anew_and_approved(folder, &llm).await;
}

/// The `order_status` plan for O-12345 stopped at its call, `blocked` for a confirmation.
fn blocked_plan() -> PlanExecution {
    order_status_plan(
        vec![
            step(pre(), StepStatus::Completed),
            step(call(), StepStatus::Blocked),
            step(
                PlanStep::Respond {
                    when: "post".into(),
                    message: String::new(),
                },
                StepStatus::Pending,
            ),
        ],
        1,
    )
}

#[actix::test]
async fn an_approval_taken_before_the_call_started_is_asked_anew_not_told_as_unknown() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let plan = blocked_plan();
    {
        let database = format!("sqlite://{}", folder.path().join("hearth.db").display());
        let stores = hearth::storage::open(&database, 2).await.unwrap();
        stores.inbox.accept(&inbound()).await.unwrap();
        stores.plans.save_plan(&mut plan.clone()).await.unwrap();
        let confirmation = PendingConfirmation {
            id: "c-taken".parse().unwrap(),
            inbox_id: "stopped-1".into(),
            member_id: "alice".parse().unwrap(),
            conversation: "http:alice".parse().unwrap(),
            profile_id: "orders".into(),
            tool_name: "check_order_status".into(),
            arguments: json!({"order_id": "O-12345"}),
            prompt: "Run check_order_status?\n• order_id: O-12345".into(),
            turn_state: json!({"intents_plan": plan.plan_id}),
            expires_at_ms: i64::MAX,
            created_at_ms: 2,
            approvers: Vec::new(),
        };
        stores.pending.suspend(&confirmation, &[]).await.unwrap();
        stores
            .pending
            .answer(
                &"c-taken".parse().unwrap(),
                &"alice".parse().unwrap(),
                &AnswerPlace::Channel("http".into()),
                true,
                3,
            )
            .await
            .unwrap()
            .unwrap();
        // The resumed turn took the answer and journaled its plan; hearth stopped there.
        stores
            .pending
            .consume(&"c-taken".parse().unwrap())
            .await
            .unwrap();
        stores
            .turn_journal
            .save_turn("stopped-1", &json!({"intents_plan": plan.plan_id}))
            .await
            .unwrap();
    }
    asked_anew_and_approved(folder, &llm).await;
}

/// The stopped message once it waits for a confirmation asked by this start (not one
/// answered before it).
async fn asked_anew(app: &Hearth) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = app.get("/inbound/stopped-1?user_id=alice").await;
        let record: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let id = record["confirmation"]["id"].as_str().unwrap_or("c-taken");
        if record["status"] == "suspended" && id != "c-taken" {
            return record;
        }
        assert!(
            record["status"] != "answered" && std::time::Instant::now() < deadline,
            "the confirmation was not asked anew: {record}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// hearth starts on `folder` with `check_order_status` asking: the stopped message asks its
/// confirmation anew, and approving it runs the call once, for the whole answer.
async fn asked_anew_and_approved(folder: tempfile::TempDir, llm: &ScriptedLlmServer) {
    let path = orders_config_confirming(folder.path(), llm, &example_intents());
    let app = Hearth::start_from(folder, &path, &[]).await;
    let record = asked_anew(&app).await;
    let confirmation = &record["confirmation"];
    assert_eq!(
        confirmation["prompt"], "Run check_order_status?\n• order_id: O-12345",
        "{record}"
    );
    let (status, body) = app
        .confirm(
            json!({"confirmation_id": confirmation["id"], "user_id": "alice", "approve": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], format!("{PRE}\n\n{POST}"));
    assert_eq!(llm.request_count(), 0);
    let events = crate::support::intents_profile::stages(&app, "http:alice").await;
    assert_eq!(
        crate::support::intents_profile::successful_calls(&events),
        1
    );
    app.stop().await;
}
