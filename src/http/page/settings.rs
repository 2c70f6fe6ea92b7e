//! Settings: the member's own sessions of the web page, each ended from here (a phone
//! lost, a shared computer), and how to get a token for their own shortcuts.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::html;
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, removed_session_cookie};
use crate::http::HttpState;
use crate::local_time::phrasing;
use crate::ports::now_ms;

#[derive(Debug, Deserialize)]
pub struct SettingsQuery {
    ended: Option<String>,
}

/// `GET /settings`.
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<SettingsQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let sessions = match state
        .identity
        .sessions_of(&signed_in.member.id, now_ms())
        .await
    {
        Ok(sessions) => sessions,
        Err(error) => {
            tracing::error!(%error, "web sessions not read");
            Vec::new()
        }
    };
    let now = crate::clock::now();
    let zone = signed_in.zone();
    let when = |ms: i64| {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .map(|at| phrasing::say_instant(at, zone, now))
            .unwrap_or_default()
    };
    layout::page(
        "Settings",
        Some(&signed_in),
        Tab::Settings,
        html! {
            h1 { "Settings" }
            (notice(query.ended.as_deref().map(|_| "That session is signed out.")))
            h2 { "Where you are signed in" }
            ul.sessions {
                @for session in &sessions {
                    li {
                        "Signed in with " (session.signed_in_with) " " (when(session.created_at_ms))
                        ", until " (when(session.expires_at_ms))
                        @if session.id == signed_in.session.id { " (this one)" }
                        form.inline method="post" action={ "/settings/sessions/" (session.id) "/end" } {
                            input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                            button.secondary type="submit" { "Sign out" }
                        }
                    }
                }
            }
            h2 { "Your own API token" }
            p { "For your own shortcuts and home automations, a parent prints you a token with "
                code { "hearth token create --user " (signed_in.member.id) }
                ". It speaks only as you." }
        },
    )
}

#[derive(Debug, Deserialize)]
pub struct EndForm {
    csrf: String,
}

/// `POST /settings/sessions/{id}/end`: sign one of the member's own sessions out.
pub async fn end_session(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<EndForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    match state
        .identity
        .end_session(&signed_in.member.id, &path)
        .await
    {
        Ok(true) if *path == signed_in.session.id => {
            let mut response = see_other("/sign-in");
            let _ = response.add_cookie(&removed_session_cookie(&request));
            response
        }
        Ok(true) => see_other("/settings?ended=1"),
        // Another member's session is as one that does not exist.
        Ok(false) => layout::not_found(Some(&signed_in)),
        Err(error) => {
            tracing::error!(%error, "web session not ended");
            layout::problem(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                Some(&signed_in),
                "The session could not be signed out just now; try again.",
            )
        }
    }
}
