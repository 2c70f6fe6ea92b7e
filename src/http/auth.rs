//! API-key authentication: `X-API-Key: <key>` or `Authorization: Bearer <key>`,
//! compared in constant time so timing reveals nothing about the key.

use actix_web::HttpRequest;
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
