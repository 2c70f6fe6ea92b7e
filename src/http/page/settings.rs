//! Settings: the member's time zone (every time they see or say is in it; over the
//! configuration's) and the channel whose own chat hearth writes to first, their sessions
//! of the web page, each ended from here (a phone lost, a shared computer), and how to get
//! a token for their own shortcuts.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::html;
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, SignedIn, removed_session_cookie};
use crate::http::HttpState;
use crate::local_time::{ZoneName, phrasing};
use crate::ports::now_ms;

#[derive(Debug, Deserialize)]
pub struct SettingsQuery {
    ended: Option<String>,
    saved: Option<String>,
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
    let said = match (query.ended.as_deref(), query.saved.as_deref()) {
        (Some(_), _) => Some("That session is signed out."),
        (_, Some(_)) => Some("Saved."),
        _ => None,
    };
    settings_page(&state, &signed_in, said).await
}

/// The channels the member has an own chat on, and the one they prefer.
fn channels_of(state: &HttpState, signed_in: &SignedIn) -> (Vec<String>, Option<String>) {
    let Some(parts) = &state.membership else {
        return (Vec::new(), None);
    };
    let chats = parts.chats.own_chats.of(&signed_in.member.id);
    let mut channels: Vec<String> = Vec::new();
    for chat in &chats {
        if !channels.iter().any(|known| known == chat.channel()) {
            channels.push(chat.channel().to_string());
        }
    }
    let preferred = parts.chats.own_chats.preferred(&signed_in.member.id);
    (channels, preferred)
}

async fn settings_page(
    state: &HttpState,
    signed_in: &SignedIn,
    said: Option<&str>,
) -> HttpResponse {
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
    let (channels, preferred) = channels_of(state, signed_in);
    let timezone = signed_in.member.timezone.clone().unwrap_or_default();
    layout::page(
        "Settings",
        Some(signed_in),
        Tab::Settings,
        html! {
            h1 { "Settings" }
            (notice(said))
            h2 { "You" }
            form method="post" action="/settings" {
                input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                label for="timezone" { "Your time zone (as Europe/Berlin, America/New_York)" }
                input id="timezone" name="timezone" value=(timezone) maxlength="64"
                    autocomplete="off" placeholder="the profile's zone when empty";
                label for="preferred" { "Where hearth writes to you first" }
                select id="preferred" name="preferred_channel" {
                    option value="" selected[preferred.is_none()] { "no preference" }
                    @for channel in &channels {
                        option value=(channel) selected[preferred.as_deref() == Some(channel.as_str())] { (channel_name(channel)) }
                    }
                }
                button type="submit" { "Save" }
            }
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

fn channel_name(channel: &str) -> &str {
    match channel {
        "telegram" => "Telegram",
        "matrix" => "Matrix",
        other => other,
    }
}

/// The settings page again, saying why nothing was saved.
async fn refused(state: &HttpState, signed_in: &SignedIn, text: &str) -> HttpResponse {
    let mut response = settings_page(state, signed_in, Some(text)).await;
    *response.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
    response
}

#[derive(Debug, Deserialize)]
pub struct SettingsForm {
    csrf: String,
    timezone: String,
    preferred_channel: String,
}

/// `POST /settings`: the member's time zone and preferred channel.
pub async fn save(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<SettingsForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Some(parts) = &state.membership else {
        return layout::not_found(Some(&signed_in));
    };
    let timezone = body.timezone.trim();
    let timezone = if timezone.is_empty() {
        None
    } else {
        match ZoneName::parse(timezone) {
            Ok(zone) => Some(zone.to_string()),
            Err(error) => return refused(&state, &signed_in, &format!("Not saved: {error}")).await,
        }
    };
    let (channels, _) = channels_of(&state, &signed_in);
    let preferred = match body.preferred_channel.as_str() {
        "" => None,
        channel if channels.iter().any(|known| known == channel) => Some(channel.to_string()),
        other => {
            return refused(
                &state,
                &signed_in,
                &format!("Not saved: you have no own chat with hearth on {other:?}."),
            )
            .await;
        }
    };
    match parts
        .membership
        .save_settings(&signed_in.member, timezone, preferred.clone(), now_ms())
        .await
    {
        Ok(_) => {
            parts
                .chats
                .own_chats
                .set_preferred(&signed_in.member.id, preferred.as_deref());
            see_other("/settings?saved=1")
        }
        Err(error) => {
            tracing::error!(%error, "settings not stored");
            refused(
                &state,
                &signed_in,
                "Not saved: hearth cannot store it just now; try again.",
            )
            .await
        }
    }
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
            let _ = response.add_cookie(&removed_session_cookie(&state, &request));
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
