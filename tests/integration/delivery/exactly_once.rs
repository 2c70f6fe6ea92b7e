//! A completed tool call is never run again: the real binary killed with SIGKILL after a
//! plugin (the example `buy` server) or an MCP tool (the real npm server-everything) ran and
//! before the model's final answer goes on after the restart from the turn journal, the
//! tool's result replayed; a call that was running when hearth died is reported to the model
//! as of unknown outcome, never sent again; a retry after the LLM failed replays the result
//! too. Each call carries a stable idempotency key.

use std::path::Path;
use std::time::{Duration, Instant};

use hearth::actors::processing::INTERRUPTED_CALL_RESULT;
use serde_json::{Value, json};

use crate::support::buy_server::BuyServer;
use crate::support::hearth_app::{API_KEY, Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::everything_stdio_or_skip;
use crate::support::plugin_server::{PluginServer, PluginStep};
use crate::support::test_config::{ProfileParts, TestConfig, profile};

/// Presets that make the example plugin run at once for a message naming the item.
const BUY_PRESETS: &str = "default_parameters: { default_address: \"1 Elm St\", phone: \"555-0100\", contact_name: Alice }\nuse_defaults_directly: true\n";

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn post(client: &reqwest::Client, base_url: &str, body: &Value) -> Option<(u16, Value)> {
    let response = client
        .post(format!("{base_url}/inbound"))
        .header("X-API-Key", API_KEY)
        .json(body)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.unwrap_or(Value::Null)))
}

/// Send `message` to the hearth at `base_url` without waiting for its answer.
fn send_in_background(base_url: &str, message: &Value) {
    let (client, url, message) = (
        reqwest::Client::new(),
        base_url.to_string(),
        message.clone(),
    );
    tokio::spawn(async move { post(&client, &url, &message).await });
}

/// Send `message` (with its `message_id`) again until its stored status is "answered".
async fn answered_after_restart(hearth: &Hearth, message: &Value) -> Value {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some((_, body)) = post(&client, &hearth.base_url, message).await
            && body["status"] == "answered"
        {
            return body;
        }
        assert!(Instant::now() < deadline, "not answered after the restart");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn config_with_plugins(
    folder: &Path,
    llm: &ScriptedLlmServer,
    plugins: &Path,
) -> Vec<(String, String)> {
    TestConfig::new(folder, &llm.base_url()).write(folder);
    vec![
        ("HEARTH__PLUGINS_DIR".into(), plugins.display().to_string()),
        (
            "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS".into(),
            "route_to_plugin".into(),
        ),
    ]
}

fn env_of(pairs: &[(String, String)]) -> std::collections::BTreeMap<String, String> {
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    test_env(&pairs)
}

fn buy_milk() -> Step {
    Step::ToolCalls(vec![(
        "route_to_plugin".into(),
        json!({"plugin_id": "buy", "parameters": {"item": "milk"}}),
    )])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_placed_before_hearth_is_killed_is_never_placed_again() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let buy = BuyServer::start(&folder.path().join("orders.jsonl"));
    let plugins = buy.plugins_folder(folder.path(), BUY_PRESETS);
    let env = env_of(&config_with_plugins(folder.path(), &llm, &plugins));
    let config = folder.path().join("hearth.yaml");
    // The plugin runs, then the model never answers: hearth is killed in between.
    llm.push_many([buy_milk(), Step::Hang]);
    let message = json!({"user_id": "alice", "text": "buy milk", "message_id": "order-1"});
    let first = Hearth::spawn(&config, &env);
    send_in_background(&first.base_url, &message);
    wait_for("the order and the next model round", || {
        buy.orders().len() == 1 && llm.request_count() == 2
    })
    .await;
    first.kill();

    llm.push(Step::Reply("Your milk is on its way.".into()));
    let second = Hearth::spawn(&config, &env);
    let answered = answered_after_restart(&second, &message).await;
    assert_eq!(answered["reply"], "Your milk is on its way.", "{answered}");
    let orders = buy.orders();
    assert_eq!(orders.len(), 1, "the order was placed twice: {orders:?}");
    // The model read the plugin's answer from the journal, not from a second call.
    let replayed = llm.tool_result_seen(llm.requests().len() - 1);
    assert!(replayed.contains("Order placed: milk"), "{replayed}");
    let key = orders[0]["idempotency_key"].as_str().unwrap_or_default();
    assert!(
        !key.is_empty(),
        "the plugin got an idempotency key: {orders:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_call_running_when_hearth_is_killed_is_reported_unknown_and_not_repeated() {
    let llm = ScriptedLlmServer::start();
    let plugin = PluginServer::start();
    let folder = tempfile::tempdir().unwrap();
    let plugins = folder.path().join("plugins/buy");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("plugin.yaml"),
        format!(
            "id: buy\nname: Buy\ndescription: Orders.\ntype: http\nurl: \"{}\"\ntimeout_seconds: 60\ncapabilities:\n  - id: place_order\n    description: Order.\n    parameters:\n      - {{ name: item, type: string, required: true, description: What. }}\n",
            plugin.url()
        ),
    )
    .unwrap();
    let env = env_of(&config_with_plugins(
        folder.path(),
        &llm,
        &folder.path().join("plugins"),
    ));
    let config = folder.path().join("hearth.yaml");
    plugin.push(PluginStep::Delay(
        Duration::from_secs(60),
        Box::new(PluginStep::Text("placed".into())),
    ));
    llm.push(buy_milk());
    let message = json!({"user_id": "alice", "text": "buy milk", "message_id": "order-2"});
    let first = Hearth::spawn(&config, &env);
    send_in_background(&first.base_url, &message);
    wait_for("the plugin call to start", || plugin.calls().len() == 1).await;
    first.kill();

    llm.push(Step::Reply("I'm not sure the order went through.".into()));
    let second = Hearth::spawn(&config, &env);
    let answered = answered_after_restart(&second, &message).await;
    assert_eq!(answered["reply"], "I'm not sure the order went through.");
    assert_eq!(plugin.calls().len(), 1, "the call in flight was sent again");
    assert_eq!(
        llm.tool_result_seen(llm.requests().len() - 1),
        INTERRUPTED_CALL_RESULT
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_called_before_hearth_is_killed_is_never_called_again() {
    let Some(everything) = everything_stdio_or_skip("mcp_exactly_once") else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let gate = folder.path().join("gate");
    std::fs::write(&gate, "open").unwrap();
    let calls = folder.path().join("calls.jsonl");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/mcp_list_gate.py"
    );
    let mut args = vec![
        script.to_string(),
        gate.display().to_string(),
        folder.path().join("announce").display().to_string(),
        everything.command.clone().unwrap(),
    ];
    args.extend(everything.args.clone());
    let calls_file = calls.display().to_string();
    let config = TestConfig::new(folder.path(), &llm.base_url())
        .default_mcp_servers(&["everything"])
        .mcp_server("everything", "python3", &args, |server| {
            server
                .env
                .insert("HEARTH_TEST_MCP_CALLS".into(), calls_file);
        })
        .write(folder.path());
    let env = test_env(&[]);
    let logged = || {
        std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .collect::<Vec<_>>()
    };
    llm.push_many([
        Step::ToolCalls(vec![(
            "everything__echo".into(),
            json!({"message": "once"}),
        )]),
        Step::Hang,
    ]);
    let message = json!({"user_id": "alice", "text": "echo once", "message_id": "echo-1"});
    let first = Hearth::spawn(&config, &env);
    send_in_background(&first.base_url, &message);
    wait_for("the tool call and the next model round", || {
        logged().len() == 1 && llm.request_count() == 2
    })
    .await;
    first.kill();

    llm.push(Step::Reply("The server echoed once.".into()));
    let second = Hearth::spawn(&config, &env);
    let answered = answered_after_restart(&second, &message).await;
    assert_eq!(answered["reply"], "The server echoed once.");
    let logged = logged();
    assert_eq!(logged.len(), 1, "the tool was called again: {logged:?}");
    let key = &logged[0]["params"]["_meta"]["hearth/idempotency_key"];
    assert!(
        key.as_str().is_some_and(|key| !key.is_empty()),
        "{logged:?}"
    );
    let replayed = llm.tool_result_seen(llm.requests().len() - 1);
    assert!(replayed.contains("once"), "{replayed}");
}

#[actix::test]
async fn a_retry_after_the_llm_failed_replays_the_plugin_result_instead_of_calling_again() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let buy = BuyServer::start(&folder.path().join("orders.jsonl"));
    let plugins = buy
        .plugins_folder(folder.path(), BUY_PRESETS)
        .display()
        .to_string();
    let app = Hearth::start_in(
        folder,
        &llm.base_url(),
        &[
            ("HEARTH__PLUGINS_DIR", plugins.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "route_to_plugin",
            ),
        ],
    )
    .await;
    let failure = || Step::Error {
        status: 500,
        retry_after: None,
        body: "the model crashed".into(),
    };
    // Every attempt of the broker fails, so the turn fails and the queue tries it again.
    llm.push_many([buy_milk(), failure(), failure(), failure()]);
    llm.push(Step::Reply("Your milk is on its way.".into()));
    let (status, delayed) = app
        .send(json!({"user_id": "alice", "text": "buy milk"}))
        .await;
    assert_eq!(status, 202, "{delayed}");
    let id = delayed["id"].as_str().unwrap();
    let record = app
        .record_when(id, "alice", "answered", Duration::from_secs(20))
        .await;
    assert_eq!(record["reply"], "Your milk is on its way.");
    assert_eq!(buy.orders().len(), 1, "the retry placed the order again");
    let replayed = llm.tool_result_seen(llm.requests().len() - 1);
    assert!(replayed.contains("Order placed: milk"), "{replayed}");
    app.stop().await;
}

/// A slash command approved to start, whose first model round fails: the retry keeps the
/// approval and starts it (its tool runs once), instead of taking it for a refusal.
#[actix::test]
async fn an_approved_slash_command_whose_model_failed_starts_on_the_retry() {
    let llm = ScriptedLlmServer::start();
    let secure = profile("secure").command("/secure").confirming_commands();
    let app = Hearth::start_with_profiles(&llm.base_url(), &[secure], &[]).await;
    let (status, asked) = app
        .send(json!({"user_id": "alice", "text": "/secure I moved to 9 Oak Lane"}))
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let failure = || Step::Error {
        status: 500,
        retry_after: None,
        body: "the model crashed".into(),
    };
    // Every attempt of the broker fails, so the resumed turn fails and is tried again.
    llm.push_many([failure(), failure(), failure()]);
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "9 Oak Lane"}),
        )]),
        Step::Reply("Saved your new address.".into()),
    ]);
    let (status, body) = app
        .confirm(
            json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                   "approve": true}),
        )
        .await;
    assert!(status == 200 || status == 202, "{status}: {body}");
    let id = asked["id"].as_str().unwrap();
    let record = app
        .record_when(id, "alice", "answered", Duration::from_secs(20))
        .await;
    assert_eq!(record["reply"], "Saved your new address.");
    let facts =
        hearth::ports::UserProfiles::get(&*app.app().stores.profiles, &"alice".parse().unwrap())
            .await
            .unwrap();
    assert_eq!(facts.get("address").map(String::as_str), Some("9 Oak Lane"));
    assert_eq!(
        llm.request_count(),
        5,
        "three failures, then the two rounds once"
    );
    app.stop().await;
}
