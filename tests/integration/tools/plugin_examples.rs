//! The example plugins shipped under `plugins/` work as shipped: "buy me some milk" with the
//! example `buy` plugin server (`plugins/buy/server.py`, a real HTTP server), confirmed by
//! the member before anything is ordered.

use serde_json::{Value, json};

use crate::support::buy_server::BuyServer;
use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};

#[actix::test]
async fn buy_me_some_milk_with_the_example_plugin() {
    let folder = tempfile::tempdir().unwrap();
    let orders = folder.path().join("orders.jsonl");
    let server = BuyServer::start(&orders);
    let plugins_dir = server
        .plugins_folder(folder.path(), "")
        .display()
        .to_string();
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start_in(
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
    .await;
    for (key, value) in [
        ("name", "John"),
        ("address", "123 Main St"),
        ("phone", "555-0000"),
    ] {
        app.app()
            .stores
            .profiles
            .set(&"alice".parse().unwrap(), key, Some(value))
            .await
            .unwrap();
    }
    llm.push_many([
        Step::ToolCalls(vec![(
            "route_to_plugin".into(),
            json!({"plugin_id": "buy", "parameters": {"item": "milk"}}),
        )]),
        Step::Reply("Your milk is on its way.".into()),
    ]);
    let (_, asked) = app
        .send(json!({"user_id": "alice", "text": "Buy me some milk"}))
        .await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    assert!(
        !orders.exists(),
        "nothing is ordered before the member confirms"
    );
    let answered: Value = app
        .client
        .post(format!("{}/inbound/confirm", app.base_url))
        .header("X-API-Key", app.member_token("alice").await)
        .json(&json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice", "approve": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answered["reply"], "Your milk is on its way.", "{answered}");
    let placed: Value =
        serde_json::from_str(std::fs::read_to_string(&orders).unwrap().trim()).unwrap();
    assert_eq!(placed["item"], "milk");
    assert_eq!(placed["address"], "123 Main St");
    assert_eq!(placed["member"], "alice");
    app.stop().await;
}
