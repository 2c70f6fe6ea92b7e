//! The HTTP channel's contract: authentication, input errors, health, readiness, metrics.

use serde_json::{Value, json};

use crate::support::hearth_app::{API_KEY, TestApp};
use crate::support::llm_server::ScriptedLlmServer;

async fn post(app: &TestApp, headers: &[(&str, &str)], body: String) -> (u16, Value) {
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
    let app = TestApp::start(&llm.base_url(), &[]).await;
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
    let app = TestApp::start(&llm.base_url(), &[("HEARTH__HTTP__MAX_BODY_BYTES", "1024")]).await;
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

    let (status, body) = app.get("/inbound/no-such-id").await;
    assert_eq!(status, 404, "{body}");
}

#[actix::test]
async fn health_readiness_and_metrics() {
    let llm = ScriptedLlmServer::start();
    let app = TestApp::start(&llm.base_url(), &[]).await;
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
