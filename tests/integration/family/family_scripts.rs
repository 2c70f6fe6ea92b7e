//! Family scripts end to end over HTTP with the scripted LLM: the whole flow (list →
//! select → show parameters → change one → approve → run → result), the order enforced
//! by the tools, the workflow state surviving a restart and shown to the model every
//! turn, denied approvals, parameter type errors, a workflow forgotten past its TTL (an
//! expired approval and the TTL passing: `paused/`). `family_scripts_examples.rs` checks manifests; `family_scripts_running.rs` runs scripts that
//! fail, time out, print too much, or are running when hearth is killed.

use std::path::Path;

use serde_json::json;

use crate::support::family_scripts::{
    approve_run, ask_to_run, call, confirm, last_system_prompt, runs, say, start,
};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use hearth::ports::{ScriptWorkflow, now_ms};
use hearth::scripts::RUN_DECLINED;

/// Every tool result of the model's last request, in order.
fn tool_results(llm: &ScriptedLlmServer) -> Vec<String> {
    let requests = llm.requests();
    requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[actix::test]
async fn a_member_finds_changes_approves_and_runs_a_script() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;

    llm.push_many([
        call(
            "list_available_scripts",
            json!({"query": "back up photos", "task": "back up the photos"}),
        ),
        Step::Reply("I can run backup_photos. Shall I?".into()),
    ]);
    say(&app, "please back up the photos").await;
    let found = llm.last_tool_result();
    assert!(
        found.contains("- backup_photos: Back up the family photos"),
        "{found}"
    );
    assert!(!found.contains("water_garden"), "{found}");

    // Next turn: the model is told where the workflow stands.
    llm.push_many([
        call("select_script", json!({"name": "backup_photos"})),
        call("get_script_parameters", json!({})),
        Step::Reply("These are the parameters.".into()),
    ]);
    say(&app, "yes, that one").await;
    let first_of_turn = &llm.requests()[llm.requests().len() - 3];
    let system = first_of_turn.body["messages"][0]["content"]
        .as_str()
        .unwrap();
    assert!(system.contains("- task: back up the photos"), "{system}");
    assert!(
        system.contains("- scripts offered: backup_photos"),
        "{system}"
    );
    assert!(
        system.contains("next step: ask_for_script_choice"),
        "{system}"
    );
    let shown = llm.last_tool_result();
    assert!(
        shown.contains("- destination (enum of usb_drive | nas): usb_drive"),
        "{shown}"
    );
    assert!(shown.contains("- keep_days (number): 30"), "{shown}");

    llm.push_many([
        call(
            "set_script_parameters",
            json!({"changes": {"destination": "nas"}}),
        ),
        call("run_script", json!({})),
    ]);
    let asked = say(&app, "put them on the nas").await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert_eq!(
        prompt,
        "Run the family script backup_photos?\nBack up the family photos\n• album: all\n\
         • destination: nas\n• keep_days: 30\n• only_new: true"
    );
    assert!(
        runs(&scripts).is_empty(),
        "nothing runs before the approval"
    );

    let result = approve_run(&app, &llm, &asked).await;
    assert!(
        result.starts_with("backup_photos finished successfully (exit code 0)."),
        "{result}"
    );
    assert!(result.contains("backed up album all to nas"), "{result}");
    let runs = runs(&scripts);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(
        run["stdin"],
        json!({"album": "all", "destination": "nas", "keep_days": 30, "only_new": true})
    );
    assert_eq!(
        run["argv"],
        json!([
            "--album=all",
            "--destination=nas",
            "--keep_days=30",
            "--only_new=true"
        ])
    );
    assert_eq!(
        Path::new(run["cwd"].as_str().unwrap()),
        scripts.canonicalize().unwrap()
    );
    // A minimal environment: none of hearth's own variables (this test process's, as
    // the in-process hearth has them), whatever a launcher like pyenv's adds itself.
    let seen: Vec<&str> = run["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert!(seen.contains(&"HEARTH_SCRIPT"), "{seen:?}");
    assert!(seen.contains(&"HEARTH_IDEMPOTENCY_KEY"), "{seen:?}");
    let passed = [
        "PATH", "HOME", "LANG", "LC_ALL", "TZ", "PWD", "SHLVL", "OLDPWD",
    ];
    for (name, _) in std::env::vars() {
        if passed.contains(&name.as_str()) || name.contains("PYENV") {
            continue;
        }
        assert!(!seen.contains(&name.as_str()), "{name} reached the script");
    }

    // The result is part of the state the next turn starts with.
    llm.push(Step::Reply("ok".into()));
    say(&app, "thanks").await;
    let system = last_system_prompt(&llm);
    assert!(
        system.contains("- last run: backup_photos (exit code 0)"),
        "{system}"
    );
    assert!(system.contains("next step: summarize_result"), "{system}");
    app.stop().await;
}

#[actix::test]
async fn run_script_out_of_order_is_refused_by_the_tool() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;
    llm.push_many([
        call("run_script", json!({})),
        call("select_script", json!({"name": "backup_photos"})),
        call("run_script", json!({})),
        call("set_script_parameters", json!({"changes": {}})),
        call("get_script_parameters", json!({})),
        call("run_script", json!({})),
        Step::Reply("I need to show you the parameters first.".into()),
    ]);
    let body = say(&app, "just run the backup").await;
    assert_eq!(body["status"], "answered", "no approval was asked: {body}");
    let results = tool_results(&llm);
    assert!(
        results[0].starts_with("refused: no script is selected yet"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with(
            "refused: the final parameters of backup_photos are not set; \
             call get_script_parameters"
        ),
        "{results:?}"
    );
    assert!(
        results[3].starts_with("refused: the parameters of backup_photos were not shown yet"),
        "{results:?}"
    );
    assert!(
        results[5].starts_with(
            "refused: the final parameters of backup_photos are not set; \
             call set_script_parameters"
        ),
        "{results:?}"
    );
    assert!(runs(&scripts).is_empty());
    app.stop().await;
}

#[actix::test]
async fn parameter_type_errors_are_named_and_a_change_invalidates_the_final_values() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;
    llm.push_many([
        call("select_script", json!({"name": "backup_photos"})),
        call("get_script_parameters", json!({})),
        call("set_script_parameters", json!({"changes": {}})),
        call(
            "set_script_parameters",
            json!({"changes": {"keep_days": "lots", "destination": "moon", "colour": "red"}}),
        ),
        call("run_script", json!({})),
        call(
            "set_script_parameters",
            json!({"changes": {"keep_days": "7", "only_new": "no"}}),
        ),
        Step::Reply("Fixed.".into()),
    ]);
    say(&app, "back up, keeping lots of days").await;
    let results = tool_results(&llm);
    assert!(
        results[2].starts_with("Final parameters of backup_photos:"),
        "{results:?}"
    );
    let refused = &results[3];
    assert!(
        refused.contains("keep_days must be a number, found \"lots\""),
        "{refused}"
    );
    assert!(
        refused.contains("destination must be one of usb_drive, nas, found \"moon\""),
        "{refused}"
    );
    assert!(
        refused.contains("backup_photos has no parameter \"colour\""),
        "{refused}"
    );
    assert!(
        refused.contains("the final parameters shown before no longer hold"),
        "{refused}"
    );
    assert!(
        results[4].starts_with("refused: the final parameters of backup_photos are not set"),
        "{results:?}"
    );
    assert_eq!(
        results[5],
        "Final parameters of backup_photos: album = all, destination = usb_drive, \
         keep_days = 7, only_new = false. Show them to the member; run_script asks their \
         approval of exactly these values."
    );
    // A required parameter without a default must be given before there are final values.
    llm.push_many([
        call("select_script", json!({"name": "water_garden"})),
        call("get_script_parameters", json!({})),
        call("set_script_parameters", json!({"changes": {}})),
        Step::Reply("How long?".into()),
    ]);
    say(&app, "water the garden").await;
    assert_eq!(
        llm.last_tool_result(),
        "Saved. Still missing required parameters: minutes. Ask the member for them."
    );
    assert!(runs(&scripts).is_empty());
    app.stop().await;
}

#[actix::test]
async fn a_denied_run_does_not_run_and_the_model_is_told() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;
    let asked = ask_to_run(&app, &llm, "backup_photos", json!({})).await;
    llm.push(Step::Reply("Not run.".into()));
    let body = confirm(&app, &asked, false).await;
    assert_eq!(body["reply"], "Not run.");
    assert_eq!(llm.last_tool_result(), RUN_DECLINED);
    assert!(runs(&scripts).is_empty());
    app.stop().await;
}

#[actix::test]
async fn an_approval_runs_nothing_once_the_values_changed_meanwhile() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;
    let asked = ask_to_run(&app, &llm, "backup_photos", json!({"album": "spring"})).await;
    // While the question is open, the member changes the album in another message.
    llm.push_many([
        call(
            "set_script_parameters",
            json!({"changes": {"album": "autumn"}}),
        ),
        Step::Reply("Now autumn.".into()),
    ]);
    let changed = say(&app, "no wait, the autumn album").await;
    assert_eq!(changed["reply"], "Now autumn.", "{changed}");
    let result = approve_run(&app, &llm, &asked).await;
    assert!(
        result.starts_with("not run: the script or its parameters changed"),
        "{result}"
    );
    assert!(runs(&scripts).is_empty());
    app.stop().await;
}

#[actix::test]
async fn a_workflow_left_alone_past_its_ttl_is_forgotten() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[("HEARTH__SCRIPTS__STATE_TTL_HOURS", "2")]).await;
    let hour_ms = 3_600_000;
    let saved = |age_ms: i64| ScriptWorkflow {
        conversation_key: "http:alice".parse().unwrap(),
        member_id: "alice".parse().unwrap(),
        state: json!({"selected": "backup_photos", "parameter_definitions": [],
                      "final_parameters": {"album": "all"}, "next_action": "confirm_execution"}),
        updated_at_ms: now_ms() - age_ms,
    };
    let workflows = &app.app().stores.script_workflows;
    // One hour old: still where the member left it.
    workflows.put(&saved(hour_ms)).await.unwrap();
    llm.push(Step::Reply("Shall I run it?".into()));
    say(&app, "where were we?").await;
    let system = last_system_prompt(&llm);
    assert!(
        system.contains("- selected script: backup_photos"),
        "{system}"
    );
    assert!(system.contains("next step: confirm_execution"), "{system}");

    // Three hours old: forgotten, so nothing can run from it.
    workflows.put(&saved(3 * hour_ms)).await.unwrap();
    llm.push_many([
        call("run_script", json!({})),
        Step::Reply("Nothing selected.".into()),
    ]);
    let body = say(&app, "run it").await;
    assert_eq!(body["status"], "answered", "{body}");
    let system = llm.requests()[llm.requests().len() - 2].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains("Family script workflow"), "{system}");
    assert!(
        llm.last_tool_result()
            .starts_with("refused: no script is selected yet"),
        "{}",
        llm.last_tool_result()
    );
    assert!(runs(&scripts).is_empty());
    app.stop().await;
}

#[actix::test]
async fn a_restart_in_the_middle_continues_at_the_same_step() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;
    llm.push_many([
        call("list_available_scripts", json!({"query": "photos"})),
        call("select_script", json!({"name": "backup_photos"})),
        Step::Reply("Selected. Shall I show the parameters?".into()),
    ]);
    say(&app, "back up the photos").await;
    let folder = app.stop().await.folder();

    let (app, _) = start(&llm, Some(folder), &[]).await;
    llm.push_many([
        call("get_script_parameters", json!({})),
        Step::Reply("Here they are.".into()),
    ]);
    say(&app, "yes show them").await;
    let first_of_turn = &llm.requests()[llm.requests().len() - 2];
    let system = first_of_turn.body["messages"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        system.contains("- selected script: backup_photos"),
        "{system}"
    );
    assert!(system.contains("next step: present_parameters"), "{system}");
    let shown = llm.last_tool_result();
    assert!(shown.starts_with("Parameters of backup_photos:"), "{shown}");

    // A restart while the approval is open: the answer still runs the values shown.
    llm.push_many([
        call(
            "set_script_parameters",
            json!({"changes": {"album": "summer"}}),
        ),
        call("run_script", json!({})),
    ]);
    let asked = say(&app, "only the summer album").await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let folder = app.stop().await.folder();
    let (app, _) = start(&llm, Some(folder), &[]).await;
    let result = approve_run(&app, &llm, &asked).await;
    assert!(
        result.contains("backed up album summer to usb_drive"),
        "{result}"
    );
    assert_eq!(runs(&scripts).len(), 1);
    app.stop().await;
}
