//! The plugins' ports: `PendingPluginCalls` (a call waiting for the member's next message:
//! replaced, handed out once, dropped once expired, peeked and cleared) and
//! `RegisteredPlugins` (upserted, read, listed, removed).

use hearth::ports::{PendingPluginCall, RegisteredPlugin};
use hearth::storage::Stores;
use serde_json::json;

use super::pending_actions::WAIT_MS;
use super::{T0, key, member};

adapter_suite!(
    plugin_call_put_replaces_the_earlier_one,
    plugin_call_take_valid_hands_it_out_once,
    plugin_call_take_valid_drops_an_expired_call,
    plugin_call_peek_leaves_it_and_clear_removes_it,
    plugin_call_expire_due_removes_only_the_due_ones,
    registered_plugins_upsert_get_list_remove,
);

/// A call waiting for `member_id` in `conversation_key`, with parameters awkward enough
/// that only an exact round trip keeps them equal.
pub(super) fn plugin_call(
    conversation_key: &str,
    member_id: &str,
    question: &str,
    expires_at_ms: i64,
) -> PendingPluginCall {
    let parameters = json!({
        "item": "milk \"whole\"",
        "count": 2,
        "options": {"organic": true, "brands": ["Ü", null]},
    });
    PendingPluginCall {
        conversation_key: key(conversation_key),
        member_id: member_id.parse().unwrap(),
        plugin_id: "buy".to_string(),
        capability_id: "place_order".to_string(),
        parameters: parameters.as_object().unwrap().clone(),
        missing: vec!["address".to_string(), "phone".to_string()],
        question: question.to_string(),
        created_at_ms: expires_at_ms - WAIT_MS,
        expires_at_ms,
    }
}

async fn plugin_call_put_replaces_the_earlier_one(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let first = plugin_call("telegram:1", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&first).await.unwrap();
    let second = PendingPluginCall {
        capability_id: "cancel_order".to_string(),
        parameters: serde_json::Map::new(),
        missing: vec!["order_id".to_string()],
        ..plugin_call("telegram:1", "alice", "Which order?", T0 + 2 * WAIT_MS)
    };
    calls.put(&second).await.unwrap();
    assert_eq!(
        calls
            .peek(&key("telegram:1"), &member("alice"), T0)
            .await
            .unwrap(),
        Some(second.clone())
    );
    // Another member, or the same member elsewhere, has a call of their own.
    let bobs = plugin_call("telegram:1", "bob", "Bob, which address?", T0 + WAIT_MS);
    let elsewhere = plugin_call("matrix:!room", "alice", "Where?", T0 + WAIT_MS);
    calls.put(&bobs).await.unwrap();
    calls.put(&elsewhere).await.unwrap();
    assert_eq!(
        calls
            .take_valid(&key("telegram:1"), &member("alice"), T0)
            .await
            .unwrap(),
        Some(second)
    );
    assert_eq!(
        calls
            .peek(&key("telegram:1"), &member("bob"), T0)
            .await
            .unwrap(),
        Some(bobs)
    );
    assert_eq!(
        calls
            .peek(&key("matrix:!room"), &member("alice"), T0)
            .await
            .unwrap(),
        Some(elsewhere)
    );
    assert_eq!(
        calls
            .peek(&key("telegram:1"), &member("carol"), T0)
            .await
            .unwrap(),
        None
    );
}

async fn plugin_call_take_valid_hands_it_out_once(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let call = plugin_call("http:kitchen", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&call).await.unwrap();
    // Valid until just before `expires_at_ms`.
    assert_eq!(
        calls
            .take_valid(&key("http:kitchen"), &member("alice"), T0 + WAIT_MS - 1)
            .await
            .unwrap(),
        Some(call)
    );
    assert_eq!(
        calls
            .take_valid(&key("http:kitchen"), &member("alice"), T0)
            .await
            .unwrap(),
        None,
        "taken already"
    );
    assert_eq!(
        calls
            .peek(&key("http:kitchen"), &member("alice"), T0)
            .await
            .unwrap(),
        None
    );
}

async fn plugin_call_take_valid_drops_an_expired_call(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let call = plugin_call("http:kitchen", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&call).await.unwrap();
    assert_eq!(
        calls
            .take_valid(&key("http:kitchen"), &member("alice"), T0 + WAIT_MS)
            .await
            .unwrap(),
        None,
        "expired at expires_at_ms"
    );
    // Removed, not just hidden: it is gone even for an earlier clock.
    assert_eq!(
        calls
            .peek(&key("http:kitchen"), &member("alice"), T0)
            .await
            .unwrap(),
        None
    );
    assert!(
        !calls
            .clear(&key("http:kitchen"), &member("alice"))
            .await
            .unwrap()
    );
}

async fn plugin_call_peek_leaves_it_and_clear_removes_it(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let call = plugin_call("http:kitchen", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&call).await.unwrap();
    for _ in 0..2 {
        assert_eq!(
            calls
                .peek(&key("http:kitchen"), &member("alice"), T0)
                .await
                .unwrap(),
            Some(call.clone())
        );
    }
    // Past its expiry peek shows nothing, and removes nothing either.
    assert_eq!(
        calls
            .peek(&key("http:kitchen"), &member("alice"), T0 + WAIT_MS)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        calls
            .peek(&key("http:kitchen"), &member("alice"), T0)
            .await
            .unwrap(),
        Some(call)
    );
    // Clearing also removes an expired call, and says it was there.
    assert!(
        calls
            .clear(&key("http:kitchen"), &member("alice"))
            .await
            .unwrap()
    );
    assert!(
        !calls
            .clear(&key("http:kitchen"), &member("alice"))
            .await
            .unwrap()
    );
    assert_eq!(
        calls
            .peek(&key("http:kitchen"), &member("alice"), T0)
            .await
            .unwrap(),
        None
    );
}

async fn plugin_call_expire_due_removes_only_the_due_ones(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    assert_eq!(calls.expire_due(T0).await.unwrap(), 0);
    for (member, expires_at_ms) in [("alice", T0 + 1), ("bob", T0 + 2), ("carol", T0 + 10)] {
        let call = plugin_call("telegram:1", member, "Which address?", expires_at_ms);
        calls.put(&call).await.unwrap();
    }
    assert_eq!(calls.expire_due(T0 + 2).await.unwrap(), 2);
    assert_eq!(calls.expire_due(T0 + 2).await.unwrap(), 0);
    for member in ["alice", "bob"] {
        assert_eq!(
            calls
                .peek(&key("telegram:1"), &super::member(member), T0)
                .await
                .unwrap(),
            None
        );
    }
    assert_eq!(
        calls
            .peek(&key("telegram:1"), &member("carol"), T0)
            .await
            .unwrap(),
        Some(plugin_call(
            "telegram:1",
            "carol",
            "Which address?",
            T0 + 10
        ))
    );
}

pub(super) fn manifest(id: &str, url: &str) -> serde_json::Value {
    json!({
        "id": id,
        "name": format!("{id} plugin"),
        "type": "http",
        "url": url,
        "timeout_seconds": 20,
        "capabilities": [{
            "id": "run",
            "parameters": [{"name": "item", "type": "string", "required": true}],
        }],
    })
}

async fn registered_plugins_upsert_get_list_remove(stores: &Stores) {
    let plugins = &stores.registered_plugins;
    assert!(plugins.list().await.unwrap().is_empty());
    assert_eq!(plugins.get("weather").await.unwrap(), None);
    let weather = manifest("weather", "http://127.0.0.1:9101/run");
    plugins.upsert("weather", &weather, T0).await.unwrap();
    plugins
        .upsert("buy", &manifest("buy", "http://old.example/run"), T0 + 1)
        .await
        .unwrap();
    // Registering again replaces the manifest and the time.
    let buy = manifest("buy", "http://127.0.0.1:9100/run");
    plugins.upsert("buy", &buy, T0 + 2).await.unwrap();

    let buy = RegisteredPlugin {
        plugin_id: "buy".to_string(),
        manifest: buy,
        registered_at_ms: T0 + 2,
    };
    let weather = RegisteredPlugin {
        plugin_id: "weather".to_string(),
        manifest: weather,
        registered_at_ms: T0,
    };
    assert_eq!(plugins.get("buy").await.unwrap(), Some(buy.clone()));
    assert_eq!(
        plugins.list().await.unwrap(),
        vec![buy.clone(), weather.clone()],
        "by id"
    );
    assert!(plugins.remove("weather").await.unwrap());
    assert!(!plugins.remove("weather").await.unwrap());
    assert!(!plugins.remove("never-registered").await.unwrap());
    assert_eq!(plugins.get("weather").await.unwrap(), None);
    assert_eq!(plugins.list().await.unwrap(), vec![buy]);
}
