//! The `ScriptWorkflows` port: a member's workflow replaced, per conversation and member, and
//! not handed out once older than the time-to-live asked for.

use hearth::ports::{ScriptWorkflow, StorageError};
use hearth::storage::Stores;
use serde_json::json;

use super::{T0, key, member};

adapter_suite!(
    script_workflow_put_replaces_and_is_per_conversation_and_member,
    script_workflow_older_than_the_ttl_is_not_handed_out,
);

pub(super) fn workflow(
    conversation_key: &str,
    member_id: &str,
    step: &str,
    at_ms: i64,
) -> ScriptWorkflow {
    ScriptWorkflow {
        conversation_key: key(conversation_key),
        member_id: member_id.parse().unwrap(),
        state: json!({"selected": "backup_photos", "next_action": step,
                      "final_parameters": {"album": "Ü \"summer\"", "keep_days": 7.5}}),
        updated_at_ms: at_ms,
    }
}

async fn script_workflow_put_replaces_and_is_per_conversation_and_member(stores: &Stores) {
    let workflows = &stores.script_workflows;
    workflows
        .put(&workflow("telegram:1", "alice", "present_parameters", T0))
        .await
        .unwrap();
    let later = workflow("telegram:1", "alice", "confirm_execution", T0 + 5);
    workflows.put(&later).await.unwrap();
    let bobs = workflow("telegram:1", "bob", "ask_for_script_choice", T0);
    let elsewhere = workflow("http:alice", "alice", "summarize_result", T0);
    workflows.put(&bobs).await.unwrap();
    workflows.put(&elsewhere).await.unwrap();
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("alice"), 0)
            .await
            .unwrap(),
        Some(later)
    );
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("bob"), 0)
            .await
            .unwrap(),
        Some(bobs)
    );
    assert_eq!(
        workflows
            .get(&key("http:alice"), &member("alice"), 0)
            .await
            .unwrap(),
        Some(elsewhere.clone())
    );
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("carol"), 0)
            .await
            .unwrap(),
        None
    );
    assert!(
        workflows
            .clear(&key("telegram:1"), &member("alice"))
            .await
            .unwrap()
    );
    assert!(
        !workflows
            .clear(&key("telegram:1"), &member("alice"))
            .await
            .unwrap()
    );
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("alice"), 0)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        workflows
            .get(&key("http:alice"), &member("alice"), 0)
            .await
            .unwrap(),
        Some(elsewhere)
    );
    let not_an_object = ScriptWorkflow {
        state: json!(["no"]),
        ..workflow("telegram:1", "alice", "none", T0)
    };
    assert!(matches!(
        workflows.put(&not_an_object).await,
        Err(StorageError::Invalid(_))
    ));
}

async fn script_workflow_older_than_the_ttl_is_not_handed_out(stores: &Stores) {
    let workflows = &stores.script_workflows;
    let old = workflow("telegram:1", "alice", "present_parameters", T0);
    let fresh = workflow("telegram:1", "bob", "present_parameters", T0 + 100);
    workflows.put(&old).await.unwrap();
    workflows.put(&fresh).await.unwrap();
    // Fresh from exactly its update on.
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("alice"), T0)
            .await
            .unwrap(),
        Some(old)
    );
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("alice"), T0 + 1)
            .await
            .unwrap(),
        None
    );
    assert_eq!(workflows.expire_stale(T0 + 1).await.unwrap(), 1);
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("alice"), 0)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        workflows
            .get(&key("telegram:1"), &member("bob"), 0)
            .await
            .unwrap(),
        Some(fresh)
    );
    assert_eq!(workflows.expire_stale(T0 + 1).await.unwrap(), 0);
}
