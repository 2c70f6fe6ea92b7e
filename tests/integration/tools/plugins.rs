//! Plugins end to end over the HTTP channel (seed 000 §7, seed 001): the scripted model
//! calls `route_to_plugin`, a real `http` plugin answers on loopback, and hearth resolves
//! parameters from the message, the member's profile and `config.yml`, asks for what is
//! missing, confirms what is uncertain, and completes a pending call from the member's
//! next message without the model.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::hearth_app::{ADMIN_API_KEY, API_KEY, Hearth, PLUGIN_API_KEY};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::plugin_server::{PluginServer, PluginStep};

const BUY_SEED: &str = r#"
      - { name: item, type: string, required: true, description: Item to buy. }
      - { name: address, type: string, required: true, profile_key: address, config_key: default_address, confirm_if_uncertain: true, description: Delivery address. }
      - { name: phone, type: string, required: true, profile_key: phone, confirm_if_uncertain: true, sensitive: true, description: Contact phone. }
      - { name: contact_name, type: string, required: true, profile_key: name, description: Recipient name. }
      - { name: quantity, type: integer, required: false, description: How many. }
"#;

/// hearth with `route_to_plugin` on the default profile and a `buy` plugin (parameters
/// `buy_parameters`, presets `buy_config`) at `plugin`, plus the built-in shopping list.
async fn start(
    llm: &ScriptedLlmServer,
    plugin: &PluginServer,
    buy_parameters: &str,
    buy_config: &str,
    post_process: bool,
) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let plugins = folder.path().join("plugins");
    write_buy_plugin(&plugins, plugin, buy_parameters, buy_config, post_process);
    let shopping = plugins.join("shopping_list");
    std::fs::create_dir_all(&shopping).unwrap();
    std::fs::write(
        shopping.join("plugin.yaml"),
        include_str!("../../../plugins/shopping_list/plugin.yaml"),
    )
    .unwrap();
    std::fs::write(
        shopping.join("config.yml"),
        include_str!("../../../plugins/shopping_list/config.yml"),
    )
    .unwrap();
    let plugins_dir = plugins.display().to_string();
    let overrides = [
        ("HEARTH__PLUGINS_DIR", plugins_dir.as_str()),
        (
            "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
            "profile_get,profile_update,route_to_plugin",
        ),
    ];
    Hearth::start_in(folder, &llm.base_url(), &overrides).await
}

fn write_buy_plugin(
    plugins: &Path,
    plugin: &PluginServer,
    parameters: &str,
    config: &str,
    post_process: bool,
) {
    let buy = plugins.join("buy");
    std::fs::create_dir_all(&buy).unwrap();
    let post = if post_process {
        "    post_process: true\n    post_process_prompt: \"Rewrite the order confirmation warmly.\"\n"
    } else {
        ""
    };
    std::fs::write(
        buy.join("plugin.yaml"),
        format!(
            "id: buy\nname: Buy\ndescription: Place delivery orders.\ntype: http\nurl: \"{}\"\n\
             timeout_seconds: 2\ncapabilities:\n  - id: place_order\n    description: Place a delivery order.\n{post}    parameters:{parameters}",
            plugin.url()
        ),
    )
    .unwrap();
    std::fs::write(buy.join("config.yml"), config).unwrap();
}

fn buy(parameters: Value) -> Step {
    Step::ToolCalls(vec![(
        "route_to_plugin".into(),
        json!({"plugin_id": "buy", "capability_id": "place_order", "parameters": parameters}),
    )])
}

async fn remember(app: &Hearth, member: &str, facts: &[(&str, &str)]) {
    for (key, value) in facts {
        app.app()
            .stores
            .profiles
            .set(&member.parse().unwrap(), key, Some(value))
            .await
            .unwrap();
    }
}

#[actix::test]
async fn flow_1_preset_config_used_directly_calls_the_plugin_at_once() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let config = "default_parameters: { default_address: \"123 Main St\", phone: \"555-0000\", contact_name: John }\nuse_defaults_directly: true\n";
    let app = start(&llm, &plugin, BUY_SEED, config, false).await;
    plugin.push(PluginStep::Text("Order placed for milk.".into()));
    llm.push_many([
        buy(json!({"item": "milk"})),
        Step::Reply("Milk is on its way.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "Buy me some milk").await,
        "Milk is on its way."
    );
    let calls = plugin.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["parameters"],
        json!({"item": "milk", "address": "123 Main St", "phone": "555-0000", "contact_name": "John"})
    );
    assert_eq!(calls[0]["plugin_id"], "buy");
    assert_eq!(calls[0]["user"], json!({"id": "alice", "name": "Alice"}));
    assert_eq!(llm.tool_result_seen(1), "Order placed for milk.");
    app.stop().await;
}

#[actix::test]
async fn flow_2_one_missing_value_is_asked_and_the_answer_completes_the_call_without_the_model() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    // As in the seed's flow 2: address and name from the profile are used as they are.
    let parameters = BUY_SEED.replace(", confirm_if_uncertain: true", "");
    let app = start(&llm, &plugin, &parameters, "", false).await;
    remember(
        &app,
        "alice",
        &[("name", "John"), ("address", "123 Main St")],
    )
    .await;
    llm.push_many([
        buy(json!({"item": "milk"})),
        Step::Reply("What's your phone number for the delivery?".into()),
    ]);
    assert_eq!(
        app.ask("alice", "Buy me some milk").await,
        "What's your phone number for the delivery?"
    );
    let asked = llm.tool_result_seen(1);
    assert!(asked.contains("phone"), "{asked}");
    assert!(asked.contains("123 Main St"), "{asked}");
    assert!(
        plugin.calls().is_empty(),
        "nothing is called while a value is missing"
    );

    plugin.push(PluginStep::Text("Order placed for milk.".into()));
    assert_eq!(app.ask("alice", "555-1234").await, "Order placed for milk.");
    assert_eq!(llm.requests().len(), 2, "the answer needed no model");
    assert_eq!(
        plugin.calls()[0]["parameters"],
        json!({"item": "milk", "address": "123 Main St", "phone": "555-1234", "contact_name": "John"})
    );
    // Used once: the same words again are an ordinary message.
    llm.push(Step::Reply("That was already ordered.".into()));
    assert_eq!(
        app.ask("alice", "555-1234").await,
        "That was already ordered."
    );
    assert_eq!(plugin.calls().len(), 1);
    app.stop().await;
}

#[actix::test]
async fn flow_2b_uncertain_profile_values_are_confirmed_by_the_member_before_the_call() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start(&llm, &plugin, BUY_SEED, "", false).await;
    remember(
        &app,
        "alice",
        &[
            ("name", "John"),
            ("address", "123 Main St"),
            ("phone", "555-0000"),
        ],
    )
    .await;
    llm.push_many([buy(json!({"item": "milk"})), Step::Reply("Ordered.".into())]);
    let (status, asked) = app
        .send(json!({"user_id": "alice", "text": "Buy me some milk"}))
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("123 Main St") && prompt.contains("555-0000"),
        "{prompt}"
    );
    assert!(prompt.contains("profile"), "{prompt}");
    assert!(plugin.calls().is_empty());

    plugin.push(PluginStep::Text("Order placed for milk.".into()));
    let answered = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header("X-API-Key", app.member_token("alice").await)
        .json(&json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(answered["reply"], "Ordered.", "{answered}");
    assert_eq!(
        plugin.calls()[0]["parameters"],
        json!({"item": "milk", "address": "123 Main St", "phone": "555-0000", "contact_name": "John"})
    );
    assert_eq!(llm.tool_result_seen(1), "Order placed for milk.");
    app.stop().await;
}

#[actix::test]
async fn flow_3_everything_missing_is_asked_for_and_the_next_call_goes_through() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start(&llm, &plugin, BUY_SEED, "", false).await;
    llm.push_many([
        buy(json!({"item": "milk"})),
        Step::Reply("I need your address, phone and name.".into()),
    ]);
    app.ask("alice", "Buy milk").await;
    let asked = llm.tool_result_seen(1);
    for name in ["address", "phone", "contact_name"] {
        assert!(asked.contains(name), "{name} missing from: {asked}");
    }
    plugin.push(PluginStep::Text("Order placed.".into()));
    llm.push_many([
        buy(json!({"item": "milk", "address": "123 Oak Ave", "phone": "555-1234", "contact_name": "John"})),
        Step::Reply("Done.".into()),
    ]);
    // Several values in one sentence are the model's to read, not the fast path's.
    assert_eq!(
        app.ask("alice", "123 Oak Ave, 555-1234, I'm John").await,
        "Done."
    );
    assert_eq!(plugin.calls().len(), 1);
    assert_eq!(plugin.calls()[0]["parameters"]["address"], "123 Oak Ave");
    app.stop().await;
}

#[actix::test]
async fn use_default_directly_for_skips_confirmation_only_for_the_listed_values() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let config = "default_parameters: { default_address: \"1 Preset Rd\" }\nuse_default_directly_for: [address]\n";
    let app = start(&llm, &plugin, BUY_SEED, config, false).await;
    remember(&app, "alice", &[("name", "John"), ("phone", "555-0000")]).await;
    llm.push_many([buy(json!({"item": "milk"})), Step::Reply("Ordered.".into())]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "Buy milk"}))
        .await;
    let prompt = asked["confirmation"]["prompt"].as_str().unwrap();
    // The phone from the profile needs confirming; the preset address does not.
    assert!(prompt.contains("555-0000"), "{prompt}");
    assert!(!prompt.contains("1 Preset Rd"), "{prompt}");
    // And the model was never asked for the address: config fills it directly.
    let tools = llm.requests()[0].body["tools"].to_string();
    assert!(tools.contains("route_to_plugin"), "{tools}");
    assert!(!tools.contains("address (string"), "{tools}");
    app.stop().await;
}

#[actix::test]
async fn wrong_types_reach_the_model_and_nothing_is_called() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start(&llm, &plugin, BUY_SEED, "", false).await;
    llm.push_many([
        buy(json!({"item": "milk", "quantity": "lots", "colour": "blue"})),
        Step::Reply("How many exactly?".into()),
    ]);
    app.ask("alice", "Buy lots of milk").await;
    let error = llm.tool_result_seen(1);
    assert!(
        error.contains("quantity") && error.contains("lots"),
        "{error}"
    );
    assert!(error.contains("colour"), "{error}");
    assert!(plugin.calls().is_empty());
    app.stop().await;
}

#[actix::test]
async fn a_plugin_that_fails_or_times_out_is_explained_to_the_member() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let config = "default_parameters: { default_address: \"1 Rd\", phone: \"5\", contact_name: J }\nuse_defaults_directly: true\n";
    let app = start(&llm, &plugin, BUY_SEED, config, false).await;
    plugin.push(PluginStep::Error {
        status: 500,
        message: "the shop is closed".into(),
    });
    llm.push(buy(json!({"item": "milk"})));
    let reply = app.ask("alice", "Buy milk").await;
    assert!(
        reply.starts_with("Sorry, I couldn't complete that"),
        "{reply}"
    );
    assert!(reply.contains("the shop is closed"), "{reply}");

    plugin.push(PluginStep::Delay(
        Duration::from_secs(5),
        Box::new(PluginStep::Text("late".into())),
    ));
    llm.push(buy(json!({"item": "bread"})));
    let reply = app.ask("alice", "Buy bread").await;
    assert!(reply.contains("did not answer within 2 s"), "{reply}");
    assert!(reply.contains("check before asking again"), "{reply}");
    assert_eq!(
        llm.requests().len(),
        2,
        "the member hears it without another model round"
    );
    app.stop().await;
}

#[actix::test]
async fn post_processing_rewrites_the_plugin_answer_for_the_member() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let config = "default_parameters: { default_address: \"1 Rd\", phone: \"5\", contact_name: J }\nuse_defaults_directly: true\n";
    let app = start(&llm, &plugin, BUY_SEED, config, true).await;
    plugin.push(PluginStep::Text("ORDER 42 OK".into()));
    llm.push_many([
        buy(json!({"item": "milk"})),
        Step::Reply("Your milk is ordered (**#42**).".into()),
    ]);
    assert_eq!(
        app.ask("alice", "Buy milk").await,
        "Your milk is ordered (**#42**)."
    );
    let post = &llm.requests()[1].body["messages"];
    assert_eq!(post[0]["role"], "system");
    assert_eq!(post[0]["content"], "Rewrite the order confirmation warmly.");
    assert_eq!(post[1]["content"], "ORDER 42 OK");
    assert_eq!(post.as_array().unwrap().len(), 2);
    app.stop().await;
}

#[actix::test]
async fn an_edited_config_applies_to_the_next_call_without_a_restart() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let config = "default_parameters: { default_address: \"1 Old Rd\", phone: \"5\", contact_name: J }\nuse_defaults_directly: true\n";
    let app = start(&llm, &plugin, BUY_SEED, config, false).await;
    llm.push_many([buy(json!({"item": "milk"})), Step::Reply("One.".into())]);
    app.ask("alice", "Buy milk").await;
    std::fs::write(
        app.folder().join("plugins/buy/config.yml"),
        config.replace("1 Old Rd", "2 New Rd"),
    )
    .unwrap();
    llm.push_many([buy(json!({"item": "eggs"})), Step::Reply("Two.".into())]);
    app.ask("alice", "Buy eggs").await;
    let calls = plugin.calls();
    assert_eq!(calls[0]["parameters"]["address"], "1 Old Rd");
    assert_eq!(calls[1]["parameters"]["address"], "2 New Rd");
    app.stop().await;
}

#[actix::test]
async fn the_family_shopping_list_adds_merges_and_lists() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start(&llm, &plugin, BUY_SEED, "", false).await;
    let shopping = |capability: &str, parameters: Value| {
        Step::ToolCalls(vec![(
            "route_to_plugin".into(),
            json!({"plugin_id": "shopping_list", "capability_id": capability, "parameters": parameters}),
        )])
    };
    llm.push_many([
        shopping("add", json!({"item": "milk"})),
        Step::Reply("Added.".into()),
        shopping("add", json!({"item": "Milk", "quantity": 2})),
        Step::Reply("Added more.".into()),
        shopping("list", json!({})),
        Step::Reply("Here it is.".into()),
    ]);
    app.ask("alice", "add milk to the shopping list").await;
    assert_eq!(llm.tool_result_seen(1), "Added milk to the groceries list.");
    app.ask("bob", "two more milk please").await;
    assert!(
        llm.tool_result_seen(3).contains("now says 3"),
        "{}",
        llm.tool_result_seen(3)
    );
    app.ask("alice", "what's on the list?").await;
    assert_eq!(llm.tool_result_seen(5), "The groceries list:\n- 3 × milk");
    app.stop().await;
}

async fn post(app: &Hearth, path: &str, key: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("{}{path}", app.base_url))
        .json(&body);
    if let Some(key) = key {
        request = request.header("X-API-Key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[actix::test]
async fn external_plugins_register_their_schema_and_are_offered_at_once() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start(&llm, &plugin, BUY_SEED, "", false).await;
    let manifest = json!({
        "id": "weather", "name": "Weather", "description": "Tell the weather for a city.",
        "type": "http", "url": plugin.url(),
        "capabilities": [{"id": "forecast", "description": "The forecast.",
            "parameters": [{"name": "city", "type": "string", "required": true,
                            "description": "Which city."}]}]
    });
    let register = "/api/plugins/register";
    assert_eq!(post(&app, register, None, manifest.clone()).await.0, 401);
    // Registering is administration: the inbound and the plugin keys do not open it.
    assert_eq!(
        post(&app, register, Some(API_KEY), manifest.clone())
            .await
            .0,
        403
    );
    assert_eq!(
        post(&app, register, Some(PLUGIN_API_KEY), manifest.clone())
            .await
            .0,
        403
    );
    let (status, body) = post(&app, register, Some(ADMIN_API_KEY), manifest.clone()).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("added")),
        "{body}"
    );
    assert_eq!(
        post(&app, register, Some(ADMIN_API_KEY), manifest.clone())
            .await
            .0,
        200
    );

    // Defaults stay in config.yml: a registration carrying values is refused.
    let mut with_defaults = manifest.clone();
    with_defaults["default_parameters"] = json!({"city": "Oslo"});
    let (status, body) = post(&app, register, Some(ADMIN_API_KEY), with_defaults).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("default_parameters"),
        "{body}"
    );
    // Only http plugins register; a folder plugin's id is not up for grabs.
    let mut command = manifest.clone();
    command["type"] = json!("command");
    command["command"] = json!(["/bin/true"]);
    command.as_object_mut().unwrap().remove("url");
    assert_eq!(
        post(&app, register, Some(ADMIN_API_KEY), command).await.0,
        400
    );
    let mut taken = manifest.clone();
    taken["id"] = json!("buy");
    assert_eq!(
        post(&app, register, Some(ADMIN_API_KEY), taken).await.0,
        409
    );

    plugin.push(PluginStep::Text("Sunny, 21 °C.".into()));
    llm.push_many([
        Step::ToolCalls(vec![(
            "route_to_plugin".into(),
            json!({"plugin_id": "weather", "parameters": {"city": "Oslo"}}),
        )]),
        Step::Reply("Sunny in Oslo.".into()),
    ]);
    assert_eq!(app.ask("alice", "weather in Oslo?").await, "Sunny in Oslo.");
    let offered = llm.requests()[0].body["tools"].to_string();
    assert!(offered.contains("weather"), "{offered}");
    assert_eq!(plugin.calls()[0]["capability_id"], "forecast");
    let stored = app
        .app()
        .stores
        .registered_plugins
        .get("weather")
        .await
        .unwrap();
    assert!(
        stored.is_some(),
        "the registration is kept for the next start"
    );
    app.stop().await;
}

#[actix::test]
async fn the_plugin_llm_api_needs_the_key_and_shares_the_semaphore_with_the_family() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let folder = tempfile::tempdir().unwrap();
    let _ = &plugin;
    let app = Hearth::start_in(
        folder,
        &llm.base_url(),
        &[("HEARTH__LLM_MAX_CONCURRENT_CLOUD", "1")],
    )
    .await;
    let generate = "/api/plugins/llm/generate";
    let body = json!({"messages": [{"role": "user", "content": "Say hi"}]});
    assert_eq!(post(&app, generate, None, body.clone()).await.0, 401);
    // The plugin API has its own key: the family's inbound key does not open it.
    assert_eq!(
        post(&app, generate, Some(API_KEY), body.clone()).await.0,
        403
    );
    llm.push(Step::Reply("hi".into()));
    assert_eq!(
        post(&app, generate, Some(PLUGIN_API_KEY), body.clone()).await,
        (200, json!({"text": "hi"}))
    );
    let (status, error) = post(
        &app,
        generate,
        Some(PLUGIN_API_KEY),
        json!({"messages": [{"role": "user", "content": "x"}], "llm_name": "nope"}),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert!(error["error"].as_str().unwrap().contains("nope"), "{error}");
    let (status, _) = post(
        &app,
        generate,
        Some(PLUGIN_API_KEY),
        json!({"messages": [{"role": "robot", "content": "x"}]}),
    )
    .await;
    assert_eq!(status, 400);

    // A plugin's call and a family member's message at once: one at a time at the model.
    llm.reset_counters();
    let slow = |text: &str| {
        Step::Delay(
            Duration::from_millis(400),
            Box::new(Step::Reply(text.into())),
        )
    };
    llm.push_many([slow("one"), slow("two")]);
    let (member, plugin_call) = tokio::join!(
        app.ask("alice", "hello"),
        post(&app, generate, Some(PLUGIN_API_KEY), body)
    );
    assert_eq!(plugin_call.0, 200);
    assert!(["one", "two"].contains(&member.as_str()), "{member}");
    assert_eq!(llm.request_count(), 2);
    assert_eq!(llm.max_concurrent(), 1, "the semaphore is shared");
    app.stop().await;
}

#[actix::test]
async fn a_plugin_asking_for_more_is_handled_like_a_missing_parameter() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let config = "default_parameters: { default_address: \"1 Rd\", phone: \"5\", contact_name: J }\nuse_defaults_directly: true\n";
    let app = start(&llm, &plugin, BUY_SEED, config, false).await;
    plugin.push(PluginStep::AskUser {
        missing: vec!["quantity".into()],
        text: "How many bottles?".into(),
    });
    llm.push_many([
        buy(json!({"item": "milk"})),
        Step::Reply("How many bottles?".into()),
    ]);
    assert_eq!(app.ask("alice", "Buy milk").await, "How many bottles?");
    let told = llm.tool_result_seen(1);
    assert!(
        told.contains("quantity") && told.contains("How many bottles?"),
        "{told}"
    );
    // The member's answer completes the call; the model is not asked again.
    plugin.push(PluginStep::Text("Ordered 2 bottles.".into()));
    assert_eq!(app.ask("alice", "2").await, "Ordered 2 bottles.");
    assert_eq!(llm.requests().len(), 2);
    let calls = plugin.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1]["parameters"]["quantity"], 2);
    assert_eq!(calls[1]["parameters"]["item"], "milk");
    app.stop().await;
}

#[actix::test]
async fn registered_plugins_are_capped_and_a_replacement_always_goes() {
    let (llm, plugin) = (ScriptedLlmServer::start(), PluginServer::start());
    let app = start(&llm, &plugin, BUY_SEED, "", false).await;
    let manifest = |id: &str| {
        json!({
            "id": id, "name": id, "description": "A registered plugin.",
            "type": "http", "url": plugin.url(),
            "capabilities": [{"id": "run", "description": "Run."}]
        })
    };
    let register = "/api/plugins/register";
    let cap = hearth::plugins::MAX_REGISTERED_PLUGINS;
    for n in 0..cap {
        let (status, body) = post(
            &app,
            register,
            Some(ADMIN_API_KEY),
            manifest(&format!("p{n}")),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = post(&app, register, Some(ADMIN_API_KEY), manifest("one_more")).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains(&format!("{cap} plugins are registered already")),
        "{body}"
    );
    // Replacing a registered one is still allowed.
    let (status, _) = post(&app, register, Some(ADMIN_API_KEY), manifest("p0")).await;
    assert_eq!(status, 200);
    app.stop().await;
}
