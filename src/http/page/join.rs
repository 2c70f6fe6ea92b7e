//! Joining on the web page: a code from `/invite` (or set-up's first code) entered here
//! makes a new member with that role and the name given, signed in at once, and the
//! parents are told in their own chats; a `/link` code entered here signs its member in,
//! so one member is one identity on Telegram, Matrix and the page. The code is checked by
//! `family::Membership`, the same rules as `/join` in chat: used once, wrong ones counted
//! in the database per client address (read through the trusted proxies, `http::client`)
//! and overall, on every worker.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, form_token, form_token_ok, signed_in};
use crate::family::{Change, Joined};
use crate::http::HttpState;
use crate::ports::{PlatformUser, now_ms};

#[derive(Debug, Deserialize)]
pub struct JoinQuery {
    code: Option<String>,
}

fn join_form(form: &str, code: &str, said: Option<&str>) -> Markup {
    html! {
        h1 { "Join the family" }
        (notice(said))
        form method="post" action="/join" {
            input type="hidden" name="form" value=(form);
            label for="code" { "The invite code" }
            input id="code" name="code" value=(code) autocomplete="off" maxlength="20" required;
            label for="name" { "Your name" }
            input id="name" name="name" autocomplete="name" maxlength="64";
            button type="submit" { "Join" }
        }
        p.hint { "A parent makes a code with " code { "/invite" } " in chat or on the Family page. "
                 "A code from " code { "/link" } " signs you in as yourself." }
    }
}

/// `GET /join?code=`: enter a code (set-up's link fills it in).
pub async fn form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<JoinQuery>,
) -> HttpResponse {
    if let Ok(Some(_)) = signed_in(&state, &request).await {
        return see_other("/chat");
    }
    let (token, cookie) = form_token(&state, &request);
    let code = query.code.as_deref().unwrap_or_default();
    session::with_form_cookie(
        layout::page("Join", None, Tab::None, join_form(&token, code, None)),
        cookie,
    )
}

#[derive(Debug, Deserialize)]
pub struct JoinForm {
    form: String,
    code: String,
    name: Option<String>,
}

/// Who is entering a code, for the wrong-code limit: the client's address.
fn visitor(state: &HttpState, request: &HttpRequest) -> PlatformUser {
    PlatformUser::WebVisitor(state.client.address(request))
}

/// `POST /join`.
pub async fn join(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<JoinForm>,
) -> HttpResponse {
    if !form_token_ok(&request, &body.form) {
        return layout::forged_form(None);
    }
    let Some(parts) = &state.membership else {
        return layout::not_found(None);
    };
    let name = body.name.clone().unwrap_or_default();
    let text = format!("{} {}", body.code.trim(), name.trim());
    let refused = |text: &str| {
        let mut response = layout::page(
            "Join",
            None,
            Tab::None,
            join_form(&body.form, "", Some(text)),
        );
        *response.status_mut() = StatusCode::BAD_REQUEST;
        response
    };
    let user = visitor(&state, &request);
    let joined = match parts.membership.join(&user, &text, None, now_ms()).await {
        Ok(joined) => joined,
        Err(error) => {
            tracing::error!(%error, "code from the web page not redeemed");
            return refused("The code could not be checked just now; try again in a moment.");
        }
    };
    let member = match joined {
        Change::Refused(text) => return refused(&text),
        Change::Done(
            Joined::Linked(member)
            | Joined::AlreadyTheirs(member)
            | Joined::SwitchAsked { member, .. },
        ) => member,
        Change::Done(Joined::Member { member, invited_by }) => {
            parts
                .tell_parents(&member, invited_by.as_ref(), &user)
                .await;
            member
        }
    };
    match state
        .identity
        .open_session(&member.id, "code", now_ms())
        .await
    {
        Ok(opened) => {
            super::sign_in::session_opened(&state, &request, &opened, "with a family code").await
        }
        Err(error) => {
            tracing::error!(%error, "web session not opened");
            refused(
                "You are in the family now, but signing in failed: sign in from the start page.",
            )
        }
    }
}
