//! More of the plugin contract: `command` plugins (a local program, JSON in and out, with a
//! timeout), telemetry of plugin calls with sensitive values redacted, and `/cancel`
//! dropping a plugin call that waits for the member's next message.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, bot_says, start_on_telegram};

/// A `command` plugin `echoer` whose program is the Python script `script`.
fn write_command_plugin(plugins: &std::path::Path, script: &str, timeout_seconds: u64) {
    let folder = plugins.join("echoer");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("run.py"), script).unwrap();
    std::fs::write(
        folder.join("plugin.yaml"),
        format!(
            "id: echoer\nname: Echoer\ndescription: Echo things.\ntype: command\n\
             command: [python3, run.py]\ntimeout_seconds: {timeout_seconds}\ncapabilities:\n\
             \x20 - id: echo\n    description: Echo a word.\n    parameters:\n\
             \x20     - {{ name: word, type: string, required: true, description: A word. }}\n\
             \x20     - {{ name: secret, type: string, required: false, sensitive: true, profile_key: pin, description: A PIN. }}\n"
        ),
    )
    .unwrap();
}

async fn start_with_command_plugin(
    llm: &ScriptedLlmServer,
    script: &str,
    timeout_seconds: u64,
) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let plugins = folder.path().join("plugins");
    write_command_plugin(&plugins, script, timeout_seconds);
    let plugins_dir = plugins.display().to_string();
    Hearth::start_in(
        folder,
        &llm.base_url(),
        &[
            ("HEARTH__PLUGINS_DIR", plugins_dir.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "profile_get,route_to_plugin",
            ),
        ],
    )
    .await
}

fn echo(word: &str) -> Step {
    Step::ToolCalls(vec![(
        "route_to_plugin".into(),
        json!({"plugin_id": "echoer", "parameters": {"word": word}}),
    )])
}

const ECHO_SCRIPT: &str = r#"
import json, os, sys
call = json.load(sys.stdin)
leaked = [name for name in os.environ if "KEY" in name or "TOKEN" in name]
print(json.dumps({"text": "echo " + call["parameters"]["word"] + " for " + call["user"]["name"]
                  + " pin " + str(call["parameters"].get("secret")) + " leaked " + str(leaked)}))
"#;

#[actix::test]
async fn a_command_plugin_gets_the_call_on_stdin_and_nothing_of_hearths_secrets() {
    let llm = ScriptedLlmServer::start();
    let app = start_with_command_plugin(&llm, ECHO_SCRIPT, 10).await;
    app.app()
        .stores
        .profiles
        .set(&"alice".parse().unwrap(), "pin", Some("4321"))
        .await
        .unwrap();
    llm.push_many([echo("hello"), Step::Reply("Echoed.".into())]);
    assert_eq!(app.ask("alice", "echo hello").await, "Echoed.");
    let seen = llm.requests()[1].body["messages"].to_string();
    // hearth's API key lives in its environment; the plugin sees none of it.
    assert!(
        seen.contains("echo hello for Alice pin 4321 leaked []"),
        "{seen}"
    );

    // Telemetry records the call and what was resolved, the sensitive PIN redacted.
    let folder = app.stop().await.folder();
    let url = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT stage, payload FROM telemetry_events WHERE stage LIKE 'plugin_%'")
            .fetch_all(&pool)
            .await
            .unwrap();
    let stages: Vec<&str> = rows.iter().map(|(stage, _)| stage.as_str()).collect();
    assert!(stages.contains(&"plugin_resolution"), "{stages:?}");
    assert!(stages.contains(&"plugin_call"), "{stages:?}");
    let payloads: String = rows.iter().map(|(_, payload)| payload.as_str()).collect();
    assert!(!payloads.contains("4321"), "{payloads}");
    assert!(payloads.contains("[redacted]"), "{payloads}");
    assert!(payloads.contains("hello"), "{payloads}");
    let call: Value = rows
        .iter()
        .find(|(stage, _)| stage == "plugin_call")
        .map(|(_, payload)| serde_json::from_str(payload).unwrap())
        .unwrap();
    assert_eq!(call["outcome"], "ok");
}

#[actix::test]
async fn a_command_plugin_that_hangs_is_stopped_at_its_timeout() {
    let llm = ScriptedLlmServer::start();
    let app = start_with_command_plugin(&llm, "import time\ntime.sleep(30)\n", 1).await;
    llm.push(echo("hello"));
    let started = std::time::Instant::now();
    let reply = app.ask("alice", "echo hello").await;
    assert!(
        reply.contains("the echoer plugin did not answer within 1 s"),
        "{reply}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    app.stop().await;
}

#[actix::test]
async fn slash_cancel_drops_a_plugin_call_waiting_for_the_next_message() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let plugins = folder.path().join("plugins");
    write_command_plugin(&plugins, ECHO_SCRIPT, 10);
    let plugins_dir = plugins.display().to_string();
    let app = start_on_telegram(
        &llm,
        &telegram,
        &[],
        Some(folder),
        &[
            ("HEARTH__PLUGINS_DIR", plugins_dir.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "profile_get,route_to_plugin",
            ),
        ],
    )
    .await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "route_to_plugin".into(),
            json!({"plugin_id": "echoer", "parameters": {}}),
        )]),
        Step::Reply("Which word?".into()),
    ]);
    telegram.push_private_text(&alice(), "echo something");
    bot_says(&telegram, 1001, "Which word?").await;
    telegram.push_private_text(&alice(), "/cancel");
    bot_says(&telegram, 1001, "no longer waiting").await;
    // The next message is an ordinary one: it goes to the model, not the plugin.
    llm.push(Step::Reply("Sure.".into()));
    telegram.push_private_text(&alice(), "banana");
    bot_says(&telegram, 1001, "Sure.").await;
    assert_eq!(llm.requests().len(), 3);
    app.stop().await;
}

/// A program printing 10 MB (and as much on stderr) is stopped at the cap, and the member
/// hears why, instead of hearth reading it all or waiting on a full pipe.
#[actix::test]
async fn a_command_plugins_oversized_answer_is_refused_with_a_clear_reason() {
    let llm = ScriptedLlmServer::start();
    let flood = r#"
import sys
sys.stdin.read()
sys.stderr.write("e" * 10_000_000)
sys.stdout.write('{"text": "' + "x" * 10_000_000 + '"}')
"#;
    let app = start_with_command_plugin(&llm, flood, 20).await;
    llm.push(echo("big"));
    let reply = app.ask("alice", "say something big").await;
    assert!(
        reply.contains("the echoer plugin's answer is larger than the 1048576 bytes hearth reads"),
        "{reply}"
    );
    app.stop().await;
}

/// An http plugin answering 10 MB is refused at the cap, read in chunks.
#[actix::test]
async fn an_http_plugins_oversized_answer_is_refused_with_a_clear_reason() {
    use crate::support::plugin_server::{PluginServer, PluginStep};
    let llm = ScriptedLlmServer::start();
    let plugin = PluginServer::start();
    let folder = tempfile::tempdir().unwrap();
    let plugins = folder.path().join("plugins/big");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("plugin.yaml"),
        format!(
            "id: big\nname: Big\ndescription: Big answers.\ntype: http\nurl: \"{}\"\ncapabilities:\n  - id: get\n    description: Get.\n",
            plugin.url()
        ),
    )
    .unwrap();
    let plugins_dir = folder.path().join("plugins").display().to_string();
    let app = Hearth::start_in(
        folder,
        &llm.base_url(),
        &[
            ("HEARTH__PLUGINS_DIR", plugins_dir.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "route_to_plugin",
            ),
        ],
    )
    .await;
    plugin.push(PluginStep::Text("y".repeat(10_000_000)));
    llm.push(Step::ToolCalls(vec![(
        "route_to_plugin".into(),
        json!({"plugin_id": "big"}),
    )]));
    let reply = app.ask("alice", "get it").await;
    assert!(
        reply.contains("the big plugin's answer is larger than the 1048576 bytes hearth reads"),
        "{reply}"
    );
    app.stop().await;
}
