//! The `ToolsProvider` stack over in-memory profiles: the local profile tools,
//! the per-profile filter, and the composite that joins providers.

use std::sync::Arc;

use async_trait::async_trait;
use hearth::llm::ToolSpec;
use hearth::ports::{ProfileFacts, UserProfiles};
use hearth::storage::Stores;
use hearth::tools::{
    CompositeToolsProvider, FilteredToolsProvider, LOCAL_TOOL_NAMES, LocalToolsProvider,
    ToolContext, ToolError, ToolsProvider,
};
use serde_json::{Value, json};

fn member(id: &str) -> hearth::ids::MemberId {
    id.parse().unwrap()
}

/// What the store holds for `member_id`.
async fn stored(profiles: &Arc<dyn UserProfiles>, member_id: &str) -> ProfileFacts {
    profiles.get(&member(member_id)).await.unwrap()
}

/// Store a fact of `member_id` by other means than the tools.
async fn remember(profiles: &Arc<dyn UserProfiles>, member_id: &str, key: &str, value: &str) {
    profiles
        .set(&member(member_id), key, Some(value))
        .await
        .unwrap();
}

fn context(member_id: &str) -> ToolContext {
    ToolContext {
        member_id: member_id.parse().unwrap(),
        conversation_key: hearth::ids::ConversationKey::new("http", member_id).unwrap(),
        profile_id: "family".to_string(),
        question_timeout: std::time::Duration::from_secs(300),
        idempotency_key: None,
    }
}

fn local() -> (Arc<dyn UserProfiles>, Arc<LocalToolsProvider>) {
    let profiles = Stores::in_memory().profiles;
    let provider = Arc::new(LocalToolsProvider::new(profiles.clone()));
    (profiles, provider)
}

fn names(tools: &[ToolSpec]) -> Vec<&str> {
    tools.iter().map(|tool| tool.name.as_str()).collect()
}

async fn update(
    provider: &dyn ToolsProvider,
    member: &str,
    arguments: Value,
) -> Result<String, ToolError> {
    provider
        .call("profile_update", &arguments, &context(member))
        .await
}

/// `profile_get` for `member`, parsed back into facts.
async fn read(provider: &dyn ToolsProvider, member: &str) -> ProfileFacts {
    let text = provider
        .call("profile_get", &json!({}), &context(member))
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{text:?}: {error}"))
}

fn facts(pairs: &[(&str, &str)]) -> ProfileFacts {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// The `InvalidArguments` message of a refused `profile_update`.
fn invalid_message(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments { tool, message }) => {
            assert_eq!(tool, "profile_update");
            message
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
}

fn assert_unknown_tool(result: Result<String, ToolError>, name: &str) {
    match result {
        Err(ToolError::UnknownTool(named)) => assert_eq!(named, name),
        other => panic!("expected UnknownTool({name:?}), got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Local profile tools
// ---------------------------------------------------------------------------

#[tokio::test]
async fn local_provider_offers_every_local_tool() {
    let (_, provider) = local();
    let tools = provider.tools().await;
    let mut offered = names(&tools);
    offered.sort_unstable();
    // delegate_to_service, route_to_plugin, the family-script tools, the reminder tools, the
    // note tools, the calendar tools, search_memory and check_order_status are local tools
    // too, but built per profile by the delegation actor, the plugins, the scripts, the
    // reminders, the notes, the calendar, recall and the intents engine.
    let mut known: Vec<&str> = LOCAL_TOOL_NAMES
        .iter()
        .copied()
        .filter(|name| {
            ![
                "delegate_to_service",
                "route_to_plugin",
                "check_order_status",
            ]
            .contains(name)
        })
        .filter(|name| !hearth::scripts::SCRIPT_TOOL_NAMES.contains(name))
        .filter(|name| !hearth::reminders::REMINDER_TOOL_NAMES.contains(name))
        .filter(|name| !hearth::notes::NOTE_TOOL_NAMES.contains(name))
        .filter(|name| !hearth::calendar::CALENDAR_TOOL_NAMES.contains(name))
        .filter(|name| !hearth::recall::MEMORY_TOOL_NAMES.contains(name))
        .collect();
    known.sort_unstable();
    assert_eq!(offered, known);
    for tool in &tools {
        assert!(
            !tool.description.is_empty(),
            "{} has no description",
            tool.name
        );
        assert_eq!(tool.parameters["type"], "object", "{}", tool.name);
    }
    assert_unknown_tool(
        provider
            .call("send_email", &json!({}), &context("alice"))
            .await,
        "send_email",
    );
}

#[tokio::test]
async fn profile_update_saves_and_profile_get_returns_the_facts() {
    let (profiles, provider) = local();
    assert_eq!(read(provider.as_ref(), "alice").await, ProfileFacts::new());

    let saved = update(
        provider.as_ref(),
        "alice",
        json!({"key": "address", "value": "1 Rue de la Paix"}),
    )
    .await
    .unwrap();
    assert!(saved.contains("address"), "{saved}");
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "favourite_food_2", "value": "  crêpes  "}),
    )
    .await
    .unwrap();

    let expected = facts(&[
        ("address", "1 Rue de la Paix"),
        ("favourite_food_2", "crêpes"),
    ]);
    assert_eq!(read(provider.as_ref(), "alice").await, expected);
    // The tool wrote through the port: the store agrees.
    assert_eq!(stored(&profiles, "alice").await, expected);

    // Overwrite.
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "address", "value": "2 Avenue Foch"}),
    )
    .await
    .unwrap();
    assert_eq!(
        read(provider.as_ref(), "alice").await,
        facts(&[("address", "2 Avenue Foch"), ("favourite_food_2", "crêpes")])
    );
}

#[tokio::test]
async fn profile_get_reads_facts_stored_by_other_means() {
    let (profiles, provider) = local();
    remember(&profiles, "alice", "phone", "+33 1 23").await;
    remember(&profiles, "alice", "name", "Alice").await;
    let text = provider
        .call("profile_get", &json!({}), &context("alice"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"name": "Alice", "phone": "+33 1 23"})
    );
}

#[tokio::test]
async fn an_empty_value_forgets_the_key() {
    let (profiles, provider) = local();
    for key in ["a", "b", "c", "d"] {
        update(
            provider.as_ref(),
            "alice",
            json!({"key": key, "value": "x"}),
        )
        .await
        .unwrap();
    }

    let forgot = update(provider.as_ref(), "alice", json!({"key": "a", "value": ""}))
        .await
        .unwrap();
    assert!(forgot.contains('a'), "{forgot}");
    // Blank after trimming, null, or missing: all forget.
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "b", "value": "   "}),
    )
    .await
    .unwrap();
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "c", "value": null}),
    )
    .await
    .unwrap();
    update(provider.as_ref(), "alice", json!({"key": "d"}))
        .await
        .unwrap();
    assert_eq!(stored(&profiles, "alice").await, ProfileFacts::new());
    assert_eq!(read(provider.as_ref(), "alice").await, ProfileFacts::new());

    // Forgetting an unknown key is not an error.
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "never", "value": ""}),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn invalid_keys_are_refused_by_name() {
    let (profiles, provider) = local();
    let too_long = "k".repeat(65);
    for key in [
        "Name",
        "home address",
        "",
        "   ",
        "e-mail",
        "clé",
        too_long.as_str(),
    ] {
        let message = invalid_message(
            update(
                provider.as_ref(),
                "alice",
                json!({"key": key, "value": "x"}),
            )
            .await,
        );
        assert!(
            message.contains(&format!("{:?}", key.trim())),
            "the message names the key {key:?}: {message}"
        );
    }
    // A non-string or missing key.
    for arguments in [
        json!({"key": 7, "value": "x"}),
        json!({"key": null, "value": "x"}),
        json!({"value": "x"}),
        json!("key=value"),
    ] {
        let message = invalid_message(update(provider.as_ref(), "alice", arguments).await);
        assert!(message.contains("key"), "{message}");
    }
    assert_eq!(stored(&profiles, "alice").await, ProfileFacts::new());

    // The limits themselves are fine: 64 characters of a-z, 0-9 and _.
    let longest = "k".repeat(64);
    update(
        provider.as_ref(),
        "alice",
        json!({"key": longest, "value": "x"}),
    )
    .await
    .unwrap();
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "_0_z9", "value": "y"}),
    )
    .await
    .unwrap();
    assert_eq!(
        stored(&profiles, "alice").await,
        facts(&[(longest.as_str(), "x"), ("_0_z9", "y")])
    );
}

#[tokio::test]
async fn non_string_values_are_refused() {
    let (profiles, provider) = local();
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "age", "value": "41"}),
    )
    .await
    .unwrap();
    for value in [json!(42), json!(true), json!(["a"]), json!({"street": "x"})] {
        let shown = value.to_string();
        let message = invalid_message(
            update(
                provider.as_ref(),
                "alice",
                json!({"key": "age", "value": value}),
            )
            .await,
        );
        assert!(
            message.contains(&shown),
            "the message shows the value: {message}"
        );
    }
    assert_eq!(
        stored(&profiles, "alice").await,
        facts(&[("age", "41")]),
        "a refused update leaves the fact alone"
    );
}

#[tokio::test]
async fn values_over_1000_characters_are_refused() {
    let (profiles, provider) = local();
    let message = invalid_message(
        update(
            provider.as_ref(),
            "alice",
            json!({"key": "notes", "value": "x".repeat(1001)}),
        )
        .await,
    );
    assert!(message.contains("\"notes\""), "{message}");
    assert!(message.contains("1000"), "{message}");
    assert_eq!(stored(&profiles, "alice").await, ProfileFacts::new());

    // The limit counts characters, not bytes, and surrounding blanks are trimmed first.
    let accents = "é".repeat(1000);
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "notes", "value": format!("  {accents}  ")}),
    )
    .await
    .unwrap();
    assert_eq!(
        stored(&profiles, "alice").await,
        facts(&[("notes", accents.as_str())])
    );
}

#[tokio::test]
async fn tools_act_only_on_the_asking_member() {
    let (profiles, provider) = local();
    update(
        provider.as_ref(),
        "alice",
        json!({"key": "phone", "value": "111"}),
    )
    .await
    .unwrap();
    assert_eq!(read(provider.as_ref(), "bob").await, ProfileFacts::new());
    assert_eq!(stored(&profiles, "bob").await, ProfileFacts::new());

    // Arguments naming another member change nothing about whose profile is touched.
    update(
        provider.as_ref(),
        "bob",
        json!({"key": "phone", "value": "222", "member_id": "alice"}),
    )
    .await
    .unwrap();
    let text = provider
        .call(
            "profile_get",
            &json!({"member_id": "bob"}),
            &context("alice"),
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<ProfileFacts>(&text).unwrap(),
        facts(&[("phone", "111")])
    );
    assert_eq!(
        read(provider.as_ref(), "bob").await,
        facts(&[("phone", "222")])
    );

    update(
        provider.as_ref(),
        "bob",
        json!({"key": "phone", "value": ""}),
    )
    .await
    .unwrap();
    assert_eq!(
        read(provider.as_ref(), "alice").await,
        facts(&[("phone", "111")])
    );
    assert_eq!(read(provider.as_ref(), "bob").await, ProfileFacts::new());
}

// ---------------------------------------------------------------------------
// FilteredToolsProvider
// ---------------------------------------------------------------------------

#[tokio::test]
async fn filtered_provider_offers_and_calls_only_allowed_tools() {
    let (profiles, provider) = local();
    remember(&profiles, "alice", "name", "Alice").await;
    let read_only = FilteredToolsProvider::new(provider.clone(), ["profile_get".to_string()]);

    assert_eq!(names(&read_only.tools().await), ["profile_get"]);
    let text = read_only
        .call("profile_get", &json!({}), &context("alice"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<ProfileFacts>(&text).unwrap(),
        facts(&[("name", "Alice")])
    );

    // The inner provider has profile_update, but this profile was never offered it.
    assert_unknown_tool(
        update(
            &read_only,
            "alice",
            json!({"key": "name", "value": "Mallory"}),
        )
        .await,
        "profile_update",
    );
    assert_eq!(
        stored(&profiles, "alice").await,
        facts(&[("name", "Alice")])
    );

    // Allowed but unknown to the inner provider: still unknown.
    let with_ghost = FilteredToolsProvider::new(
        provider.clone(),
        ["profile_update".to_string(), "ghost".to_string()],
    );
    assert_eq!(names(&with_ghost.tools().await), ["profile_update"]);
    assert_unknown_tool(
        with_ghost
            .call("ghost", &json!({}), &context("alice"))
            .await,
        "ghost",
    );

    // Nothing allowed: nothing offered, nothing callable.
    let none = FilteredToolsProvider::new(provider, Vec::<String>::new());
    assert!(none.tools().await.is_empty());
    assert_unknown_tool(
        none.call("profile_get", &json!({}), &context("alice"))
            .await,
        "profile_get",
    );
}

// ---------------------------------------------------------------------------
// CompositeToolsProvider
// ---------------------------------------------------------------------------

/// A test-only provider: fixed tool names, answering each call with its own label.
struct LabelledTools {
    label: &'static str,
    names: &'static [&'static str],
}

#[async_trait]
impl ToolsProvider for LabelledTools {
    async fn tools(&self) -> Vec<ToolSpec> {
        self.names
            .iter()
            .map(|name| ToolSpec {
                name: name.to_string(),
                description: format!("{name} from {}", self.label),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        if !self.names.contains(&name) {
            return Err(ToolError::UnknownTool(name.to_string()));
        }
        Ok(format!(
            "{} ran {name} for {} with {arguments}",
            self.label, context.member_id
        ))
    }
}

fn labelled(label: &'static str, names: &'static [&'static str]) -> Arc<dyn ToolsProvider> {
    Arc::new(LabelledTools { label, names })
}

#[tokio::test]
async fn composite_concatenates_tools_in_provider_order() {
    let composite = CompositeToolsProvider::new(vec![
        labelled("first", &["clock", "weather"]),
        labelled("second", &["calendar"]),
        labelled("third", &[]),
    ]);
    let tools = composite.tools().await;
    assert_eq!(names(&tools), ["clock", "weather", "calendar"]);
    assert_eq!(tools[2].description, "calendar from second");

    let answer = composite
        .call("calendar", &json!({"day": 1}), &context("bob"))
        .await
        .unwrap();
    assert_eq!(answer, r#"second ran calendar for bob with {"day":1}"#);
    let answer = composite
        .call("clock", &json!({}), &context("bob"))
        .await
        .unwrap();
    assert!(answer.starts_with("first ran clock"), "{answer}");
}

#[tokio::test]
async fn composite_first_provider_wins_a_name_clash() {
    let composite = CompositeToolsProvider::new(vec![
        labelled("first", &["clock", "shared"]),
        labelled("second", &["shared", "calendar"]),
    ]);
    let tools = composite.tools().await;
    assert_eq!(names(&tools), ["clock", "shared", "calendar"]);
    assert_eq!(tools[1].description, "shared from first");
    let answer = composite
        .call("shared", &json!({}), &context("alice"))
        .await
        .unwrap();
    assert!(answer.starts_with("first ran shared"), "{answer}");

    // With the real local tools on either side of the clash.
    let (profiles, provider) = local();
    remember(&profiles, "alice", "name", "Alice").await;
    let local_first = CompositeToolsProvider::new(vec![
        provider.clone(),
        labelled("fake", &["profile_get", "clock"]),
    ]);
    let tools = local_first.tools().await;
    let mut offered = names(&tools);
    offered.sort_unstable();
    assert_eq!(offered, ["clock", "profile_get", "profile_update"]);
    let get = tools
        .iter()
        .find(|tool| tool.name == "profile_get")
        .unwrap();
    assert!(!get.description.contains("fake"), "{}", get.description);
    let text = local_first
        .call("profile_get", &json!({}), &context("alice"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<ProfileFacts>(&text).unwrap(),
        facts(&[("name", "Alice")])
    );

    let fake_first =
        CompositeToolsProvider::new(vec![labelled("fake", &["profile_get", "clock"]), provider]);
    let tools = fake_first.tools().await;
    assert_eq!(names(&tools)[..2], ["profile_get", "clock"]);
    assert_eq!(tools[0].description, "profile_get from fake");
    assert_eq!(
        tools
            .iter()
            .filter(|tool| tool.name == "profile_get")
            .count(),
        1
    );
    let text = fake_first
        .call("profile_get", &json!({}), &context("alice"))
        .await
        .unwrap();
    assert!(text.starts_with("fake ran profile_get for alice"), "{text}");
    // Names the fake lacks still reach the local tools.
    update(
        &fake_first,
        "alice",
        json!({"key": "city", "value": "Lyon"}),
    )
    .await
    .unwrap();
    assert_eq!(
        stored(&profiles, "alice").await,
        facts(&[("city", "Lyon"), ("name", "Alice")])
    );
}

#[tokio::test]
async fn composite_refuses_an_unknown_name() {
    let composite = CompositeToolsProvider::new(vec![
        labelled("first", &["clock"]),
        labelled("second", &["calendar"]),
    ]);
    assert_unknown_tool(
        composite
            .call("weather", &json!({}), &context("alice"))
            .await,
        "weather",
    );

    let empty = CompositeToolsProvider::new(Vec::new());
    assert!(empty.tools().await.is_empty());
    assert_unknown_tool(
        empty.call("clock", &json!({}), &context("alice")).await,
        "clock",
    );

    // A filtered provider inside a composite: what it hides stays unknown.
    let (_, provider) = local();
    let stack = CompositeToolsProvider::new(vec![
        Arc::new(FilteredToolsProvider::new(
            provider,
            ["profile_get".to_string()],
        )),
        labelled("extra", &["clock"]),
    ]);
    assert_eq!(names(&stack.tools().await), ["profile_get", "clock"]);
    assert_unknown_tool(
        update(&stack, "alice", json!({"key": "name", "value": "x"})).await,
        "profile_update",
    );
}
