//! The `TelemetrySink` port: recording never fails; SQLite's writer fills the `llm_calls` and
//! `telemetry_events` tables.

use std::time::{Duration, Instant};

use hearth::ports::{LlmCallRecord, TelemetryEvent};
use hearth::storage::Stores;
use serde_json::json;
use sqlx::Row;

use super::{open_or_panic, sqlite_url};

adapter_suite!(telemetry_record_never_fails,);

pub(super) fn llm_call(at_ms: i64) -> LlmCallRecord {
    LlmCallRecord {
        at_ms,
        llm_name: "main".to_string(),
        model: "gpt-test".to_string(),
        backend: "openai".to_string(),
        wire: "chat_completions".to_string(),
        profile_id: Some("family".to_string()),
        conversation_key: Some("http:kitchen".parse().unwrap()),
        member_id: None,
        attempt: 2,
        outcome: "ok".to_string(),
        input_tokens: 1_234,
        output_tokens: 56,
        latency_ms: 789,
        cost_usd: 0.0125,
    }
}

pub(super) fn stage_event(at_ms: i64) -> TelemetryEvent {
    TelemetryEvent::Stage {
        at_ms,
        conversation_key: "http:kitchen".parse().unwrap(),
        stage: "prompt_built".to_string(),
        payload: json!({"messages": 3, "profile": "family"}),
    }
}

async fn telemetry_record_never_fails(stores: &Stores) {
    // `record` is fire-and-forget: it neither blocks nor fails, whatever the adapter.
    for at_ms in 0..100 {
        stores
            .telemetry
            .record(TelemetryEvent::LlmCall(llm_call(at_ms)));
        stores.telemetry.record(stage_event(at_ms));
    }
    stores.inbox.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_telemetry_writer_fills_its_tables() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());
    let stores = open_or_panic(&url).await;

    stores
        .telemetry
        .record(TelemetryEvent::LlmCall(llm_call(1_700_000_000_000)));
    stores.telemetry.record(stage_event(1_700_000_000_001));

    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let calls: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM llm_calls")
            .fetch_one(&pool)
            .await
            .unwrap();
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM telemetry_events")
            .fetch_one(&pool)
            .await
            .unwrap();
        if calls == 1 && events == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "telemetry not written: {calls} llm_calls, {events} telemetry_events"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let call = sqlx::query(
        "SELECT at_ms, llm_name, model, backend, wire, profile_id, conversation_key, attempt, \
         outcome, input_tokens, output_tokens, latency_ms, cost_usd FROM llm_calls",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(call.get::<i64, _>("at_ms"), 1_700_000_000_000);
    assert_eq!(call.get::<String, _>("llm_name"), "main");
    assert_eq!(call.get::<String, _>("model"), "gpt-test");
    assert_eq!(call.get::<String, _>("backend"), "openai");
    assert_eq!(call.get::<String, _>("wire"), "chat_completions");
    assert_eq!(
        call.get::<Option<String>, _>("profile_id").as_deref(),
        Some("family")
    );
    assert_eq!(
        call.get::<Option<String>, _>("conversation_key").as_deref(),
        Some("http:kitchen")
    );
    assert_eq!(call.get::<i64, _>("attempt"), 2);
    assert_eq!(call.get::<String, _>("outcome"), "ok");
    assert_eq!(call.get::<i64, _>("input_tokens"), 1_234);
    assert_eq!(call.get::<i64, _>("output_tokens"), 56);
    assert_eq!(call.get::<i64, _>("latency_ms"), 789);
    assert!((call.get::<f64, _>("cost_usd") - 0.0125).abs() < 1e-12);

    let event = sqlx::query("SELECT at_ms, conversation_key, stage, payload FROM telemetry_events")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(event.get::<i64, _>("at_ms"), 1_700_000_000_001);
    assert_eq!(event.get::<String, _>("conversation_key"), "http:kitchen");
    assert_eq!(event.get::<String, _>("stage"), "prompt_built");
    let payload: serde_json::Value =
        serde_json::from_str(&event.get::<String, _>("payload")).unwrap();
    assert_eq!(payload, json!({"messages": 3, "profile": "family"}));

    // A burst larger than one batch arrives whole.
    for at_ms in 0..600 {
        stores.telemetry.record(stage_event(at_ms));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM telemetry_events")
            .fetch_one(&pool)
            .await
            .unwrap();
        if events == 601 {
            break;
        }
        assert!(events < 601, "more events than recorded: {events}");
        assert!(
            Instant::now() < deadline,
            "only {events} of 601 events written"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pool.close().await;
}
