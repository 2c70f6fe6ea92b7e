//! `GET /healthz` (the process answers), `GET /readyz` (database reachable and
//! every component ready, with details), `GET /metrics` (Prometheus text).

use std::time::Duration;

use actix_web::{HttpResponse, web};
use serde_json::json;

use super::HttpState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok\n")
}

pub async fn readyz(state: web::Data<HttpState>) -> HttpResponse {
    let database = match tokio::time::timeout(Duration::from_secs(2), state.inbox.ping()).await {
        Ok(Ok(())) => json!({"ready": true, "detail": "reachable"}),
        Ok(Err(error)) => json!({"ready": false, "detail": error.to_string()}),
        Err(_) => json!({"ready": false, "detail": "no answer within 2s"}),
    };
    let components = state.readiness.snapshot();
    let ready = database["ready"] == true && components.values().all(|state| state.ready);
    let body = json!({"ready": ready, "database": database, "components": components});
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

pub async fn metrics(state: web::Data<HttpState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.metrics.render())
}
