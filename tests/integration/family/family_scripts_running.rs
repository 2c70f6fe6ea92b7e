//! Running family scripts safely, end to end over HTTP: a failing script's exit code and
//! errors, a script past its timeout killed with its children, a script printing 10 MB
//! cut to a short output, and a run completed before hearth is killed (the real binary,
//! SIGKILL) never run again, its environment without hearth's secrets. Run directly: the
//! output of a script whose helper left its process group and holds the output open is
//! kept, and a value starting with `--` reaches the script as a value.

use std::time::{Duration, Instant};

use hearth::scripts::{RunLimits, ScriptCatalog, run_script};
use serde_json::{Map, Value, json};

use crate::support::family_scripts::{
    approve_run, ask_to_run, call, last_system_prompt, overrides, runs, say, start, write_scripts,
};
use crate::support::hearth_app::{API_KEY, Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;

#[actix::test]
async fn a_failing_script_reports_its_exit_code_and_errors() {
    let llm = ScriptedLlmServer::start();
    let (app, _) = start(&llm, None, &[]).await;
    let asked = ask_to_run(&app, &llm, "failing", json!({})).await;
    let result = approve_run(&app, &llm, &asked).await;
    assert_eq!(
        result,
        "failing failed with exit code 3.\noutput:\nlooking for the drive\nerror output:\ndisk full"
    );
    llm.push(Step::Reply("ok".into()));
    say(&app, "what happened?").await;
    let system = last_system_prompt(&llm);
    assert!(
        system.contains("- last run: failing (exit code 3)"),
        "{system}"
    );
    assert!(system.contains("next step: handle_error"), "{system}");
    app.stop().await;
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet, which runs no more).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[actix::test]
async fn a_script_past_its_timeout_is_killed_with_its_children() {
    let llm = ScriptedLlmServer::start();
    let (app, scripts) = start(&llm, None, &[]).await;
    let asked = ask_to_run(&app, &llm, "slow", json!({})).await;
    let result = approve_run(&app, &llm, &asked).await;
    assert!(
        result.starts_with("slow ran past its timeout and was stopped"),
        "{result}"
    );
    let child: u32 = std::fs::read_to_string(scripts.join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !is_gone(child) {
        assert!(
            Instant::now() < deadline,
            "the script's child {child} still runs"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

#[actix::test]
async fn a_script_printing_ten_megabytes_is_cut_to_a_short_output() {
    let llm = ScriptedLlmServer::start();
    let (app, _) = start(&llm, None, &[]).await;
    let asked = ask_to_run(&app, &llm, "loud", json!({})).await;
    let result = approve_run(&app, &llm, &asked).await;
    assert!(
        result.starts_with("loud finished successfully (exit code 0)."),
        "{result}"
    );
    assert!(
        result.ends_with("(output shortened: it wrote 10485768 bytes)"),
        "{}",
        &result[result.len().saturating_sub(200)..]
    );
    assert!(
        result.len() < 4096,
        "the model gets a short output: {}",
        result.len()
    );
    app.stop().await;
}

/// GET `/inbound/{id}` of alice's message at `base_url` until it is answered.
async fn answered(base_url: &str, inbox_id: &str) -> Value {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let response = client
            .get(format!("{base_url}/inbound/{inbox_id}?user_id=alice"))
            .header("X-API-Key", API_KEY)
            .send()
            .await;
        if let Ok(response) = response
            && let Ok(record) = response.json::<Value>().await
            && record["status"] == "answered"
        {
            return record;
        }
        assert!(Instant::now() < deadline, "{inbox_id} never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_completed_before_hearth_is_killed_is_never_run_again() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let scripts = write_scripts(folder.path());
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let owned = overrides(&scripts);
    let env = test_env(
        &owned
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
    );
    let first = Hearth::spawn(&config, &env);
    llm.push_many([
        call("select_script", json!({"name": "backup_photos"})),
        call("get_script_parameters", json!({})),
        call(
            "set_script_parameters",
            json!({"changes": {"album": "winter"}}),
        ),
        call("run_script", json!({})),
    ]);
    let (_, asked) = first
        .post_json(
            "/inbound",
            json!({"user_id": "alice", "text": "back up the winter album"}),
        )
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    // The script runs, then the model never answers: hearth is killed in between.
    llm.push(Step::Hang);
    let approve = json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                         "approve": true});
    let url = format!("{}/inbound/confirm", first.base_url);
    let token = crate::support::hearth_app::member_token_by_cli(&config, &env, "alice");
    tokio::spawn(async move {
        let _ = reqwest::Client::new()
            .post(url)
            .header("X-API-Key", token)
            .json(&approve)
            .send()
            .await;
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(runs(&scripts).len() == 1 && llm.request_count() == 5) {
        assert!(Instant::now() < deadline, "the script never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill();

    llm.push(Step::Reply("The winter album is backed up.".into()));
    let second = Hearth::spawn(&config, &env);
    let record = answered(&second.base_url, asked["id"].as_str().unwrap()).await;
    assert_eq!(
        record["reply"], "The winter album is backed up.",
        "{record}"
    );
    let runs = runs(&scripts);
    assert_eq!(runs.len(), 1, "the script ran twice: {runs:?}");
    // The model read the run's result from the journal, not from a second run.
    let replayed = llm.tool_result_seen(llm.requests().len() - 1);
    assert!(
        replayed.contains("backed up album winter to usb_drive"),
        "{replayed}"
    );
    // hearth's own secrets were in its environment, never in the script's.
    let seen = runs[0]["env"].to_string();
    assert!(!seen.contains("TEST_HEARTH_API_KEY"), "{seen}");
    drop(second);
}

const LIMITS: RunLimits = RunLimits {
    timeout: Duration::from_secs(60),
    max_output_bytes: 64 * 1024,
};

/// A scripts folder of one script, `name`, of `kind` at `file` with `text` and parameters
/// `parameters` (manifest JSON), loaded.
async fn one_script(
    folder: &std::path::Path,
    kind: &str,
    file: &str,
    text: &str,
    parameters: Value,
) -> ScriptCatalog {
    std::fs::write(folder.join(file), text).unwrap();
    let manifest = json!([{"name": "under_test", "description": "a script under test",
                           "path": file, "type": kind, "parameters": parameters}]);
    std::fs::write(folder.join("manifest.json"), manifest.to_string()).unwrap();
    ScriptCatalog::load(folder).await.unwrap()
}

#[tokio::test]
async fn output_written_before_a_helper_outside_the_group_holds_the_pipe_is_kept() {
    let folder = tempfile::tempdir().unwrap();
    let catalog = one_script(
        folder.path(),
        "shell",
        "escape.sh",
        // The helper writes its pid once it has left the script's group.
        "echo 'before the helper'\n\
         setsid sh -c 'echo $$ > helper.pid; exec sleep 300' &\n\
         while [ ! -s helper.pid ]; do sleep 0.05; done\n\
         echo 'after the helper'\n",
        json!([]),
    )
    .await;
    let script = catalog.get("under_test").unwrap();
    let result = run_script(catalog.folder(), script, &Map::new(), LIMITS, None)
        .await
        .unwrap();
    let helper = folder.path().join("helper.pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    let helper_pid: u32 = loop {
        if let Ok(text) = std::fs::read_to_string(&helper)
            && let Ok(pid) = text.trim().parse()
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the helper never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let still_running = !is_gone(helper_pid);
    // SAFETY: kill(2) with plain integers; the helper is this test's to end.
    unsafe {
        libc::kill(helper_pid as i32, libc::SIGKILL);
    }
    assert!(still_running, "the helper was meant to outlive the script");
    assert!(result.succeeded(), "{}", result.describe());
    assert_eq!(result.output, "before the helper\nafter the helper");
}

#[tokio::test]
async fn a_value_starting_with_dashes_reaches_the_script_as_a_value() {
    let folder = tempfile::tempdir().unwrap();
    let catalog = one_script(
        folder.path(),
        "python",
        "options.py",
        "import argparse\n\
         parser = argparse.ArgumentParser()\n\
         parser.add_argument('--album')\n\
         parser.add_argument('--destination')\n\
         arguments = parser.parse_args()\n\
         print(f'album={arguments.album} destination={arguments.destination}')\n",
        json!([{"name": "album", "type": "string"},
               {"name": "destination", "type": "string"}]),
    )
    .await;
    let script = catalog.get("under_test").unwrap();
    let values: Map<String, Value> = [
        ("album".to_string(), json!("--destination")),
        ("destination".to_string(), json!("nas")),
    ]
    .into_iter()
    .collect();
    let result = run_script(catalog.folder(), script, &values, LIMITS, None)
        .await
        .unwrap();
    assert!(result.succeeded(), "{}", result.describe());
    assert_eq!(result.output, "album=--destination destination=nas");
}
