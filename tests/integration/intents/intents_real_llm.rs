//! The intents engine against a REAL llama.cpp server (xllamacpp serving SmolLM2-135M-Instruct,
//! see `real_llm.rs`): the whole app with the `/orders` profile of the shipped example over
//! `data/orders.json`, asked over the HTTP channel. Proves that the classifier's request (a
//! strict `json_schema` response format) is one a real OpenAI-compatible server accepts and
//! answers with JSON the engine can use.
//!
//! The model is far too small to classify reliably, so nothing here depends on which intent it
//! picks: the test asserts what must hold whatever it says (the JSON was accepted, unless the
//! model never ended a value and was cut at its token limit, or wrote a number no float holds,
//! which the engine answers with the seed's error path; the ten stages are stored in order;
//! the reply is one of the engine's legitimate outcomes and agrees with the stages). Skipped
//! unless the server is installed or `HEARTH_REQUIRE_REAL_SERVERS=1`.

use std::path::Path;

use hearth::config::LlmBackend;
use hearth::intents::{NOT_SURE_REPLY, SOMETHING_WRONG_REPLY, STAGES};
use serde_json::Value;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{example_intents, orders_profile, stage_names, stages};
use crate::support::real_llm::{REAL_LLM_MODEL, RealLlmServer, start_real_llm_or_skip};
use crate::support::test_config::TestConfig;

/// A turn takes a second or two on an idle machine; the rest of the suite may share the cores.
const LLM_TIMEOUT_SECONDS: u64 = 120;
/// Bounds the question the planner has the model word, which has no grammar to end it. The
/// classifier's JSON is far shorter.
const MAX_TOKENS: u32 = 200;

/// The test config with `main` on the real server and the example's `/orders` profile.
fn real_orders_config(folder: &Path, server: &RealLlmServer) -> std::path::PathBuf {
    TestConfig::new(folder, &server.base_url())
        .with(|config| {
            let main = config
                .llms
                .get_mut("main")
                .expect("the test config's main model");
            main.model = REAL_LLM_MODEL.to_owned();
            main.backend = LlmBackend::Local;
            main.timeout_seconds = LLM_TIMEOUT_SECONDS;
            main.max_tokens = Some(MAX_TOKENS);
            // The HTTP channel waits for the reply at most this long.
            config.http.reply_timeout_seconds = LLM_TIMEOUT_SECONDS * 2;
        })
        .profile(orders_profile(&example_intents(), &[]))
        .write(folder)
}

/// The stage named `name` among `events`.
fn stage<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events
        .iter()
        .find(|event| event["stage"] == name)
        .unwrap_or_else(|| panic!("no {name} stage in {events:?}"))
}

/// The orders of the shipped data, by id.
fn shipped_orders() -> serde_json::Map<String, Value> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/orders.json");
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[actix::test]
async fn real_llm_drives_the_intents_engine_to_a_legitimate_outcome() {
    let Some(server) =
        start_real_llm_or_skip("real_llm_drives_the_intents_engine_to_a_legitimate_outcome").await
    else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let path = real_orders_config(folder.path(), &server);
    let app = Hearth::start_from(folder, &path, &[]).await;

    // The second turn sends the first as history, which the classifier's request carries as
    // user and assistant messages (and, after a question, as the answer to a waiting plan).
    for (turn, text) in ["/orders where is O-12345?", "/orders O-12345"]
        .into_iter()
        .enumerate()
    {
        let reply = app.ask("alice", text).await;
        let events = stages(&app, "http:alice").await;
        assert_eq!(events.len(), (turn + 1) * STAGES.len(), "{events:#?}");
        let context = || {
            format!(
                "turn {turn} {text:?}: reply {reply:?}\nstages {events:#?}\nserver log:\n{}",
                server.log_tail()
            )
        };
        assert_legitimate(&reply, &events[turn * STAGES.len()..], &context);
    }
    app.stop().await;
}

/// What must hold of one interaction's `reply` and stage `events`, whatever the model said.
fn assert_legitimate(reply: &str, events: &[Value], context: &dyn Fn() -> String) {
    // The grammar-constrained answer was accepted: no error at any stage, and not the
    // engine's answer to an unusable classification or a refused request. The exceptions
    // are the model's own, JSON the grammar lets through and no parser can use, twice, which
    // the engine answers with the seed's error path: a value it never ends (a string of
    // digits) cut at the token limit, or a number past any float (`-0.12E3680864004147867`).
    if reply == SOMETHING_WRONG_REPLY {
        let classified = stage(events, "intent_classified");
        let detail = classified["payload"]["detail"].as_str().unwrap_or_default();
        assert!(
            classified["payload"]["error"] == "invalid_output"
                && (detail.contains("EOF while parsing") || detail.contains("number out of range")),
            "{}",
            context()
        );
        eprintln!("the model's answer could not be read, twice: {detail}");
        return;
    }
    for event in events {
        assert_ne!(event["level"], "error", "{}", context());
    }
    let classified = stage(events, "intent_classified");
    assert!(
        classified["payload"]["confidence"].is_number(),
        "{}",
        context()
    );

    // The ten stages of this one interaction, in the seed's order.
    assert_eq!(stage_names(events), STAGES, "{}", context());
    for event in events {
        assert_eq!(
            event["interaction_id"],
            events[0]["interaction_id"],
            "{}",
            context()
        );
    }

    // One of the engine's outcomes, and the one the stages say was taken.
    let plan_type = stage(events, "plan_type")["payload"]["type"].clone();
    let needs_input = stage(events, "response_generated")["payload"]["needs_input"].clone();
    match plan_type.as_str() {
        Some("none") => {
            assert_eq!(reply, NOT_SURE_REPLY, "{}", context());
            assert_eq!(needs_input, false, "{}", context());
        }
        Some("ask_user") => {
            // The question is the model's own wording (or hearth's, telling what was wrong
            // with a value it extracted, such as an order id not like O-12345); it is
            // asked, not answered.
            assert!(!reply.trim().is_empty(), "{}", context());
            assert_eq!(needs_input, true, "{}", context());
            assert_eq!(
                stage(events, "tool_execute")["payload"]["skipped"],
                true,
                "{}",
                context()
            );
        }
        Some("tool_call") => {
            let order_id = stage(events, "plan_created")["payload"]["params"]["values"]["order_id"]
                .as_str()
                .unwrap_or_else(|| panic!("a tool call without an order id: {}", context()))
                .to_string();
            let executed = &stage(events, "tool_execute")["payload"];
            assert_eq!(executed["tool_name"], "check_order_status", "{}", context());
            let pre = format!("I'll check order {order_id}.\n\n");
            let after = reply
                .strip_prefix(&pre)
                .unwrap_or_else(|| panic!("no pre template: {}", context()));
            if shipped_orders().contains_key(&order_id) {
                assert_eq!(executed["success"], true, "{}", context());
                assert!(
                    after.starts_with(&format!("Your order {order_id} is ")),
                    "{}",
                    context()
                );
                if order_id == "O-12345" {
                    assert_eq!(
                        after,
                        "Your order O-12345 is shipped via UPS, ETA 2025-10-20.",
                        "{}",
                        context()
                    );
                }
            } else {
                // An id the model made up is looked up and not found.
                assert_eq!(executed["success"], false, "{}", context());
                assert_eq!(
                    after,
                    format!("Sorry, I couldn't find order {order_id}."),
                    "{}",
                    context()
                );
            }
            assert_eq!(needs_input, false, "{}", context());
        }
        other => panic!("unexpected plan type {other:?}: {}", context()),
    }
    // Which outcome the model led to, for whoever reads the test's output.
    eprintln!(
        "the model classified {} (plan {plan_type}); hearth replied {reply:?}",
        classified["payload"]
    );
}
