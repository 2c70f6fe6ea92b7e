//! `confirm_tools` fails closed, for every kind of tool: a plugin capability named
//! `plugin.capability` (or `plugin.*`) asks before the plugin runs, a name that names nothing
//! stops start-up at its key path, an MCP tool asks while its server's list is not known
//! (with the real npm server-everything behind a pipe that holds the list back), and a typo
//! naming a tool a server does not list makes every tool of that server ask.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::everything_stdio_or_skip;
use crate::support::plugin_server::{PluginServer, PluginStep};
use crate::support::test_config::{ProfileParts, TestConfig, profile};

/// A `buy` plugin (one capability, `place_order`, with an `item` and a `quantity`) reached at
/// `plugin`'s url, in `folder/plugins`; the plugins folder.
fn write_buy_plugin(folder: &Path, plugin: &PluginServer) -> PathBuf {
    let plugins = folder.join("plugins");
    let buy = plugins.join("buy");
    std::fs::create_dir_all(&buy).unwrap();
    std::fs::write(
        buy.join("plugin.yaml"),
        format!(
            "id: buy\nname: Buy\ndescription: Place delivery orders.\ntype: http\nurl: \"{}\"\n\
             timeout_seconds: 2\ncapabilities:\n  - id: place_order\n    description: Place an order.\n\
             \x20   parameters:\n\
             \x20     - {{ name: item, type: string, required: true, description: What. }}\n\
             \x20     - {{ name: quantity, type: integer, required: true, description: How many. }}\n",
            plugin.url()
        ),
    )
    .unwrap();
    plugins
}

/// hearth with the `buy` plugin, every profile's local tools `profile_get` and
/// `route_to_plugin`, and `asking` the one tool that asks the member first.
async fn start_with_buy(llm: &ScriptedLlmServer, plugin: &PluginServer, asking: &str) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let plugins = write_buy_plugin(folder.path(), plugin)
        .display()
        .to_string();
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .with(|config| config.plugins_dir = plugins)
        .default_tools("profile_get, route_to_plugin")
        .default_confirm(&[asking])
        .write(folder.path());
    Hearth::start_from(folder, &path, &[]).await
}

fn order(parameters: Value) -> Step {
    Step::ToolCalls(vec![(
        "route_to_plugin".into(),
        json!({"plugin_id": "buy", "parameters": parameters}),
    )])
}

#[actix::test]
async fn a_plugin_capability_in_confirm_tools_asks_before_the_plugin_runs() {
    for asking in ["buy.place_order", "buy.*", "route_to_plugin"] {
        let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
        let app = start_with_buy(&llm, &plugin, asking).await;
        llm.push_many([
            order(json!({"item": "milk", "quantity": 2})),
            Step::Reply("Ordered.".into()),
        ]);
        let (status, asked) = app
            .send(json!({"user_id": "alice", "text": "buy 2 milk"}))
            .await;
        assert_eq!(status, 200, "{asked}");
        assert_eq!(
            asked["status"], "confirmation_required",
            "{asking}: {asked}"
        );
        let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
        assert!(prompt.contains("milk"), "{prompt}");
        assert!(plugin.calls().is_empty(), "{asking}: ran unasked");

        plugin.push(PluginStep::Text("Order placed.".into()));
        let (_, answered) = app
            .confirm(json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}))
            .await;
        assert_eq!(answered["reply"], "Ordered.", "{answered}");
        assert_eq!(plugin.calls().len(), 1);
        assert_eq!(plugin.calls()[0]["parameters"]["item"], "milk");
        app.stop().await;
    }
}

#[actix::test]
async fn a_capability_not_named_runs_without_asking() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start_with_buy(&llm, &plugin, "profile_update").await;
    plugin.push(PluginStep::Text("Order placed.".into()));
    llm.push_many([
        order(json!({"item": "milk", "quantity": 2})),
        Step::Reply("Ordered.".into()),
    ]);
    assert_eq!(app.ask("alice", "buy 2 milk").await, "Ordered.");
    assert_eq!(plugin.calls().len(), 1);
    app.stop().await;
}

#[actix::test]
async fn the_members_answer_completes_a_pending_call_only_with_a_value_of_its_type() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start_with_buy(&llm, &plugin, "profile_update").await;
    llm.push_many([
        order(json!({"item": "milk"})),
        Step::Reply("How many?".into()),
    ]);
    assert_eq!(app.ask("alice", "buy milk").await, "How many?");
    // Not a whole number: an ordinary turn, and the pending call stays.
    llm.push(Step::Reply("I need a number.".into()));
    assert_eq!(app.ask("alice", "a few").await, "I need a number.");
    assert!(plugin.calls().is_empty());
    assert_eq!(llm.requests().len(), 3);
    plugin.push(PluginStep::Text("Ordered 3 milk.".into()));
    assert_eq!(app.ask("alice", "3").await, "Ordered 3 milk.");
    assert_eq!(llm.requests().len(), 3, "the value needed no model");
    assert_eq!(plugin.calls()[0]["parameters"]["quantity"], 3);
    app.stop().await;
}

#[actix::test]
async fn a_pending_call_is_completed_only_in_a_profile_that_routes_to_plugins() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let plugin_folder = tempfile::tempdir().unwrap();
    let plugins = write_buy_plugin(plugin_folder.path(), &plugin)
        .display()
        .to_string();
    // The default profile has no plugins; `/shop` has.
    let app = Hearth::start_with_profiles(
        &llm.base_url(),
        &[profile("shop")
            .command("/shop")
            .local_tools(&["route_to_plugin"])],
        &[("HEARTH__PLUGINS_DIR", plugins.as_str())],
    )
    .await;
    llm.push_many([
        order(json!({"item": "milk"})),
        Step::Reply("How many?".into()),
    ]);
    assert_eq!(app.ask("alice", "/shop buy milk").await, "How many?");
    // The next message goes to the default profile: its turn is its model's.
    llm.push(Step::Reply("Default answer.".into()));
    assert_eq!(app.ask("alice", "3").await, "Default answer.");
    assert!(
        plugin.calls().is_empty(),
        "a profile without plugins ran one"
    );
    app.stop().await;
}

#[actix::test]
async fn a_pending_call_whose_capability_asks_goes_through_the_model_and_asks() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start_with_buy(&llm, &plugin, "buy.place_order").await;
    // The first call asks, is approved, and the plugin's values are incomplete.
    llm.push_many([
        order(json!({"item": "milk"})),
        Step::Reply("How many?".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "buy milk"}))
        .await;
    let (_, answered) = app
        .confirm(json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}))
        .await;
    assert_eq!(answered["reply"], "How many?", "{answered}");
    // "3" completes a call nobody approved yet: the model is asked, and the call asks.
    llm.push(order(json!({"item": "milk", "quantity": 3})));
    let (_, again) = app.send(json!({"user_id": "alice", "text": "3"})).await;
    assert_eq!(again["status"], "confirmation_required", "{again}");
    assert!(plugin.calls().is_empty());
    app.stop().await;
}

fn hearth(config: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
    command
        .arg("--config")
        .arg(config)
        .envs(test_env(env))
        .env("HEARTH_LOG", "warn");
    command
}

#[test]
fn a_confirm_tools_entry_that_names_nothing_stops_start_up_at_its_key_path() {
    let plugin = PluginServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let plugins = write_buy_plugin(folder.path(), &plugin)
        .display()
        .to_string();
    let cases = [
        (
            "nope.place_order",
            "names plugin \"nope\", which is neither in",
        ),
        (
            "buy.cancel",
            "names capability \"cancel\", which plugin \"buy\" does not have",
        ),
        (
            "ghost__echo",
            "names MCP server \"ghost\", which is no entry of mcp_servers",
        ),
        ("ghost__*", "names MCP server \"ghost\""),
        ("buy.", "is not a plugin capability"),
        ("every*", "a wildcard names every tool of one MCP server"),
    ];
    for (entry, expected) in cases {
        for command in ["run", "check-config"] {
            let output = hearth(
                &config,
                &[
                    ("HEARTH__PLUGINS_DIR", plugins.as_str()),
                    (
                        "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
                        &format!("profile_update,{entry}"),
                    ),
                ],
            )
            .arg(command)
            .output()
            .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!output.status.success(), "{command} {entry}: {stderr}");
            assert!(
                stderr.contains("hearth.yaml"),
                "{command} {entry}: {stderr}"
            );
            assert!(
                stderr.contains("default_profile_settings.tools_config.confirm_tools[1]"),
                "{command} {entry}: {stderr}"
            );
            assert!(stderr.contains(expected), "{command} {entry}: {stderr}");
        }
    }
}

#[test]
fn a_plugin_id_with_a_double_underscore_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let plugin = folder.path().join("plugins/my__shop");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(
        plugin.join("plugin.yaml"),
        "id: my__shop\nname: Shop\ndescription: Shop things.\ntype: inline\ncapabilities:\n  - id: buy\n    description: Buy.\n",
    )
    .unwrap();
    let plugins = folder.path().join("plugins").display().to_string();
    let output = hearth(&config, &[("HEARTH__PLUGINS_DIR", plugins.as_str())])
        .arg("check-config")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("must not contain \"__\""), "{stderr}");
}

#[test]
fn check_config_says_per_profile_which_tools_ask() {
    let plugin = PluginServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .profile(
            profile("toolbox")
                .command("/tools")
                .mcp_servers(&["files"])
                .confirm(&["files__write_file"]),
        )
        .mcp_server("files", "/bin/true", &[], |_| {})
        .write(folder.path());
    let plugins = write_buy_plugin(folder.path(), &plugin)
        .display()
        .to_string();
    let output = hearth(
        &config,
        &[
            ("HEARTH__PLUGINS_DIR", plugins.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
                "profile_update,buy.*",
            ),
        ],
    )
    .arg("check-config")
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let asking = &stdout[stdout.find("confirmation (").expect(&stdout)..];
    assert!(
        asking.contains(
            "  default_assistant:\n    - profile_update\n    - buy.* (today: buy.place_order)\n"
        ),
        "{asking}"
    );
    assert!(
        asking.contains("  toolbox:\n    - files__write_file\n    - files__* while the server's tool list is not known"),
        "{asking}"
    );
}

/// hearth with a `/tools` profile on server-everything reached through `mcp_list_gate.py`,
/// which holds the server's tool lists back while `gate` does not exist, and announces a
/// list change whenever `announce` appears.
async fn app_behind_a_list_gate(
    test: &str,
    llm: &ScriptedLlmServer,
    asking: &[&str],
) -> Option<(Hearth, PathBuf, PathBuf)> {
    let everything = everything_stdio_or_skip(test)?;
    let folder = tempfile::tempdir().unwrap();
    let (gate, announce) = (folder.path().join("gate"), folder.path().join("announce"));
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/mcp_list_gate.py"
    );
    let mut args = vec![
        script.to_string(),
        gate.display().to_string(),
        announce.display().to_string(),
        everything.command.clone().unwrap(),
    ];
    args.extend(everything.args.clone());
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .profile(
            profile("toolbox")
                .command("/tools")
                .mcp_servers(&["everything"])
                .confirm(asking),
        )
        .mcp_server("everything", "python3", &args, |server| {
            server.init_timeout_seconds = Some(2)
        })
        .write(folder.path());
    let app = Hearth::start_from(folder, &path, &[]).await;
    Some((app, gate, announce))
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn echo(text: &str) -> Step {
    Step::ToolCalls(vec![("everything__echo".into(), json!({"message": text}))])
}

#[actix::test]
async fn an_mcp_tool_asks_while_its_servers_list_is_not_known() {
    let llm = ScriptedLlmServer::start();
    let Some((app, gate, announce)) = app_behind_a_list_gate("mcp_unlisted_asks", &llm, &[]).await
    else {
        return;
    };
    // The list never arrived: the server is not connected, its tools are not known.
    assert!(!app.app().mcp.states()["everything"].connected);
    llm.push(echo("before"));
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "/tools echo before"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");

    // Once listed, the same call runs without asking.
    std::fs::write(&gate, "open").unwrap();
    wait_for("the server is listed", || {
        app.app().mcp.states()["everything"].connected
    })
    .await;
    llm.push_many([echo("listed"), Step::Reply("Echoed.".into())]);
    assert_eq!(app.ask("alice", "/tools echo listed").await, "Echoed.");
    assert!(
        llm.tool_result_seen(llm.requests().len() - 1)
            .contains("listed")
    );

    // The server says its tools changed and the new list is held back: asks again.
    std::fs::remove_file(&gate).unwrap();
    std::fs::write(&announce, "changed").unwrap();
    wait_for("the change is announced", || !announce.exists()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    llm.push(echo("changed"));
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "/tools echo changed"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    std::fs::write(&gate, "open").unwrap();
    app.stop().await;
}

#[actix::test]
async fn a_confirm_entry_naming_a_tool_the_server_does_not_list_makes_all_its_tools_ask() {
    let llm = ScriptedLlmServer::start();
    let Some((app, gate, _)) =
        app_behind_a_list_gate("mcp_typo_asks", &llm, &["everything__ecoh"]).await
    else {
        return;
    };
    std::fs::write(&gate, "open").unwrap();
    wait_for("the server is listed", || {
        app.app().mcp.states()["everything"].connected
    })
    .await;
    llm.push(echo("typo"));
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "/tools echo"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    app.stop().await;
}

#[actix::test]
async fn a_plugins_confirmation_expires_with_the_asking_profiles_timeout() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let folder = tempfile::tempdir().unwrap();
    let plugins = folder.path().join("plugins");
    let buy = plugins.join("buy");
    std::fs::create_dir_all(&buy).unwrap();
    std::fs::write(
        buy.join("plugin.yaml"),
        format!(
            "id: buy\nname: Buy\ndescription: Orders.\ntype: http\nurl: \"{}\"\ncapabilities:\n  - id: place_order\n    description: Order.\n    parameters:\n      - {{ name: address, type: string, required: true, profile_key: address, confirm_if_uncertain: true, description: Where. }}\n",
            plugin.url()
        ),
    )
    .unwrap();
    let plugins = plugins.display().to_string();
    let app = Hearth::start_in(
        folder,
        &llm.base_url(),
        &[
            ("HEARTH__PLUGINS_DIR", plugins.as_str()),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
                "route_to_plugin",
            ),
            (
                "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__CONFIRMATION_TIMEOUT_SECONDS",
                "7",
            ),
        ],
    )
    .await;
    app.app()
        .stores
        .profiles
        .set(&"alice".parse().unwrap(), "address", Some("1 Elm St"))
        .await
        .unwrap();
    llm.push(order(json!({})));
    let before = hearth::ports::now_ms();
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "order it"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let expires = asked["confirmation"]["expires_at_ms"].as_i64().unwrap();
    let after = hearth::ports::now_ms();
    assert!(
        expires >= before + 7_000 && expires <= after + 7_000,
        "expires {} ms after asking",
        expires - before
    );
    app.stop().await;
}
