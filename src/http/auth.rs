//! API-key authentication: `X-API-Key: <key>` or `Authorization: Bearer <key>`,
//! compared in constant time so timing reveals nothing about the key.

use actix_web::{HttpRequest, HttpResponse};
use subtle::ConstantTimeEq;

pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> Self {
        ApiKey(key)
    }

    pub fn accepts(&self, request: &HttpRequest) -> bool {
        let headers = request.headers();
        let presented = headers
            .get("x-api-key")
            .and_then(|value| value.to_str().ok())
            .or_else(|| {
                headers
                    .get("authorization")
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.strip_prefix("Bearer "))
            });
        match presented {
            Some(presented) => bool::from(presented.trim().as_bytes().ct_eq(self.0.as_bytes())),
            None => false,
        }
    }
}

/// The `401` to answer when auth is on (`api_key` set) and `request` lacks the key.
pub fn refuse_without_api_key(
    api_key: Option<&ApiKey>,
    request: &HttpRequest,
) -> Option<HttpResponse> {
    let key = api_key?;
    (!key.accepts(request)).then(|| {
        HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Bearer"))
            .json(serde_json::json!({
                "error": "missing or wrong API key (send X-API-Key or Authorization: Bearer)"
            }))
    })
}
