//! A confirmation's time on the paused clock: unanswered, it expires at its deadline
//! (`confirmation_timeout_seconds`, the asking profile's: a delegated turn's target's), the
//! member is told, the turn goes on with the expired outcome (a family script's own) and a
//! late answer is refused; one answered behind the queue's back (its turn never put back in
//! its lane) is resumed within `STUCK_CHECK_EVERY`.

use std::path::Path;
use std::time::Duration;

use hearth::actors::processing::EXPIRED_RESULT;
use hearth::actors::request_queue::{AnswerError, ReplyKind, STUCK_CHECK_EVERY};
use hearth::ids::ConversationKey;
use hearth::llm::ToolCall;
use hearth::ports::{AnswerPlace, AnswerRefused, InboxStatus, now_ms};
use hearth::scripts::{RUN_DECLINED, RUN_EXPIRED};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::with_family_scripts;
use crate::support::family_scripts::runs;
use crate::support::paused::{CHANNEL, PausedHearth, run_paused};
use crate::support::test_config::{ProfileParts, TestConfig};
use crate::support::tool_lists::{DELEGATION_TOOLS, delegation_profiles, secure_ops};

const TIMEOUT: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__CONFIRMATION_TIMEOUT_SECONDS",
    "300",
);
const CONFIRM_PROFILE_UPDATE: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
    "profile_update",
);

fn call(name: &str, arguments: Value) -> Vec<ToolCall> {
    vec![ToolCall {
        id: format!("call-{name}"),
        name: name.into(),
        arguments,
    }]
}

/// Alice asks to store her new address; the model calls `profile_update`, which asks her.
/// The confirmation's id and its deadline, and the message's inbox id.
async fn asked_to_store_the_address(hearth: &mut PausedHearth) -> (String, i64, String) {
    let update = json!({"key": "address", "value": "5 Ash Way"});
    hearth
        .model
        .script
        .push_tool_calls(call("profile_update", update));
    asked(hearth, "I moved to 5 Ash Way").await
}

/// Alice writes `text`, and her turn asks her to confirm something. The confirmation's id,
/// its deadline, and the message's inbox id.
async fn asked(hearth: &mut PausedHearth, text: &str) -> (String, i64, String) {
    let inbox_id = hearth.say("alice", text).await;
    let (_, prompt) = hearth.next_reply().await;
    let ReplyKind::AskConfirmation {
        confirmation_id,
        expires_at_ms,
    } = prompt.kind
    else {
        panic!("not a confirmation: {prompt:?}");
    };
    (confirmation_id.to_string(), expires_at_ms, inbox_id)
}

#[test]
fn an_unanswered_confirmation_expires_at_its_deadline_and_the_turn_goes_on() {
    run_paused(|| async {
        let mut hearth = PausedHearth::start(&[CONFIRM_PROFILE_UPDATE, TIMEOUT]).await;
        let (id, deadline_ms, inbox_id) = asked_to_store_the_address(&mut hearth).await;
        let asked_at = Instant::now();
        assert_eq!(
            deadline_ms - now_ms(),
            300_000,
            "confirmation_timeout_seconds"
        );
        hearth.model.script.push_reply("Nothing was changed.");

        // The member is told when the deadline passes, not before.
        told_expired(&mut hearth, &id, asked_at, 300).await;

        // The turn goes on with the expired outcome, and nothing was stored.
        let (_, answer) = hearth.next_reply().await;
        assert_eq!(
            (answer.kind, answer.text.as_str()),
            (ReplyKind::Answer, "Nothing was changed.")
        );
        assert_eq!(hearth.model.last_tool_result(), EXPIRED_RESULT);
        let facts = hearth
            .running
            .stores
            .profiles
            .get(&"alice".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(facts.get("address"), None);
        assert_eq!(hearth.record(&inbox_id).await.status, InboxStatus::Answered);

        // A late answer counts for nothing.
        let late = hearth.answer(&id, "alice", true).await;
        assert!(
            matches!(late, Err(AnswerError::Refused(AnswerRefused::Expired))),
            "{late:?}"
        );
    });
}

#[test]
fn an_answered_confirmation_whose_turn_did_not_resume_is_resumed_by_the_periodic_check() {
    run_paused(|| async {
        let mut hearth = PausedHearth::start(&[CONFIRM_PROFILE_UPDATE, TIMEOUT]).await;
        let (id, _, inbox_id) = asked_to_store_the_address(&mut hearth).await;
        hearth.model.script.push_reply("Stored.");
        // Answered in storage only, as when reading its message failed right after the
        // answer: the queue did not put the turn back in its lane.
        let place = AnswerPlace::Conversation(ConversationKey::new(CHANNEL, "alice").unwrap());
        let pending = &hearth.running.stores.pending;
        pending
            .answer(
                &id.parse().unwrap(),
                &"alice".parse().unwrap(),
                &place,
                true,
                now_ms(),
            )
            .await
            .unwrap()
            .unwrap();
        let answered_at = Instant::now();

        let (resumed_at, answer) = hearth.next_reply().await;
        assert_eq!(
            (answer.kind, answer.text.as_str()),
            (ReplyKind::Answer, "Stored.")
        );
        assert!(
            resumed_at - answered_at <= STUCK_CHECK_EVERY,
            "resumed after {:?}",
            resumed_at - answered_at
        );
        let facts = hearth
            .running
            .stores
            .profiles
            .get(&"alice".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(facts.get("address").map(String::as_str), Some("5 Ash Way"));
        assert_eq!(hearth.record(&inbox_id).await.status, InboxStatus::Answered);

        // Resumed once: the next checks find nothing to do.
        tokio::time::sleep(STUCK_CHECK_EVERY * 4).await;
        assert!(!hearth.has_reply());
        assert_eq!(hearth.model.calls().len(), 2);
    });
}

/// The next reply tells the member confirmation `id` expired, `timeout` after `asked_at`
/// (when its deadline passed, not before).
async fn told_expired(hearth: &mut PausedHearth, id: &str, asked_at: Instant, timeout: u64) {
    let (told_at, told) = hearth.next_reply().await;
    let expired = ReplyKind::ConfirmationExpired {
        confirmation_id: id.parse().unwrap(),
    };
    assert_eq!(
        (told.kind, told.text.as_str()),
        (expired, "⌛ Expired: nothing was done.")
    );
    let waited = told_at - asked_at;
    let deadline = Duration::from_secs(timeout);
    assert!(
        (deadline..deadline + Duration::from_secs(1)).contains(&waited),
        "told after {waited:?}"
    );
}

#[test]
fn a_delegated_question_expires_on_the_target_profile_s_timeout() {
    run_paused(|| async {
        let secure_ops = secure_ops().processing(&[("confirmation_timeout_seconds", 120.into())]);
        let with_profiles = |config: TestConfig, _: &Path| {
            config.profiles(&delegation_profiles()).profile(secure_ops)
        };
        let mut hearth =
            PausedHearth::start_with(&[DELEGATION_TOOLS, TIMEOUT], with_profiles).await;
        let model = hearth.model.clone();
        let request = json!({"target_service_id": "secure_ops",
                             "user_request": "save my address: 5 Ash Way"});
        model
            .script
            .push_tool_calls(call("delegate_to_service", request));
        model.script.push_tool_calls(call(
            "profile_update",
            json!({"key": "address", "value": "5 Ash Way"}),
        ));
        let (id, _, inbox_id) = asked(&mut hearth, "I moved to 5 Ash Way").await;
        let asked_at = Instant::now();
        model.script.push_reply("No answer came; nothing saved.");
        model.script.push_reply("It timed out.");

        told_expired(&mut hearth, &id, asked_at, 120).await;
        let (_, answer) = hearth.next_reply().await;
        assert_eq!(answer.text, "It timed out.");
        // The target's model was told it expired; the parent's heard the target's words.
        let requests = model.script.requests();
        let target_saw = &requests[requests.len() - 2];
        let result = target_saw.messages.last().unwrap();
        assert_eq!(result.content, EXPIRED_RESULT);
        let facts = hearth
            .running
            .stores
            .profiles
            .get(&"alice".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(facts.get("address"), None);
        assert_eq!(hearth.record(&inbox_id).await.status, InboxStatus::Answered);
    });
}

#[test]
fn an_unapproved_family_script_run_expires_and_nothing_runs() {
    run_paused(|| async {
        let (mut hearth, scripts, _folder) = with_family_scripts(TIMEOUT).await;
        let model = hearth.model.clone();
        model
            .script
            .push_tool_calls(call("select_script", json!({"name": "backup_photos"})));
        model
            .script
            .push_tool_calls(call("get_script_parameters", json!({})));
        let no_changes = json!({"changes": {}});
        model
            .script
            .push_tool_calls(call("set_script_parameters", no_changes));
        model.script.push_tool_calls(call("run_script", json!({})));
        let (id, _, inbox_id) = asked(&mut hearth, "run backup_photos").await;
        let asked_at = Instant::now();
        model.script.push_reply("Too late.");

        told_expired(&mut hearth, &id, asked_at, 300).await;
        let (_, answer) = hearth.next_reply().await;
        assert_eq!(answer.text, "Too late.");
        assert_eq!(model.last_tool_result(), RUN_EXPIRED);
        assert_ne!(RUN_EXPIRED, RUN_DECLINED);
        assert!(runs(&scripts).is_empty());
        assert_eq!(hearth.record(&inbox_id).await.status, InboxStatus::Answered);
    });
}
