//! The HTTP channel's contract: authentication, input errors, health, readiness, metrics.

use serde_json::{Value, json};

use crate::support::hearth_app::{API_KEY, Hearth};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::test_config::TestConfig;

async fn post(app: &Hearth, headers: &[(&str, &str)], body: String) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("{}/inbound", app.base_url))
        .header("content-type", "application/json")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[actix::test]
async fn the_api_key_is_required_in_either_header() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    let body = json!({"user_id": "alice", "text": "hi"}).to_string();

    let (status, refused) = post(&app, &[], body.clone()).await;
    assert_eq!(status, 401);
    assert!(refused["error"].as_str().unwrap().contains("API key"));
    assert_eq!(
        post(&app, &[("X-API-Key", "wrong")], body.clone()).await.0,
        401
    );
    assert_eq!(
        post(&app, &[("Authorization", "Bearer wrong")], body.clone())
            .await
            .0,
        401
    );
    assert_eq!(
        post(&app, &[("Authorization", API_KEY)], body.clone())
            .await
            .0,
        401
    );
    assert_eq!(llm.request_count(), 0, "nothing refused reached the model");

    assert_eq!(
        post(&app, &[("X-API-Key", API_KEY)], body.clone()).await.0,
        200
    );
    let bearer = format!("Bearer {API_KEY}");
    assert_eq!(
        post(&app, &[("Authorization", bearer.as_str())], body)
            .await
            .0,
        200
    );
    let unauthenticated = app
        .client
        .get(format!("{}/inbound/some-id", app.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status().as_u16(), 401);
}

#[actix::test]
async fn bad_requests_are_refused_with_a_reason() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[("HEARTH__HTTP__MAX_BODY_BYTES", "1024")]).await;
    let key = [("X-API-Key", API_KEY)];

    let (status, body) = post(&app, &key, "{\"user_id\": \"alice\", \"text\": ".into()).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed JSON body"),
        "{body}"
    );

    let (status, body) = post(&app, &key, json!({"user_id": "alice"}).to_string()).await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("text"), "{body}");

    let (status, body) = post(
        &app,
        &key,
        json!({"user_id": "alice", "text": "  "}).to_string(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "field `text` is empty");

    let (status, body) = post(
        &app,
        &key,
        json!({"user_id": "alice", "text": "x".repeat(4096)}).to_string(),
    )
    .await;
    assert_eq!(status, 413);
    assert_eq!(body["error"], "request body is larger than 1024 bytes");
    assert_eq!(llm.request_count(), 0);

    let (status, body) = app.get("/inbound/no-such-id?user_id=alice").await;
    assert_eq!(status, 404, "{body}");
}

#[actix::test]
async fn health_readiness_and_metrics() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    assert_eq!(app.get("/healthz").await, (200, "ok\n".to_string()));

    let (status, ready) = app.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    let ready: Value = serde_json::from_str(&ready).unwrap();
    assert_eq!(ready["database"]["ready"], true);
    assert_eq!(ready["components"]["queue"]["ready"], true);

    app.ask("alice", "count me").await;
    let (status, metrics) = app.get("/metrics").await;
    assert_eq!(status, 200);
    for expected in [
        "hearth_turns_total{profile=\"default_assistant\",outcome=\"answered\"} 1",
        "hearth_llm_calls_total{backend=\"cloud\",llm=\"main\",outcome=\"ok\"} 1",
        "hearth_inbound_total{channel=\"http\",outcome=\"accepted\"} 1",
        "hearth_queue_depth 0",
        "# TYPE hearth_llm_semaphore_wait_seconds_total counter",
        "# TYPE hearth_errors_total counter",
    ] {
        assert!(
            metrics.contains(expected),
            "missing {expected:?} in\n{metrics}"
        );
    }
}

/// Every key against every route: each key opens its own scope and never another's; no key
/// or an unknown key is `401`, a key of another scope `403`.
#[actix::test]
async fn each_key_opens_only_its_own_routes() {
    use crate::support::hearth_app::{ADMIN_API_KEY, PLUGIN_API_KEY};
    let llm = ScriptedLlmServer::start();
    llm.set_default(crate::support::llm_server::Step::Reply("ok".into()));
    let app = Hearth::start(&llm.base_url(), &[("HEARTH__HTTP__METRICS_AUTH", "true")]).await;
    let manifest = json!({
        "id": "weather", "name": "Weather", "description": "The weather.",
        "type": "http", "url": "http://127.0.0.1:9/run",
        "capabilities": [{"id": "forecast", "description": "The forecast."}]
    });
    // A member's own token opens the inbound routes as that member; the shared key opens
    // them too, except answering a confirmation.
    let token = app.member_token("alice").await;
    let member = token.as_str();
    // (method, path, body, the keys that open it; none: open to all)
    let routes: Vec<(&str, &str, Value, Vec<&str>)> = vec![
        (
            "POST",
            "/inbound",
            json!({"user_id": "alice", "text": "hi"}),
            vec![API_KEY, member],
        ),
        (
            "POST",
            "/inbound/confirm",
            json!({"confirmation_id": "nope", "user_id": "alice", "approve": true}),
            vec![member],
        ),
        (
            "GET",
            "/inbound/nope?user_id=alice",
            Value::Null,
            vec![API_KEY, member],
        ),
        (
            "POST",
            "/api/plugins/llm/generate",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            vec![PLUGIN_API_KEY],
        ),
        (
            "POST",
            "/api/plugins/register",
            manifest,
            vec![ADMIN_API_KEY],
        ),
        ("GET", "/metrics", Value::Null, vec![ADMIN_API_KEY]),
        ("GET", "/healthz", Value::Null, vec![]),
    ];
    let keys = [
        None,
        Some("wrong-key"),
        Some(API_KEY),
        Some(PLUGIN_API_KEY),
        Some(ADMIN_API_KEY),
        Some(member),
        Some("hearth_token_0000"),
    ];
    for (method, path, body, openers) in &routes {
        for key in keys {
            let mut request = match *method {
                "GET" => app.client.get(format!("{}{path}", app.base_url)),
                _ => app
                    .client
                    .post(format!("{}{path}", app.base_url))
                    .json(body),
            };
            if let Some(key) = key {
                request = request.header("X-API-Key", key);
            }
            let status = request.send().await.unwrap().status().as_u16();
            // A member token is no key of the plugin or admin scopes: unknown there.
            let known = [API_KEY, PLUGIN_API_KEY, ADMIN_API_KEY];
            let expected_refusal = match key {
                _ if openers.is_empty() => None,
                Some(key) if openers.contains(&key) => None,
                Some(key) if known.contains(&key) => Some(403),
                _ => Some(401),
            };
            match expected_refusal {
                Some(refusal) => assert_eq!(status, refusal, "{method} {path} with {key:?}"),
                None => assert!(
                    ![401, 403].contains(&status),
                    "{method} {path} with {key:?}: {status}"
                ),
            }
        }
    }
    // /readyz says ready or not to anyone, its details only to the admin key.
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"ready": true})
    );
    let detailed: Value = app
        .client
        .get(format!("{}/readyz", app.base_url))
        .header("X-API-Key", ADMIN_API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(detailed["components"]["queue"].is_object(), "{detailed}");
    app.stop().await;
}

#[test]
fn one_key_for_two_scopes_is_refused_by_validation() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1").write(folder.path());
    let env = crate::support::hearth_app::test_env(&[("TEST_HEARTH_PLUGIN_KEY", API_KEY)]);
    let error = hearth::config::load_with_env(
        &config,
        &env,
        &hearth::config::LoadOptions {
            known_local_tools: hearth::tools::LOCAL_TOOL_NAMES,
            local_model: false,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("http.plugin_api_key_env"), "{error}");
    assert!(
        error.contains("same key as http.auth_api_key_env"),
        "{error}"
    );
    assert!(!error.contains(API_KEY), "{error}");
}

/// A channel that cannot connect says why in `/readyz`, without the credentials in the
/// error: the bot token and a password in its url.
#[actix::test]
async fn readiness_details_never_show_credentials() {
    let llm = ScriptedLlmServer::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let api_url = format!("http://hearth:hunter2-pass@127.0.0.1:{port}");
    let app = Hearth::start_unready(
        &llm.base_url(),
        &[
            ("HEARTH__CHANNELS__TELEGRAM__ENABLED", "true"),
            (
                "HEARTH__CHANNELS__TELEGRAM__TOKEN_ENV",
                "TEST_TELEGRAM_TOKEN",
            ),
            ("HEARTH__CHANNELS__TELEGRAM__API_URL", api_url.as_str()),
            ("TEST_TELEGRAM_TOKEN", "123456:secret-bot-token"),
        ],
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let detail = loop {
        let (_, body) = app.get("/readyz").await;
        let body: Value = serde_json::from_str(&body).unwrap();
        let detail = body["components"]["telegram"]["detail"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if detail.contains("bot api") || std::time::Instant::now() > deadline {
            break detail;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(detail.contains("cannot reach the bot api"), "{detail}");
    assert!(!detail.contains("hunter2-pass"), "{detail}");
    assert!(!detail.contains("secret-bot-token"), "{detail}");
    app.stop().await;
}

/// One member never continues, reads or looks up another's HTTP conversation: a session id
/// is the member's own, so is a message id, and so is `GET /inbound/{id}`.
#[actix::test]
async fn a_member_never_reaches_another_members_conversation() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(crate::support::llm_server::Step::Echo);
    let app = Hearth::start(&llm.base_url(), &[]).await;
    let (_, first) = app
        .send(json!({"user_id": "alice", "text": "my secret is tulips", "message_id": "m-1"}))
        .await;
    let alices_id = first["id"].as_str().unwrap().to_string();
    app.send(json!({"user_id": "alice", "session_id": "garden", "text": "plant roses"}))
        .await;

    // Bob names alice's conversations as his session: he gets his own, empty ones.
    for session in ["alice", "alice/garden", "garden"] {
        llm.reset_counters();
        let (status, body) = app
            .send(json!({"user_id": "bob", "session_id": session, "text": "what did she say?"}))
            .await;
        assert_eq!(status, 200, "{body}");
        let seen = llm.requests()[0].body["messages"].to_string();
        assert!(!seen.contains("tulips"), "{session}: {seen}");
        assert!(!seen.contains("roses"), "{session}: {seen}");
    }
    // Bob's message id "m-1" is his own message, not a duplicate of alice's.
    let (status, bobs) = app
        .send(json!({"user_id": "bob", "text": "hello", "message_id": "m-1"}))
        .await;
    assert_eq!(status, 200);
    assert_ne!(bobs["id"].as_str().unwrap(), alices_id);
    assert_eq!(bobs["reply"], "echo: hello", "{bobs}");
    // Alice's retry of "m-1" is hers, answered once.
    let (_, again) = app
        .send(json!({"user_id": "alice", "text": "my secret is tulips", "message_id": "m-1"}))
        .await;
    assert_eq!(again["id"].as_str().unwrap(), alices_id);

    // Bob cannot look alice's message up; alice can; the member must be named.
    let (status, _) = app.get(&format!("/inbound/{alices_id}?user_id=bob")).await;
    assert_eq!(status, 404);
    let (status, body) = app
        .get(&format!("/inbound/{alices_id}?user_id=alice"))
        .await;
    assert_eq!(status, 200);
    assert!(body.contains("tulips"), "{body}");
    let (status, body) = app.get(&format!("/inbound/{alices_id}")).await;
    assert_eq!(status, 400, "{body}");

    // A session id that is no id is refused.
    for (session, problem) in [("", "empty"), ("a\nb", "control")] {
        let (status, body) = app
            .send(json!({"user_id": "bob", "session_id": session, "text": "x"}))
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(body["error"].as_str().unwrap().contains(problem), "{body}");
    }
    app.stop().await;
}

/// The real binary flooded with 10,000 messages from distinct strangers: each gets `204`,
/// each is counted, and memory stays flat (what is remembered of strangers is bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_distinct_strangers_leaves_memory_flat() {
    use crate::support::hearth_app::{Hearth, test_env};
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    // What strangers cost is measured alone: memory's indexer, whose first passes prepare
    // their statements whenever its timer falls, is off.
    let config = TestConfig::new(folder.path(), &llm.base_url())
        .with(|config| config.memory.enabled = false)
        .write(folder.path());
    let hearth = Hearth::spawn(&config, &test_env(&[]));
    let client = reqwest::Client::new();
    let rss_kb = |pid: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.split_whitespace().next()?.parse().ok())
            .unwrap()
    };
    let flood = |from: usize, to: usize| {
        let (client, base) = (client.clone(), hearth.base_url.clone());
        async move {
            let mut sent = futures::stream::iter(from..to)
                .map(|n| {
                    let (client, base) = (client.clone(), base.clone());
                    async move {
                        client
                            .post(format!("{base}/inbound"))
                            .header("X-API-Key", API_KEY)
                            .json(&json!({"user_id": format!("stranger-{n}"), "text": "hi"}))
                            .send()
                            .await
                            .unwrap()
                            .status()
                            .as_u16()
                    }
                })
                .buffer_unordered(16);
            use futures::StreamExt;
            while let Some(status) = sent.next().await {
                assert_eq!(status, 204);
            }
        }
    };
    // Warm up (allocator arenas, connection pools), then measure the flood itself.
    flood(0, 5_000).await;
    let before = rss_kb(hearth.pid());
    flood(5_000, 15_000).await;
    let after = rss_kb(hearth.pid());
    // Remembering every one of them would take about 2 MB.
    assert!(
        after < before + 1024,
        "resident memory grew from {before} kB to {after} kB"
    );
    let metrics = client
        .get(format!("{}/metrics", hearth.base_url))
        .header("X-API-Key", API_KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("hearth_strangers_ignored_total{channel=\"http\"} 15000"),
        "{metrics}"
    );
    assert_eq!(llm.request_count(), 0);
}
