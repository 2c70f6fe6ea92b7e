//! What hearth keeps for a member's next message only for a while, on the paused clock:
//! a plugin call waiting for a missing value (30 minutes), a family-script workflow
//! (`scripts.state_ttl_hours`) and an intents plan asking a parameter (the profile's
//! `confirmation_timeout_seconds`). In time, the next message goes on with it; later, it
//! is as if nothing waited.

use std::path::Path;
use std::time::Duration;

use hearth::ids::ConversationKey;
use hearth::llm::ToolCall;
use hearth::ports::{ShoppingItem, now_ms};
use serde_json::{Value, json};

use super::with_family_scripts;
use crate::support::intents_profile::orders_profile;
use crate::support::intents_profile::{classified_text, example_intents};
use crate::support::paused::{CHANNEL, PausedHearth, run_paused, settle};
use crate::support::test_config::TestConfig;

const MINUTE: Duration = Duration::from_secs(60);

fn call(name: &str, arguments: Value) -> Vec<ToolCall> {
    vec![ToolCall {
        id: format!("call-{name}"),
        name: name.into(),
        arguments,
    }]
}

/// The shipped shopping-list plugin alone in a plugins folder of `folder`; its path.
fn shopping_list_plugin(folder: &Path) -> String {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/shopping_list");
    let copy = folder.join("plugins/shopping_list");
    std::fs::create_dir_all(&copy).unwrap();
    for file in ["plugin.yaml", "config.yml"] {
        std::fs::copy(shipped.join(file), copy.join(file)).unwrap();
    }
    folder.join("plugins").display().to_string()
}

async fn groceries(hearth: &PausedHearth) -> Vec<String> {
    let items: Vec<ShoppingItem> = hearth
        .running
        .stores
        .shopping_lists
        .list("groceries")
        .await
        .unwrap();
    items.into_iter().map(|item| item.name).collect()
}

#[test]
fn a_plugin_call_waiting_for_a_value_is_completed_within_thirty_minutes_only() {
    run_paused(|| async {
        let plugins = tempfile::tempdir().unwrap();
        let plugins_dir = shopping_list_plugin(plugins.path());
        let mut hearth = PausedHearth::start(&[
            ("HEARTH__PLUGINS_DIR", &plugins_dir),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "route_to_plugin",
            ),
        ])
        .await;
        let add = json!({"plugin_id": "shopping_list", "capability_id": "add", "parameters": {}});
        // Both are asked what to add, at once.
        for member in ["alice", "bob"] {
            hearth
                .model
                .script
                .push_tool_calls(call("route_to_plugin", add.clone()));
            hearth.model.script.push_reply("What should I add?");
            hearth.say(member, "Put something on the list").await;
            assert_eq!(hearth.next_reply().await.1.text, "What should I add?");
        }

        // Bob answers within the half hour: his answer completes the call, no model asked.
        tokio::time::sleep(29 * MINUTE).await;
        let asked = hearth.model.calls().len();
        hearth.say("bob", "milk").await;
        hearth.next_reply().await;
        assert_eq!(groceries(&hearth).await, ["milk"]);
        assert_eq!(hearth.model.calls().len(), asked);

        // Alice answers after it: her message is a new turn for the model.
        tokio::time::sleep(2 * MINUTE).await;
        hearth.say("alice", "eggs").await;
        assert_eq!(hearth.next_reply().await.1.text, "echo: eggs");
        assert_eq!(groceries(&hearth).await, ["milk"]);
    });
}

#[test]
fn a_family_script_workflow_is_forgotten_past_its_time_to_live() {
    run_paused(|| async {
        let ttl = ("HEARTH__SCRIPTS__STATE_TTL_HOURS", "2");
        let (mut hearth, _scripts, _folder) = with_family_scripts(ttl).await;
        let model = hearth.model.clone();
        model
            .script
            .push_tool_calls(call("select_script", json!({"name": "backup_photos"})));
        model.script.push_reply("Selected.");
        hearth.say("alice", "back up the photos").await;
        assert_eq!(hearth.next_reply().await.1.text, "Selected.");

        // Left alone for just under two hours: still where the member left it.
        tokio::time::sleep(119 * MINUTE).await;
        model.script.push_reply("Shall I show the parameters?");
        hearth.say("alice", "where were we?").await;
        hearth.next_reply().await;
        let system = model.last_system_prompt();
        assert!(
            system.contains("- selected script: backup_photos"),
            "{system}"
        );

        // Two hours after its last change: forgotten, so nothing can run from it.
        tokio::time::sleep(2 * MINUTE).await;
        model.script.push_tool_calls(call("run_script", json!({})));
        model.script.push_reply("Nothing is selected.");
        hearth.say("alice", "run it").await;
        assert_eq!(hearth.next_reply().await.1.text, "Nothing is selected.");
        let system = model.last_system_prompt();
        assert!(!system.contains("Family script workflow"), "{system}");
        let result = model.last_tool_result();
        assert!(
            result.starts_with("refused: no script is selected yet"),
            "{result}"
        );
    });
}

#[test]
fn an_intents_question_left_unanswered_lets_later_messages_go_where_they_would() {
    run_paused(|| async {
        let profile = orders_profile(
            &example_intents(),
            &[("confirmation_timeout_seconds", 300.into())],
        );
        let with_orders = |config: TestConfig, _: &Path| config.profile(profile);
        let mut hearth = PausedHearth::start_with(&[], with_orders).await;
        let model = hearth.model.clone();
        model
            .script
            .push_reply(classified_text(Some("order_status"), json!({}), 0.9));
        model.script.push_reply("Which order?");
        hearth.say("alice", "/orders check my order").await;
        assert_eq!(hearth.next_reply().await.1.text, "Which order?");
        let plans = &hearth.running.stores.plans;
        let waiting = plans
            .open_plan(
                &ConversationKey::new(CHANNEL, "alice").unwrap(),
                &"alice".parse().unwrap(),
            )
            .await
            .unwrap();
        let waiting = waiting.expect("the plan waits for alice");

        tokio::time::sleep(299 * Duration::from_secs(1)).await;
        assert!(waiting.awaits_member(now_ms()));
        // Past the profile's confirmation_timeout_seconds the question no longer waits: the
        // message goes to the default profile, and only there.
        tokio::time::sleep(2 * Duration::from_secs(1)).await;
        assert!(!waiting.awaits_member(now_ms()));
        let asked = model.calls().len();
        hearth.say("alice", "hello").await;
        assert_eq!(hearth.next_reply().await.1.text, "echo: hello");
        settle().await;
        assert_eq!(model.calls().len(), asked + 1);
        let system = model.last_system_prompt();
        assert!(system.starts_with("You are a test assistant."), "{system}");
    });
}
