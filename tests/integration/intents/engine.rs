//! The intents engine end to end over the real HTTP channel, with the scripted LLM server on
//! both wire formats: one turn, collecting a missing parameter over two, the ten telemetry
//! stages in order, `/cancel`, `confirm_tools`, delegation, a bad intents file, the
//! registry's filters and the DataSource suite against every adapter. Policy is in
//! `intents_policy.rs`, kills of the real binary in `intents_restart.rs`, Telegram in
//! `intents_escalation.rs`.

use std::path::Path;

use hearth::actors::request_queue::CancelPending;
use hearth::config::FamilyRole;
use hearth::intents::{
    DataSource, IntentContext, IntentsRegistry, JsonDataSource, NOT_SURE_REPLY, ORDERS,
    RecordsDataSource, SOMETHING_WRONG_REPLY, STAGES,
};
use hearth::storage::Stores;
use serde_json::{Value, json};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::intents_profile::{
    Wire, asked_which_order, classified, example_intents, orders_config, orders_config_confirming,
    orders_config_with, stage_names, stages, start, successful_calls,
};
use crate::support::llm_server::{ScriptedLlmServer, Step};

async fn single_turn(wire: Wire) {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), wire).await;
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-12345"}),
        0.95,
    ));
    let reply = app.ask("alice", "/orders where is O-12345?").await;
    assert_eq!(
        reply,
        "I'll check order O-12345.\n\nYour order O-12345 is shipped via UPS, ETA 2025-10-20."
    );
    // One LLM call: the classifier, asked for JSON, told the intents and the message.
    assert_eq!(llm.request_count(), 1);
    let body = &llm.requests()[0].body;
    match wire {
        Wire::OpenAi => {
            assert_eq!(body["response_format"]["type"], "json_schema");
            let system = body["messages"][0]["content"].as_str().unwrap();
            assert!(
                system.contains("order_status: Retrieve shipping"),
                "{system}"
            );
        }
        Wire::Anthropic => {
            assert_eq!(body["tool_choice"]["name"], "intent_classification");
            assert!(
                body["system"].to_string().contains("order_status"),
                "{body}"
            );
        }
    }
    assert!(body.to_string().contains("where is O-12345?"), "{body}");

    let events = stages(&app, "http:alice").await;
    assert_eq!(stage_names(&events), STAGES);
    for event in &events {
        for key in [
            "timestamp",
            "session_id",
            "interaction_id",
            "level",
            "payload",
        ] {
            assert!(!event[key].is_null(), "{key} missing in {event}");
        }
        assert_eq!(event["session_id"], "http:alice");
        assert_eq!(event["interaction_id"], events[0]["interaction_id"]);
    }
    assert_eq!(events[3]["payload"]["intent_id"], "order_status");
    assert_eq!(events[5]["payload"]["type"], "tool_call");
    assert_eq!(events[6]["payload"]["allowed"], true);
    assert_eq!(events[7]["payload"]["tool_name"], "check_order_status");
    assert_eq!(events[7]["payload"]["success"], true);
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains(
            "hearth_intents_stages_total{profile=\"orders\",stage=\"tool_execute\",level=\"info\"} 1"
        ),
        "{metrics}"
    );
    app.stop().await;
}

#[actix::test]
async fn an_order_status_is_answered_in_one_turn_openai() {
    single_turn(Wire::OpenAi).await;
}

#[actix::test]
async fn an_order_status_is_answered_in_one_turn_anthropic() {
    single_turn(Wire::Anthropic).await;
}

async fn multi_turn(wire: Wire) {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), wire).await;
    llm.push_many([
        classified(Some("order_status"), json!({"order_id": null}), 0.9),
        Step::Reply("What's your order ID?".into()),
    ]);
    let first = app.ask("alice", "/orders check my order").await;
    assert_eq!(first, "What's your order ID?");
    // The answer, without the slash command, continues the plan on the orders profile.
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-44444"}),
        0.9,
    ));
    let second = app.ask("alice", "O-44444").await;
    assert_eq!(
        second,
        "I'll check order O-44444.\n\nYour order O-44444 is delayed (weather), new ETA 2025-10-25."
    );
    // The second classification saw the history and was told what was asked.
    let body = llm.requests()[2].body.to_string();
    assert!(body.contains("check my order"), "{body}");
    assert!(body.contains("What's your order ID?"), "{body}");
    assert!(
        body.contains("just asked the member for order_id"),
        "{body}"
    );
    let events = stages(&app, "http:alice").await;
    let names = stage_names(&events);
    assert_eq!(names.len(), 20, "{names:?}");
    assert_eq!(names[..10], STAGES);
    assert_eq!(names[10..], STAGES);
    assert_eq!(events[5]["payload"]["type"], "ask_user");
    assert_eq!(events[9]["payload"]["total"], 2);
    app.stop().await;
}

#[actix::test]
async fn a_missing_order_id_is_asked_for_and_the_answer_continues_openai() {
    multi_turn(Wire::OpenAi).await;
}

#[actix::test]
async fn a_missing_order_id_is_asked_for_and_the_answer_continues_anthropic() {
    multi_turn(Wire::Anthropic).await;
}

#[actix::test]
async fn unknown_orders_low_confidence_and_unusable_output_have_their_answers() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), Wire::OpenAi).await;
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-99999"}),
        0.9,
    ));
    assert_eq!(
        app.ask("alice", "/orders where is O-99999?").await,
        "I'll check order O-99999.\n\nSorry, I couldn't find order O-99999."
    );
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-1"}),
        0.3,
    ));
    assert_eq!(app.ask("alice", "/orders hmm").await, NOT_SURE_REPLY);
    llm.push(classified(None, json!({}), 0.9));
    assert_eq!(
        app.ask("alice", "/orders sing a song").await,
        NOT_SURE_REPLY
    );
    // Unusable twice: asked once more, then the error answer; recorded as an error.
    llm.push_many([
        Step::Reply("not json".into()),
        Step::Reply(json!({"intent_id": "no_such_intent"}).to_string()),
    ]);
    let before = llm.request_count();
    assert_eq!(app.ask("alice", "/orders ???").await, SOMETHING_WRONG_REPLY);
    assert_eq!(llm.request_count(), before + 2);
    let events = stages(&app, "http:alice").await;
    let last: Vec<&Value> = events.iter().rev().take(10).collect();
    assert_eq!(last.len(), 10);
    let classified_event = last
        .iter()
        .find(|e| e["stage"] == "intent_classified")
        .unwrap();
    assert_eq!(classified_event["level"], "error");
    // Every interaction shows the ten stages, in order.
    let names = stage_names(&events);
    assert_eq!(names.len(), 40);
    for chunk in names.chunks(10) {
        assert_eq!(chunk, STAGES);
    }
    app.stop().await;
}

#[actix::test]
async fn cancel_drops_a_plan_waiting_for_the_member() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, &example_intents(), Wire::OpenAi).await;
    asked_which_order(&app, &llm, "alice", "Which order?").await;
    // What `/cancel` does on every chat platform.
    let cancelled = app
        .app()
        .queue
        .send(CancelPending {
            member_id: "alice".parse().unwrap(),
            conversation_key: "http:alice".parse().unwrap(),
        })
        .await
        .unwrap()
        .unwrap();
    assert!(cancelled.plan);
    assert_eq!(
        cancelled.reply(),
        Some("Cancelled: I'm no longer waiting for that answer.")
    );
    // The next plain message goes to the default profile again (the echo of the fake).
    assert_eq!(app.ask("alice", "O-12345").await, "echo: O-12345");
    app.stop().await;
}

#[actix::test]
async fn a_malformed_intents_file_is_refused_with_file_line_and_key() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let intents = folder.path().join("intents.yaml");
    std::fs::write(
        &intents,
        "intents:\n  - id: order_status\n    description: x\n    tool: check_order_status\n    constraints:\n      rollout: 150\n",
    )
    .unwrap();
    let path = orders_config(folder.path(), &llm, &intents);
    let loaded =
        crate::support::hearth_app::load(&path, &crate::support::hearth_app::test_env(&[]));
    let error = hearth::app::start(
        &loaded,
        hearth::app::StartOptions {
            serve: false,
            extra_channels: Default::default(),
            stores: Some(Stores::in_memory()),
        },
    )
    .await
    .err()
    .expect("a bad intents file stops start-up")
    .to_string();
    assert!(
        error.contains(&format!(
            "{}:6: intents[0].constraints.rollout: a percent from 0 to 100, found 150",
            intents.display()
        )),
        "{error}"
    );
    // An unknown key is named where it is written; a tool the profile lacks too.
    std::fs::write(
        &intents,
        "intents:\n  - id: a\n    description: x\n    tool: no_such_tool\n    colour: red\n",
    )
    .unwrap();
    let error = IntentsRegistry::load(&intents)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(":5: intents[0].colour: unknown field `colour`"),
        "{error}"
    );
    std::fs::write(
        &intents,
        "intents:\n  - id: a\n    description: x\n    tool: no_such_tool\n",
    )
    .unwrap();
    let registry = IntentsRegistry::load(&intents).await.unwrap();
    let error = registry
        .check_tools(&["check_order_status".to_string()], "orders")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(":4: intents[0].tool: \"no_such_tool\" is not a tool of profile \"orders\""),
        "{error}"
    );
}

#[test]
fn the_registry_filters_by_channel_rollout_and_role() {
    let registry = IntentsRegistry::from_text(
        Path::new("intents.yaml"),
        r#"
intents:
  - { id: everywhere, description: a, tool: t }
  - { id: telegram_only, description: b, tool: t, constraints: { channels: [telegram] } }
  - { id: parents_only, description: c, tool: t, constraints: { min_role: parent } }
  - { id: half, description: d, tool: t, constraints: { rollout: 50 } }
  - { id: nobody, description: e, tool: t, constraints: { rollout: 0 } }
"#,
    )
    .unwrap();
    let eligible = |channel: &str, member: &str, role: FamilyRole| -> Vec<String> {
        registry
            .eligible(&IntentContext {
                channel,
                member_id: &member.parse().unwrap(),
                role,
            })
            .into_iter()
            .map(|intent| intent.id.clone())
            .filter(|id| id != "half")
            .collect()
    };
    assert_eq!(
        eligible("http", "alice", FamilyRole::Parent),
        ["everywhere", "parents_only"]
    );
    assert_eq!(
        eligible("telegram", "bob", FamilyRole::Child),
        ["everywhere", "telegram_only"]
    );
    // Rollout is stable per member, and about half of many members are in.
    let members: Vec<String> = (0..1000).map(|n| format!("member{n}")).collect();
    let in_half = |member: &str| {
        registry
            .eligible(&IntentContext {
                channel: "http",
                member_id: &member.parse().unwrap(),
                role: FamilyRole::Parent,
            })
            .iter()
            .any(|intent| intent.id == "half")
    };
    let count = members.iter().filter(|member| in_half(member)).count();
    assert!(
        (400..600).contains(&count),
        "{count} of 1000 in a 50% rollout"
    );
    for member in &members[..50] {
        assert_eq!(in_half(member), in_half(member));
    }
}

/// The DataSource suite, run against the JSON file, SQLite and in-memory adapters.
async fn data_source_suite(source: &dyn DataSource, adapter: &str) {
    let order = source.get_order("O-12345").await.unwrap().expect(adapter);
    assert_eq!(order["status"], "shipped", "{adapter}");
    assert_eq!(order["carrier"], "UPS", "{adapter}");
    assert_eq!(
        source.get(ORDERS, " O-44444 ").await.unwrap().unwrap()["status"],
        "delayed",
        "{adapter}: ids are trimmed"
    );
    assert!(
        source.get_order("O-00000").await.unwrap().is_none(),
        "{adapter}"
    );
    assert!(
        source.get("customers", "O-12345").await.unwrap().is_none(),
        "{adapter}"
    );
}

#[actix::test]
async fn the_data_source_suite_passes_on_every_adapter() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/orders.json");
    let json_source = JsonDataSource::load(ORDERS, &file).await.unwrap();
    data_source_suite(&json_source, "json").await;

    let records: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // Every state the seed lists is in the shipped data.
    let states: Vec<&str> = records
        .values()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    for state in [
        "shipped",
        "delivered",
        "in_transit",
        "delayed",
        "not_found",
        "refunded",
    ] {
        assert!(
            states.contains(&state),
            "{state} missing from data/orders.json"
        );
    }
    let folder = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", folder.path().join("records.db").display());
    for (adapter, stores) in [
        ("sqlite", hearth::storage::open(&url, 2).await.unwrap()),
        ("in_memory", Stores::in_memory()),
    ] {
        for (id, record) in &records {
            stores
                .intent_records
                .put_record(ORDERS, id, record)
                .await
                .unwrap();
        }
        let source = RecordsDataSource(stores.intent_records.clone());
        data_source_suite(&source, adapter).await;
    }
    // A file that is not an object of records is refused, naming it.
    let bad = folder.path().join("bad.json");
    std::fs::write(&bad, "[1, 2]").unwrap();
    let error = JsonDataSource::load(ORDERS, &bad)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("bad.json") && error.contains("expected an object"),
        "{error}"
    );
}

#[actix::test]
async fn confirm_tools_asks_before_the_intent_s_tool_runs() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = orders_config_confirming(folder.path(), &llm, &example_intents());
    let app = Hearth::start_from(folder, &path, &[]).await;
    for (approve, reply) in [
        (
            true,
            "I'll check order O-12345.\n\nYour order O-12345 is shipped via UPS, ETA 2025-10-20.",
        ),
        (false, "Cancelled: nothing was done."),
    ] {
        llm.push(classified(
            Some("order_status"),
            json!({"order_id": "O-12345"}),
            0.9,
        ));
        let (status, asked) = app
            .send(json!({"user_id": "alice", "text": "/orders where is O-12345?"}))
            .await;
        assert_eq!(status, 200, "{asked}");
        assert_eq!(asked["status"], "confirmation_required", "{asked}");
        assert_eq!(
            asked["confirmation"]["prompt"],
            "Run check_order_status?\n• order_id: O-12345"
        );
        let (status, body) = app
            .confirm(
                json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                       "approve": approve}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["reply"], reply);
    }
    let events = stages(&app, "http:alice").await;
    assert_eq!(successful_calls(&events), 1, "only the approved call ran");
    app.stop().await;
}

#[actix::test]
async fn another_profile_delegates_to_the_intents_profile() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = orders_config_with(
        folder.path(),
        &llm,
        &example_intents(),
        &[("delegation_security_level", "unrestricted".into())],
    );
    let tools = (
        "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
        "profile_get,delegate_to_service",
    );
    let app = Hearth::start_from(folder, &path, &[tools]).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "delegate_to_service".into(),
            json!({"target_service_id": "orders", "user_request": "where is O-33333?"}),
        )]),
        classified(Some("order_status"), json!({"order_id": "O-33333"}), 0.9),
        Step::Reply("It is on its way.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "where is my order O-33333?").await,
        "It is on its way."
    );
    assert_eq!(
        llm.tool_result_seen(2),
        "I'll check order O-33333.\n\nYour order O-33333 is in transit with FedEx, ETA 2025-10-18."
    );
    app.stop().await;
}

#[test]
fn check_config_reads_the_intents_files() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = orders_config(folder.path(), &llm, &example_intents());
    let check = |config: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
            .arg("--config")
            .arg(config)
            .arg("check-config")
            .envs(test_env(&[]))
            .output()
            .unwrap()
    };
    let output = check(&config);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("intents of orders: order_status"),
        "{stdout}"
    );

    let broken = folder.path().join("broken.yaml");
    std::fs::write(&broken, "intents:\n  - id: a\n    description: x\n").unwrap();
    let config = orders_config(folder.path(), &llm, &broken);
    let output = check(&config);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "{}:2: intents[0]: missing field `tool`",
            broken.display()
        )),
        "{stderr}"
    );
}
