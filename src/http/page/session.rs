//! Who the page is shown to: the session a cookie opens (stored server-side, revocable),
//! its member still in the family, and the CSRF token each of its forms carries. Before
//! sign-in, a form carries the value of a `hearth_form` cookie instead (double submit): a
//! `SameSite=Strict` cookie never comes with another site's post.

use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::{HttpRequest, HttpResponse};
use subtle::ConstantTimeEq;

use super::super::HttpState;
use crate::config::FamilyMember;
use crate::identity::OpenedSession;
use crate::local_time::ZoneName;
use crate::ports::{WebSession, now_ms};
use crate::secrets;

pub const SESSION_COOKIE: &str = "hearth_session";
pub const FORM_COOKIE: &str = "hearth_form";

/// A signed-in member.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub session: WebSession,
    pub member: FamilyMember,
}

impl SignedIn {
    /// Whether a form's `csrf` field is this session's token.
    pub fn csrf_ok(&self, presented: &str) -> bool {
        same_secret(&self.session.csrf_token, presented)
    }

    pub fn is_parent(&self) -> bool {
        self.member.role == crate::ids::FamilyRole::Parent
    }

    /// The member's own zone, where the page says a time; UTC when they have none.
    pub fn zone(&self) -> ZoneName {
        self.member
            .timezone
            .as_deref()
            .and_then(|zone| ZoneName::parse(zone).ok())
            .unwrap_or_else(|| chrono_tz::UTC.into())
    }
}

/// Whether `presented` is `expected`, compared by their digests in constant time (so
/// neither a prefix nor the length shows).
pub fn same_secret(expected: &str, presented: &str) -> bool {
    let expected_digest = secrets::sha256(expected.as_bytes());
    !expected.is_empty()
        && bool::from(expected_digest.ct_eq(&secrets::sha256(presented.as_bytes())))
}

/// The member signed in on `request`, if any: a session that exists, has not expired and
/// whose member is still in the family (a removed member is signed out at once).
pub async fn signed_in(
    state: &HttpState,
    request: &HttpRequest,
) -> Result<Option<SignedIn>, HttpResponse> {
    let Some(cookie) = request.cookie(SESSION_COOKIE) else {
        return Ok(None);
    };
    // The member and their role as the database has them now, on every worker.
    if let Err(error) = state.family.refresh().await {
        tracing::error!(%error, "family not read");
        return Err(unavailable());
    }
    let session = match state.identity.session(cookie.value(), now_ms()).await {
        Ok(Some(session)) => session,
        Ok(None) => return Ok(None),
        Err(error) => {
            tracing::error!(%error, "web session not read");
            return Err(unavailable());
        }
    };
    Ok(state
        .family
        .member(session.member_id.as_str())
        .map(|member| SignedIn { session, member }))
}

fn unavailable() -> HttpResponse {
    HttpResponse::ServiceUnavailable()
        .content_type("text/plain; charset=utf-8")
        .body("hearth cannot read its database just now; try again in a moment")
}

/// The member a page is for, or the answer instead: `303` to sign-in when nobody is signed
/// in, `503` when the session cannot be read.
pub async fn signed_in_page(
    state: &HttpState,
    request: &HttpRequest,
) -> Result<SignedIn, HttpResponse> {
    signed_in(state, request).await?.ok_or_else(|| {
        HttpResponse::SeeOther()
            .insert_header((actix_web::http::header::LOCATION, "/sign-in"))
            .finish()
    })
}

/// `signed_in_page` for a form posted with `csrf`: a form without its session's token
/// (another site's, an old page's) is refused with `403` and does nothing.
pub async fn signed_in_form(
    state: &HttpState,
    request: &HttpRequest,
    csrf: &str,
) -> Result<SignedIn, HttpResponse> {
    let signed_in = signed_in_page(state, request).await?;
    if !signed_in.csrf_ok(csrf) {
        return Err(super::layout::forged_form(Some(&signed_in)));
    }
    Ok(signed_in)
}

/// A cookie of the page: `HttpOnly`, `SameSite=Strict`, and `Secure` when the member
/// reached the page over HTTPS (`http::client::ClientView`).
fn cookie<'a>(
    state: &HttpState,
    request: &HttpRequest,
    name: &'a str,
    value: String,
) -> Cookie<'a> {
    Cookie::build(name, value)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.client.secure(request))
        .finish()
}

/// The cookie of a session just opened, for as long as the session lasts.
pub fn session_cookie(
    state: &HttpState,
    request: &HttpRequest,
    opened: &OpenedSession,
) -> Cookie<'static> {
    let seconds = (opened.session.expires_at_ms - opened.session.created_at_ms) / 1000;
    let mut cookie = cookie(state, request, SESSION_COOKIE, opened.cookie.clone());
    cookie.set_max_age(time::Duration::seconds(seconds));
    cookie
}

/// The cookie that ends the session cookie in the browser.
pub fn removed_session_cookie(state: &HttpState, request: &HttpRequest) -> Cookie<'static> {
    let mut cookie = cookie(state, request, SESSION_COOKIE, String::new());
    cookie.make_removal();
    cookie
}

/// The pre-sign-in forms' token: the request's `hearth_form` cookie, or a new one to set.
pub fn form_token(state: &HttpState, request: &HttpRequest) -> (String, Option<Cookie<'static>>) {
    if let Some(existing) = request.cookie(FORM_COOKIE)
        && existing.value().len() == 64
    {
        return (existing.value().to_string(), None);
    }
    let token = secrets::random_key("").unwrap_or_default();
    let cookie = cookie(state, request, FORM_COOKIE, token.clone());
    (token, Some(cookie))
}

/// `response` with the form cookie `form_token` made, if it made one.
pub fn with_form_cookie(
    mut response: HttpResponse,
    cookie: Option<Cookie<'static>>,
) -> HttpResponse {
    if let Some(cookie) = cookie {
        // The cookie was built here, so it always serialises into a header.
        let _ = response.add_cookie(&cookie);
    }
    response
}

/// Whether a pre-sign-in form's `form` field matches the browser's `hearth_form` cookie.
pub fn form_token_ok(request: &HttpRequest, presented: &str) -> bool {
    request
        .cookie(FORM_COOKIE)
        .is_some_and(|cookie| same_secret(cookie.value(), presented))
}
