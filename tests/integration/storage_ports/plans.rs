//! The `PlanExecutions` port: plans stored, found open, and cancelled.

use hearth::storage::Stores;

use super::key;
use super::member;

adapter_suite!(plans_are_stored_found_open_and_cancelled,);

pub(super) fn plan(
    id: &str,
    member: &str,
    status: hearth::ports::StepStatus,
    created_at_ms: i64,
) -> hearth::ports::PlanExecution {
    use hearth::ports::{PlanStep, StepExecution};
    let mut ask = StepExecution::pending(PlanStep::AskUser {
        param: "order_id".into(),
        prompt: "Which order?".into(),
    });
    ask.status = status;
    hearth::ports::PlanExecution {
        plan_id: id.into(),
        intent_id: "order_status".into(),
        conversation_key: key("http:alice"),
        member_id: member.parse().unwrap(),
        profile_id: "orders".into(),
        params: [
            ("note".to_string(), serde_json::json!("x")),
            ("amount".to_string(), serde_json::json!(12.5)),
        ]
        .into(),
        steps: vec![
            ask,
            StepExecution::pending(PlanStep::ToolCall {
                tool_name: "check_order_status".into(),
                params: Default::default(),
            }),
        ],
        current_index: 0,
        created_at_ms,
        updated_at_ms: created_at_ms,
        waiting_until_ms: None,
        answer: None,
        version: 0,
    }
}

async fn plans_are_stored_found_open_and_cancelled(stores: &Stores) {
    use hearth::ports::{Prunable, StepStatus};
    let plans = &stores.plans;
    assert_eq!(
        plans
            .open_plan(&key("http:alice"), &member("alice"))
            .await
            .unwrap(),
        None
    );
    let mut older = plan("p1", "alice", StepStatus::WaitingUser, 1_000);
    let mut newer = plan("p2", "alice", StepStatus::WaitingUser, 2_000);
    let mut done = plan("p3", "alice", StepStatus::Completed, 3_000);
    let mut bobs = plan("p4", "bob", StepStatus::WaitingUser, 4_000);
    for each in [&mut older, &mut newer, &mut done, &mut bobs] {
        plans.save_plan(each).await.unwrap();
        assert_eq!(each.version, 1, "stored as its first version");
    }
    assert_eq!(plans.plan("p3").await.unwrap().as_ref(), Some(&done));
    assert_eq!(plans.plan("nope").await.unwrap(), None);
    // The newest open plan of that member there; not another member's, not a finished one.
    assert_eq!(
        plans
            .open_plan(&key("http:alice"), &member("alice"))
            .await
            .unwrap(),
        Some(newer.clone())
    );
    assert_eq!(
        plans
            .open_plan(&key("http:alice"), &member("bob"))
            .await
            .unwrap(),
        Some(bobs.clone())
    );
    assert_eq!(
        plans
            .open_plan(&key("telegram:1"), &member("alice"))
            .await
            .unwrap(),
        None
    );
    // Saving again replaces: answered, the plan is no longer open.
    let mut answered = newer.clone();
    answered.steps[0].status = StepStatus::Completed;
    answered.current_index = 1;
    plans.save_plan(&mut answered).await.unwrap();
    assert_eq!(
        plans
            .open_plan(&key("http:alice"), &member("alice"))
            .await
            .unwrap(),
        Some(older.clone())
    );
    assert_eq!(
        plans
            .cancel_open_plans(&key("http:alice"), &member("alice"), 9_000)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        plans
            .open_plan(&key("http:alice"), &member("alice"))
            .await
            .unwrap(),
        None
    );
    let cancelled = plans.plan("p1").await.unwrap().unwrap();
    assert_eq!(cancelled.status(), StepStatus::Canceled);
    assert_eq!(cancelled.steps[0].ended_at_ms, Some(9_000));
    assert_eq!(cancelled.steps[1].status, StepStatus::Canceled);
    assert_eq!(cancelled.updated_at_ms, 9_000);
    assert_eq!(
        plans
            .cancel_open_plans(&key("http:alice"), &member("alice"), 9_500)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        plans
            .open_plan(&key("http:alice"), &member("bob"))
            .await
            .unwrap(),
        Some(bobs)
    );
    // Finished plans (completed, failed, canceled) go with retention, the oldest first;
    // the others stay.
    let retention = &stores.retention;
    let prune =
        |before_ms: i64, batch: usize| retention.prune(Prunable::FinishedPlans, before_ms, batch);
    assert_eq!(prune(3_000, 10).await.unwrap(), 0);
    assert_eq!(prune(10_000, 1).await.unwrap(), 1);
    assert_eq!(
        plans.plan("p3").await.unwrap(),
        None,
        "the oldest finished first"
    );
    assert_eq!(prune(10_000, 10).await.unwrap(), 1);
    assert_eq!(plans.plan("p1").await.unwrap(), None);
    assert!(plans.plan("p2").await.unwrap().is_some(), "not finished");
    assert!(plans.plan("p4").await.unwrap().is_some(), "still open");
}
