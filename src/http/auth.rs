//! API keys and the scopes they open. Each key opens one scope and never another:
//!
//! | scope | key (`http.*`) | routes |
//! |---|---|---|
//! | inbound | `auth_api_key_env` | `POST /inbound`, `POST /inbound/confirm`, `GET /inbound/{id}` |
//! | plugin | `plugin_api_key_env` | `POST /api/plugins/llm/*` |
//! | admin | `admin_api_key_env` | `POST /api/plugins/register`; `/metrics` and `/readyz` details with `metrics_auth` |
//!
//! A key comes as `X-API-Key: <key>` or `Authorization: Bearer <key>`. No key, or a key no
//! scope knows, is `401`; a key of another scope is `403`. Every configured key is compared,
//! each in constant time, whatever matches first, so timing tells nothing about any key:
//! what is compared are the keys' SHA-256 digests, all 32 bytes long, so not even a key's
//! length shows.
//! With `http.auth_enabled: false` every route is open.
//!
//! A member's own token (`hearth token create`, `hearth_token_...`) opens the inbound routes
//! too, but speaks only as its member (`InboundCaller::Member`). The shared inbound key may
//! submit messages as any member and read their replies; it answers no confirmation.

use actix_web::{HttpRequest, HttpResponse};
use subtle::{Choice, ConstantTimeEq};

/// What a key opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Inbound,
    Plugin,
    Admin,
}

impl Scope {
    const ALL: [Scope; 3] = [Scope::Inbound, Scope::Plugin, Scope::Admin];

    fn index(self) -> usize {
        match self {
            Scope::Inbound => 0,
            Scope::Plugin => 1,
            Scope::Admin => 2,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Scope::Inbound => "the inbound API (http.auth_api_key_env)",
            Scope::Plugin => "the plugin API (http.plugin_api_key_env)",
            Scope::Admin => "administration (http.admin_api_key_env)",
        }
    }
}

/// The configured key of each scope, as its SHA-256; a scope without a key is closed to
/// every key.
pub struct ApiKeys {
    keys: [Option<[u8; 32]>; 3],
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set: Vec<bool> = self.keys.iter().map(Option::is_some).collect();
        formatter
            .debug_struct("ApiKeys")
            .field("inbound_set", &set[0])
            .field("plugin_set", &set[1])
            .field("admin_set", &set[2])
            .finish()
    }
}

/// Whether a request may use a route of some scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Granted,
    /// No key, or one that no scope knows.
    Unauthenticated,
    /// A good key, of another scope.
    WrongScope,
}

impl ApiKeys {
    pub fn new(inbound: Option<String>, plugin: Option<String>, admin: Option<String>) -> Self {
        let digest = |key: Option<String>| {
            key.filter(|key| !key.is_empty())
                .map(|key| crate::secrets::sha256(key.as_bytes()))
        };
        ApiKeys {
            keys: [digest(inbound), digest(plugin), digest(admin)],
        }
    }

    /// Which scope's key `presented` is, its digest compared with every key's in constant
    /// time.
    fn scope_of(&self, presented: &[u8]) -> Option<Scope> {
        let presented = crate::secrets::sha256(presented);
        let mut found = None;
        for scope in Scope::ALL {
            let matches = match &self.keys[scope.index()] {
                Some(key) => key.ct_eq(&presented),
                None => Choice::from(0),
            };
            if bool::from(matches) && found.is_none() {
                found = Some(scope);
            }
        }
        found
    }

    pub fn access(&self, request: &HttpRequest, scope: Scope) -> Access {
        let Some(presented) = presented_key(request) else {
            return Access::Unauthenticated;
        };
        match self.scope_of(presented.as_bytes()) {
            Some(found) if found == scope => Access::Granted,
            Some(_) => Access::WrongScope,
            None => Access::Unauthenticated,
        }
    }
}

/// Who a request to an inbound route speaks as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundCaller {
    /// `http.auth_enabled: false`: the network is trusted, the body names the member.
    Open,
    /// The shared inbound key: any member's messages, never a confirmation.
    SharedKey,
    /// A member's own token: only as this member.
    Member(crate::ids::MemberId),
}

impl InboundCaller {
    /// The member a request naming `user_id` speaks as, or the `403` when a member's token
    /// names another member. `None` from a token means its own member.
    // The refusal is the HTTP answer itself, made at most once per request.
    #[allow(clippy::result_large_err)]
    pub fn member_named(&self, user_id: Option<&str>) -> Result<Option<String>, HttpResponse> {
        match (self, user_id) {
            (InboundCaller::Member(own), None) => Ok(Some(own.to_string())),
            (InboundCaller::Member(own), Some(named)) if named == own.as_str() => {
                Ok(Some(own.to_string()))
            }
            (InboundCaller::Member(own), Some(_)) => {
                Err(HttpResponse::Forbidden().json(serde_json::json!({
                    "error": format!("this token speaks only as {own}: leave user_id out or name {own}")
                })))
            }
            (_, named) => Ok(named.map(str::to_string)),
        }
    }
}

/// Who `request` speaks as on an inbound route, or the `401`/`403` to answer. Once the
/// caller is known, the family is read again when it changed (on any worker), so the
/// member named is looked up as the database has them now.
pub async fn inbound_caller(
    keys: Option<&ApiKeys>,
    identity: &crate::identity::Identity,
    family: &crate::family::Family,
    request: &HttpRequest,
) -> Result<InboundCaller, HttpResponse> {
    let caller = proven_caller(keys, identity, request).await?;
    if let Err(error) = family.refresh().await {
        tracing::error!(%error, "family not read");
        return Err(HttpResponse::ServiceUnavailable()
            .json(serde_json::json!({"error": "storage unavailable, try again"})));
    }
    Ok(caller)
}

/// Who `request` speaks as by its key or token, or the `401`/`403` to answer.
async fn proven_caller(
    keys: Option<&ApiKeys>,
    identity: &crate::identity::Identity,
    request: &HttpRequest,
) -> Result<InboundCaller, HttpResponse> {
    let Some(keys) = keys else {
        return Ok(InboundCaller::Open);
    };
    if let Some(presented) = presented_key(request)
        && presented.starts_with(crate::identity::TOKEN_PREFIX)
    {
        return match identity.token(presented).await {
            Ok(Some(token)) => Ok(InboundCaller::Member(token.member_id)),
            Ok(None) => Err(unauthenticated()),
            Err(error) => {
                tracing::error!(%error, "member token not read");
                Err(HttpResponse::ServiceUnavailable()
                    .json(serde_json::json!({"error": "storage unavailable, try again"})))
            }
        };
    }
    match refuse_outside_scope(Some(keys), request, Scope::Inbound) {
        None => Ok(InboundCaller::SharedKey),
        Some(refused) => Err(refused),
    }
}

/// The member an inbound request speaks as: its token's, or the one it names (`named`,
/// the body's or the query's `user_id`) with the shared key; else the answer to give.
pub async fn inbound_member(
    keys: &Option<ApiKeys>,
    identity: &crate::identity::Identity,
    family: &crate::family::Family,
    request: &HttpRequest,
    named: Option<&str>,
) -> Result<String, HttpResponse> {
    let caller = inbound_caller(keys.as_ref(), identity, family, request).await?;
    caller.member_named(named)?.ok_or_else(|| {
        HttpResponse::BadRequest()
            .json(serde_json::json!({ "error": "field `user_id` is missing" }))
    })
}

fn unauthenticated() -> HttpResponse {
    HttpResponse::Unauthorized()
        .insert_header(("WWW-Authenticate", "Bearer"))
        .json(serde_json::json!({
            "error": "missing or wrong API key (send X-API-Key or Authorization: Bearer)"
        }))
}

fn presented_key(request: &HttpRequest) -> Option<&str> {
    let headers = request.headers();
    headers
        .get("x-api-key")
        .and_then(|value| value.to_str().ok())
        .or_else(|| {
            headers
                .get("authorization")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Bearer "))
        })
        .map(str::trim)
}

/// The `401` or `403` to answer when auth is on (`keys` set) and `request` may not use a
/// route of `scope`; `None` when it may.
pub fn refuse_outside_scope(
    keys: Option<&ApiKeys>,
    request: &HttpRequest,
    scope: Scope,
) -> Option<HttpResponse> {
    let keys = keys?;
    match keys.access(request, scope) {
        Access::Granted => None,
        Access::Unauthenticated => Some(unauthenticated()),
        Access::WrongScope => Some(HttpResponse::Forbidden().json(serde_json::json!({
            "error": format!(
                "this key does not open this route: it needs the key of {}",
                scope.describe()
            )
        }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn each_key_opens_its_own_scope_only() {
        let keys = ApiKeys::new(Some("inbound-key".into()), Some("plugin-key".into()), None);
        let with = |key: &str| {
            TestRequest::default()
                .insert_header(("X-API-Key", key))
                .to_http_request()
        };
        assert_eq!(
            keys.access(&with("inbound-key"), Scope::Inbound),
            Access::Granted
        );
        assert_eq!(
            keys.access(&with("inbound-key"), Scope::Plugin),
            Access::WrongScope
        );
        assert_eq!(
            keys.access(&with("plugin-key"), Scope::Plugin),
            Access::Granted
        );
        assert_eq!(
            keys.access(&with("plugin-key"), Scope::Admin),
            Access::WrongScope
        );
        assert_eq!(
            keys.access(&with("nope"), Scope::Inbound),
            Access::Unauthenticated
        );
        // No admin key configured: nothing opens administration, and an empty key is no key.
        assert_eq!(
            keys.access(&with(""), Scope::Admin),
            Access::Unauthenticated
        );
        let bearer = TestRequest::default()
            .insert_header(("Authorization", "Bearer plugin-key"))
            .to_http_request();
        assert_eq!(keys.access(&bearer, Scope::Plugin), Access::Granted);
        let none = TestRequest::default().to_http_request();
        assert_eq!(keys.access(&none, Scope::Inbound), Access::Unauthenticated);
        assert!(!format!("{keys:?}").contains("key\""), "{keys:?}");
    }
}
