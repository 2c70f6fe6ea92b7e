//! Signing in: the member picks their name, and hearth sends either a one-time link (the
//! easy way, which no guessing can block) or a six-digit code to their own Telegram chat or
//! Matrix room, the preferred one (through the outbox, as a secret removed once
//! delivered); the link used, or the code typed here, opens a session; a link of `hearth
//! web-link` or of `/signin` in chat does too. Wrong codes are counted in the database per
//! member, per client address (`http::client`) and overall (`identity`); the member is
//! told in their chat when tries get locked and whenever a new session opens. Every
//! attempt is counted in `hearth_web_sign_ins_total` by way and outcome; a code, a link
//! and a cookie are never logged.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, form_token, form_token_ok, signed_in};
use crate::family::how_long;
use crate::http::HttpState;
use crate::identity::{
    AskedCode, CodeSignIn, MAX_WRONG_SIGN_IN_CODES, OpenedSession, SIGN_IN_CODE_VALID_MS,
};
use crate::ids::MemberId;
use crate::ports::{LockScope, Locked, SignInCheck, now_ms};

/// The family as stored now (a member who joined on another worker is on the list); a
/// database that does not answer leaves the roster as it was read last.
async fn fresh_family(state: &HttpState) {
    if let Err(error) = state.family.refresh().await {
        tracing::error!(%error, "family not read");
    }
}

fn count(state: &HttpState, way: &str, outcome: &str) {
    state.metrics.increment(
        "hearth_web_sign_ins_total",
        &[("way", way), ("outcome", outcome)],
    );
}

/// `GET /`: the chat of a signed-in member, else signing in.
pub async fn home(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    match signed_in(&state, &request).await {
        Ok(Some(_)) => see_other("/chat"),
        Ok(None) => see_other("/sign-in"),
        Err(unavailable) => unavailable,
    }
}

fn pick_name(state: &HttpState, form: &str, said: Option<&str>) -> Markup {
    let mut members = state.family.members();
    members.sort_by_key(|member| state.family.display_name(&member.id).to_lowercase());
    html! {
        h1 { "Sign in" }
        (notice(said))
        form method="post" action="/sign-in" {
            input type="hidden" name="form" value=(form);
            label for="member" { "Who are you?" }
            select id="member" name="member" required {
                @for member in &members {
                    option value=(member.id) { (state.family.display_name(&member.id)) }
                }
            }
            button type="submit" name="way" value="link" { "Send me a sign-in link" }
            button.secondary type="submit" name="way" value="code" { "Send me a code" }
        }
        p.hint { "hearth sends a link (or a six-digit code) to your own chat with it on \
                  Telegram or Matrix. You can also write " code { "/signin" } " to hearth there. \
                  No chat with hearth yet? A parent can print you a sign-in link with \
                  " code { "hearth web-link --user NAME" } "." }
        p { a href="/join" { "Have an invite code? Join the family." } }
    }
}

/// `GET /sign-in`: pick your name.
pub async fn form(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    fresh_family(&state).await;
    if let Ok(Some(_)) = signed_in(&state, &request).await {
        return see_other("/chat");
    }
    let (token, cookie) = form_token(&state, &request);
    session::with_form_cookie(
        layout::page("Sign in", None, Tab::None, pick_name(&state, &token, None)),
        cookie,
    )
}

#[derive(Debug, Deserialize)]
pub struct AskCodeForm {
    member: String,
    form: String,
    /// `link` or `code` (the default).
    way: Option<String>,
}

/// `POST /sign-in`: send a link or a code to the member's own chat.
pub async fn ask_code(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<AskCodeForm>,
) -> HttpResponse {
    if !form_token_ok(&request, &body.form) {
        return layout::forged_form(None);
    }
    let refuse = |text: &str| {
        let mut response = layout::page(
            "Sign in",
            None,
            Tab::None,
            pick_name(&state, &body.form, Some(text)),
        );
        *response.status_mut() = StatusCode::BAD_REQUEST;
        response
    };
    fresh_family(&state).await;
    let Some(member) = state.family.member(&body.member) else {
        count(&state, "code", "unknown_member");
        return refuse("Pick your name from the list.");
    };
    let Some(tell) = &state.membership else {
        return refuse(
            "hearth has no chat to send a code to. Ask a parent for a sign-in link (hearth web-link --user NAME).",
        );
    };
    if tell.chats.own_chats.of(&member.id).is_empty() {
        count(&state, "code", "no_chat");
        return refuse(&format!(
            "hearth knows no chat of its own with {}: write to hearth once on Telegram or Matrix, or ask a parent for a sign-in link (hearth web-link --user {}).",
            state.family.display_name(&member.id),
            member.id
        ));
    }
    if body.way.as_deref() == Some("link") {
        return send_link(&state, &member.id, &refuse).await;
    }
    match state.identity.ask_sign_in_code(&member.id, now_ms()).await {
        Ok(AskedCode::Issued { code, .. }) => {
            let minutes = SIGN_IN_CODE_VALID_MS / 60_000;
            let text = format!(
                "Your code to sign in to hearth's web page: {code}\nIt works for {minutes} minutes, once. If you did not ask for it, ignore this message: nobody can sign in without it."
            );
            if !tell.chats.tell_secret_once(&member.id, &text).await {
                count(&state, "code", "not_sent");
                return refuse("The code could not be sent just now; try again in a moment.");
            }
            count(&state, "code", "sent");
            see_other(&format!("/sign-in/code?member={}", member.id))
        }
        Ok(AskedCode::TooMany) => {
            count(&state, "code", "too_many");
            refuse(
                "Three codes went to your chat in the last hour. Use the newest one, or wait an hour.",
            )
        }
        Err(error) => {
            tracing::error!(%error, "sign-in code not made");
            refuse("hearth could not make a code just now; try again in a moment.")
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct CodeQuery {
    member: String,
}

fn enter_code(state: &HttpState, member: &MemberId, form: &str, said: Option<&str>) -> Markup {
    html! {
        h1 { "Sign in" }
        (notice(said))
        p { "hearth sent a code to " (state.family.display_name(member)) "'s own chat." }
        form method="post" action="/sign-in/code" {
            input type="hidden" name="form" value=(form);
            input type="hidden" name="member" value=(member);
            label for="code" { "The six-digit code" }
            input id="code" name="code" inputmode="numeric" autocomplete="one-time-code"
                maxlength="12" required autofocus;
            button type="submit" { "Sign in" }
        }
        p.hint { "No code after a minute? Telegram lets hearth write only to those who wrote to it \
                  first: send hearth any message, then start again." }
        p { a href="/sign-in" { "Not you, or no code? Start again." } }
    }
}

/// `GET /sign-in/code?member=`: type the code.
pub async fn code_form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<CodeQuery>,
) -> HttpResponse {
    fresh_family(&state).await;
    let Some(member) = state.family.member(&query.member) else {
        return see_other("/sign-in");
    };
    let (token, cookie) = form_token(&state, &request);
    session::with_form_cookie(
        layout::page(
            "Sign in",
            None,
            Tab::None,
            enter_code(&state, &member.id, &token, None),
        ),
        cookie,
    )
}

#[derive(Debug, Deserialize)]
pub struct CodeForm {
    member: String,
    code: String,
    form: String,
}

/// `POST /sign-in/code`: the code typed; a session when it is right.
pub async fn check_code(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<CodeForm>,
) -> HttpResponse {
    if !form_token_ok(&request, &body.form) {
        return layout::forged_form(None);
    }
    fresh_family(&state).await;
    let Some(member) = state.family.member(&body.member) else {
        return see_other("/sign-in");
    };
    let way = state
        .membership
        .as_ref()
        .and_then(|tell| {
            tell.chats
                .own_chats
                .of(&member.id)
                .first()
                .map(|chat| chat.channel().to_string())
        })
        .unwrap_or_else(|| "code".to_string());
    let refused = |text: String| {
        let mut response = layout::page(
            "Sign in",
            None,
            Tab::None,
            enter_code(&state, &member.id, &body.form, Some(&text)),
        );
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response
    };
    let address = state.client.address(&request);
    match state
        .identity
        .sign_in_with_code(&member.id, &body.code, &way, &address, now_ms())
        .await
    {
        Ok(CodeSignIn::Opened(opened)) => {
            count(&state, "code", "signed_in");
            session_opened(&state, &request, &opened, "with a code").await
        }
        Ok(CodeSignIn::Refused { check, locked_now }) => {
            if let Some(locked) = locked_now {
                tell_locked(&state, &member.id, locked).await;
            }
            let (outcome, text) = match check {
                SignInCheck::Limited(locked) => ("limited", limited_text(locked)),
                SignInCheck::Wrong { tries_left } if tries_left > 0 => (
                    "wrong",
                    format!(
                        "That is not the code. {tries_left} more tries before it stops working."
                    ),
                ),
                SignInCheck::Wrong { .. } | SignInCheck::Locked => (
                    "locked",
                    format!(
                        "{MAX_WRONG_SIGN_IN_CODES} wrong tries: this code no longer works. Ask for a new one."
                    ),
                ),
                SignInCheck::Expired => (
                    "expired",
                    "This code has expired. Ask for a new one.".to_string(),
                ),
                SignInCheck::NoCode | SignInCheck::Accepted => (
                    "no_code",
                    "No code is waiting for you. Ask for a new one.".to_string(),
                ),
            };
            count(&state, "code", outcome);
            refused(text)
        }
        Err(error) => {
            tracing::error!(%error, "sign-in code not checked");
            refused("hearth could not check the code just now; try again in a moment.".into())
        }
    }
}

/// `GET /sign-in/link/{secret}`: a button that uses the link (a link preview fetching the
/// page does not spend it).
pub async fn link_form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
) -> HttpResponse {
    let (token, cookie) = form_token(&state, &request);
    session::with_form_cookie(
        layout::page(
            "Sign in",
            None,
            Tab::None,
            html! {
                h1 { "Sign in" }
                form method="post" action="/sign-in/link" {
                    input type="hidden" name="form" value=(token);
                    input type="hidden" name="link" value=(path.as_str());
                    button type="submit" { "Sign in with this link" }
                }
                p.hint { "The link works once." }
            },
        ),
        cookie,
    )
}

#[derive(Debug, Deserialize)]
pub struct LinkForm {
    link: String,
    form: String,
}

/// `POST /sign-in/link`: spend the link, open a session.
pub async fn use_link(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<LinkForm>,
) -> HttpResponse {
    if !form_token_ok(&request, &body.form) {
        return layout::forged_form(None);
    }
    fresh_family(&state).await;
    match state.identity.sign_in_with_link(&body.link, now_ms()).await {
        Ok(Some(opened))
            if state
                .family
                .member(opened.session.member_id.as_str())
                .is_some() =>
        {
            count(&state, "link", "signed_in");
            session_opened(&state, &request, &opened, "with a sign-in link").await
        }
        Ok(_) => {
            count(&state, "link", "refused");
            layout::problem(
                StatusCode::UNAUTHORIZED,
                None,
                "This sign-in link was used already, has expired, or is not one. Ask for a new one.",
            )
        }
        Err(error) => {
            tracing::error!(%error, "sign-in link not checked");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "hearth could not check the link just now; try again in a moment.",
            )
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct SignOutForm {
    csrf: String,
}

/// `POST /sign-out`: end this session, here and in the database.
pub async fn sign_out(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<SignOutForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    if let Err(error) = state
        .identity
        .end_session(&signed_in.member.id, &signed_in.session.id)
        .await
    {
        tracing::error!(%error, "web session not ended");
    }
    let mut response = see_other("/sign-in");
    let _ = response.add_cookie(&session::removed_session_cookie(&state, &request));
    response
}

/// A session just opened: the member is told in their chat (a session they did not open is
/// theirs to end), and the browser goes to the chat with its cookie.
pub(super) async fn session_opened(
    state: &HttpState,
    request: &HttpRequest,
    opened: &OpenedSession,
    how: &str,
) -> HttpResponse {
    let member = &opened.session.member_id;
    tracing::info!(member = %member, session = %opened.session.id, how, "signed in on the web page");
    if let Some(tell) = &state.membership {
        let address = state.client.address(request);
        let text = format!(
            "You signed in to hearth's web page {how} (from {address}). If that was not you, sign that session out under Settings on the page, or ask a parent to help."
        );
        tell.chats.tell_member_once(member, &text).await;
    }
    let mut response = see_other("/chat");
    let _ = response.add_cookie(&session::session_cookie(state, request, opened));
    response
}

/// Tell `member_id` in their chat that wrong codes locked signing in by code.
async fn tell_locked(state: &HttpState, member_id: &MemberId, locked: Locked) {
    let Some(tell) = &state.membership else {
        return;
    };
    let whose = match locked.scope {
        LockScope::Member => "for you",
        LockScope::Source => "from the address they came from",
        LockScope::Everyone => "for everyone",
    };
    let text = format!(
        "Wrong sign-in codes were typed for you on hearth's web page: signing in by code is paused {whose} for {}. You can still sign in: write /signin to me here for a link.",
        how_long(locked.until_ms - now_ms())
    );
    tell.chats.tell_member_once(member_id, &text).await;
    tracing::warn!(member = %member_id, scope = locked.scope.as_str(), until_ms = locked.until_ms, "sign-in codes locked");
}

fn limited_text(locked: Locked) -> String {
    let whose = match locked.scope {
        LockScope::Member => "for you",
        LockScope::Source => "from where you are",
        LockScope::Everyone => "for everyone",
    };
    format!(
        "Too many wrong codes: signing in by code is paused {whose} for {}. Sign in with a link instead: write /signin to hearth in your chat, or ask for a link on the start page.",
        how_long(locked.until_ms - now_ms())
    )
}

/// Send a one-time sign-in link to `member_id`'s own chat; the page saying so, or the
/// refusal.
async fn send_link(
    state: &HttpState,
    member_id: &MemberId,
    refuse: &dyn Fn(&str) -> HttpResponse,
) -> HttpResponse {
    let Some(tell) = &state.membership else {
        return refuse("hearth has no chat to send a link to.");
    };
    let Some(links) = &tell.sign_in_links else {
        return refuse("hearth has no chat to send a link to.");
    };
    match state.identity.may_send_link(member_id, now_ms()).await {
        Ok(true) => {}
        Ok(false) => {
            count(state, "link", "too_many");
            return refuse(
                "Three links went to your chat in the last hour. Use the newest one, or write /signin to hearth there.",
            );
        }
        Err(error) => {
            tracing::error!(%error, "sign-in links not counted");
            return refuse("hearth could not make a link just now; try again in a moment.");
        }
    }
    let Some(text) = links.link_text(member_id, now_ms()).await else {
        return refuse("hearth could not make a link just now; try again in a moment.");
    };
    if !tell.chats.tell_secret_once(member_id, &text).await {
        count(state, "link", "not_sent");
        return refuse("The link could not be sent just now; try again in a moment.");
    }
    count(state, "link", "sent");
    layout::page(
        "Sign in",
        None,
        Tab::None,
        html! {
            h1 { "Sign in" }
            p { "hearth sent a sign-in link to " (state.family.display_name(member_id)) "'s own chat. Open it there: it works once." }
            p { a href="/sign-in" { "Not you, or no link? Start again." } }
        },
    )
}
