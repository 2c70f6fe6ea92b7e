//! The `UsageReport` port: per day (UTC) and member, the messages they sent and the model
//! calls made for them with tokens and cost; calls of no member (a plugin's) left out; what
//! one `llms` entry cost in all, whoever its calls were for.

use hearth::ports::{DailyUsage, LlmSpend, TelemetryEvent};
use hearth::storage::Stores;

use super::telemetry::llm_call;
use super::{T0, inbound, member};

adapter_suite!(
    usage_is_summed_per_member_and_day,
    usage_sums_what_one_model_cost,
);

const DAY: i64 = 24 * 60 * 60 * 1000;

async fn usage_is_summed_per_member_and_day(stores: &Stores) {
    // T0 is 2023-11-14 22:13 UTC: the next day begins within two hours.
    let sent = [
        ("m1", "alice", T0),
        ("m2", "alice", T0 + 60_000),
        ("m3", "bob", T0),
        ("m4", "alice", T0 + DAY),
    ];
    for (id, who, at_ms) in sent {
        let mut message = inbound(id, "telegram", None);
        message.member_id = member(who);
        message.received_at_ms = at_ms;
        stores.inbox.accept(&message).await.unwrap();
    }
    for (who, at_ms) in [
        (Some("alice"), T0),
        (Some("alice"), T0 + 1),
        (Some("bob"), T0 + DAY),
        (None, T0),
    ] {
        let mut call = llm_call(at_ms);
        call.member_id = who.map(member);
        stores.telemetry.record(TelemetryEvent::LlmCall(call));
    }
    stores.telemetry.flush().await;

    let usage = stores.usage.daily_usage(T0 - DAY).await.unwrap();
    let day = |offset: i64| {
        chrono::DateTime::from_timestamp_millis(T0 + offset)
            .unwrap()
            .format("%Y-%m-%d")
            .to_string()
    };
    let row = |offset: i64, who: &str, turns: u64, calls: u64| DailyUsage {
        day: day(offset),
        member_id: member(who),
        turns,
        llm_calls: calls,
        input_tokens: 1_234 * calls,
        output_tokens: 56 * calls,
        cost_usd: 0.0125 * calls as f64,
    };
    assert_eq!(
        usage,
        vec![
            row(DAY, "alice", 1, 0),
            row(DAY, "bob", 0, 1),
            row(0, "alice", 2, 2),
            row(0, "bob", 1, 0),
        ]
    );
    // Only what happened since the given time.
    assert_eq!(stores.usage.daily_usage(T0 + DAY).await.unwrap().len(), 2);
}

async fn usage_sums_what_one_model_cost(stores: &Stores) {
    assert_eq!(
        stores.usage.spent_on("vectors").await.unwrap(),
        LlmSpend::default()
    );
    for (llm, who, at_ms) in [
        ("vectors", None, T0 + 5),
        ("vectors", Some("alice"), T0),
        ("main", Some("alice"), T0 - 1),
    ] {
        let mut call = llm_call(at_ms);
        call.llm_name = llm.to_string();
        call.member_id = who.map(member);
        stores.telemetry.record(TelemetryEvent::LlmCall(call));
    }
    stores.telemetry.flush().await;
    let spent = stores.usage.spent_on("vectors").await.unwrap();
    assert_eq!(
        (spent.calls, spent.input_tokens, spent.since_ms),
        (2, 2 * 1_234, Some(T0))
    );
    assert!((spent.cost_usd - 0.025).abs() < 1e-9, "{spent:?}");
}
