//! `GET /healthz` (the process answers), `GET /readyz` (database reachable and
//! every component ready, with details), `GET /metrics` (Prometheus text).

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

use super::HttpState;
use super::auth::{Access, Scope, refuse_outside_scope};

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok\n")
}

/// Ready or not, always; the details (which component, why) only to the admin key when
/// `http.metrics_auth` is on. Details never hold a secret: `Readiness` redacts them.
pub async fn readyz(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    let database = match tokio::time::timeout(Duration::from_secs(2), state.inbox.ping()).await {
        Ok(Ok(())) => json!({"ready": true, "detail": "reachable"}),
        Ok(Err(error)) => {
            json!({"ready": false, "detail": state.readiness.redacted(&error.to_string())})
        }
        Err(_) => json!({"ready": false, "detail": "no answer within 2s"}),
    };
    let components = state.readiness.snapshot();
    let ready = database["ready"] == true && components.values().all(|state| state.ready);
    let details = !state.metrics_auth
        || state
            .keys
            .as_ref()
            .is_some_and(|keys| keys.access(&request, Scope::Admin) == Access::Granted);
    let body = if details {
        json!({"ready": ready, "database": database, "components": components})
    } else {
        json!({"ready": ready})
    };
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

pub async fn metrics(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    if state.metrics_auth
        && let Some(refused) = refuse_outside_scope(state.keys.as_ref(), &request, Scope::Admin)
    {
        return refused;
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.metrics.render())
}
