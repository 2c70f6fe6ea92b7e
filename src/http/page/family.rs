//! The family, for parents: who is in it with their role and linked accounts, an invite
//! code for someone new, and a role changed or a member removed, by the same rules as
//! `/invite` and `/family` in chat (`family::Membership`: only a parent, never the last
//! parent, a member of the configuration is the file's). A child gets `404` here.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{SignedIn, signed_in};
use crate::family::{Change, Membership};
use crate::http::HttpState;
use crate::ids::FamilyRole;
use crate::ports::now_ms;

/// The signed-in parent and the family's rules, or the answer to give instead.
pub(super) async fn parent(
    state: &HttpState,
    request: &HttpRequest,
) -> Result<(SignedIn, std::sync::Arc<Membership>), HttpResponse> {
    let signed_in = match signed_in(state, request).await? {
        Some(signed_in) => signed_in,
        None => return Err(see_other("/sign-in")),
    };
    match &state.membership {
        Some(parts) if signed_in.is_parent() => Ok((signed_in, parts.membership.clone())),
        _ => Err(layout::not_found(Some(&signed_in))),
    }
}

/// How many days of usage the page shows.
const USAGE_DAYS: i64 = 14;

/// What each member used per day, newest first, as a table.
async fn usage_table(state: &HttpState) -> Markup {
    let since = now_ms() - USAGE_DAYS * 24 * 60 * 60 * 1000;
    let usage = match state.usage.daily_usage(since).await {
        Ok(usage) => usage,
        Err(error) => {
            tracing::error!(%error, "usage not read");
            return html! { p.notice { "Usage cannot be read just now." } };
        }
    };
    html! {
        @if usage.is_empty() {
            p.hint { "Nobody has written to hearth in the last " (USAGE_DAYS) " days." }
        } @else {
            table.members.usage {
                caption { "Use per member and day (UTC), the last " (USAGE_DAYS) " days" }
                thead { tr {
                    th scope="col" { "Day" } th scope="col" { "Member" } th scope="col" { "Messages" }
                    th scope="col" { "Model calls" } th scope="col" { "Tokens in / out" } th scope="col" { "Cost (USD)" }
                } }
                tbody {
                    @for day in &usage {
                        tr {
                            td { (day.day) }
                            td { (state.family.display_name(&day.member_id)) }
                            td { (day.turns) }
                            td { (day.llm_calls) }
                            td { (day.input_tokens) " / " (day.output_tokens) }
                            td { (format!("{:.4}", day.cost_usd)) }
                        }
                    }
                }
            }
        }
    }
}

async fn family_page(
    state: &HttpState,
    signed_in: &SignedIn,
    said: Option<&str>,
    code: Option<&str>,
) -> HttpResponse {
    let usage = usage_table(state).await;
    let family = state.family.clone();
    let mut members = family.members();
    members.sort_by_key(|member| family.display_name(&member.id).to_lowercase());
    let csrf = &signed_in.session.csrf_token;
    let body: Markup = html! {
        h1 { "Family" }
        p { a href="/family/activity" { "What hearth did: intent decisions and family script runs" } }
        (notice(said))
        @if let Some(code) = code {
            p.notice role="status" {
                "The invite code: " strong.code { (code) }
                ". The new member sends " code { "/join " (code) } " to hearth on Telegram or Matrix within 24 hours. It works once."
            }
        }
        table.members {
            caption { "Members" }
            thead { tr { th scope="col" { "Name" } th scope="col" { "Role" } th scope="col" { "Accounts" } th scope="col" { "Change" } } }
            tbody {
                @for member in &members {
                    tr {
                        td { (family.display_name(&member.id)) " " span.hint { "(" (member.id) ")" } }
                        td { (member.role.as_str()) }
                        td {
                            @if let Some(id) = member.telegram_user_id { "Telegram " (id) br; }
                            @if let Some(id) = &member.matrix_user_id { "Matrix " (id) }
                        }
                        td {
                            @if family.is_configured(&member.id) {
                                span.hint { "in the configuration file" }
                            } @else if member.id != signed_in.member.id {
                                form.inline method="post" action={ "/family/" (member.id) "/role" } {
                                    input type="hidden" name="csrf" value=(csrf);
                                    @let other = if member.role == FamilyRole::Parent { "child" } else { "parent" };
                                    input type="hidden" name="role" value=(other);
                                    button.secondary type="submit" { "Make " (other) }
                                }
                                form.inline method="post" action={ "/family/" (member.id) "/remove" } {
                                    input type="hidden" name="csrf" value=(csrf);
                                    button.secondary type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Usage" }
        (usage)
        h2 { "Invite someone" }
        form method="post" action="/family/invite" {
            input type="hidden" name="csrf" value=(csrf);
            label for="invite-name" { "Their name (optional)" }
            input id="invite-name" name="name" maxlength="64";
            label for="invite-role" { "Role" }
            select id="invite-role" name="role" {
                option value="child" { "child" }
                option value="parent" { "parent" }
            }
            button type="submit" { "Make an invite code" }
        }
    };
    layout::page("Family", Some(signed_in), Tab::Family, body)
}

/// `GET /family`.
pub async fn page(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    match parent(&state, &request).await {
        Ok((signed_in, _)) => family_page(&state, &signed_in, None, None).await,
        Err(answer) => answer,
    }
}

#[derive(Debug, Deserialize)]
pub struct InviteForm {
    csrf: String,
    role: String,
    name: Option<String>,
}

/// `POST /family/invite`: a code for someone new; shown once, here.
pub async fn invite(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<InviteForm>,
) -> HttpResponse {
    let (signed_in, membership) = match parent(&state, &request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    if !signed_in.csrf_ok(&body.csrf) {
        return layout::forged_form(Some(&signed_in));
    }
    let Some(role) = FamilyRole::parse(&body.role) else {
        return layout::problem(
            StatusCode::BAD_REQUEST,
            Some(&signed_in),
            "Pick parent or child.",
        );
    };
    match membership
        .invite(&signed_in.member, role, body.name.clone(), now_ms())
        .await
    {
        Ok(Change::Done(issued)) => {
            let mut response = family_page(&state, &signed_in, None, Some(&issued.code)).await;
            // The code is shown once: never kept by a cache or the browser's history.
            response.headers_mut().insert(
                actix_web::http::header::CACHE_CONTROL,
                actix_web::http::header::HeaderValue::from_static("no-store"),
            );
            response
        }
        Ok(Change::Refused(text)) => family_page(&state, &signed_in, Some(&text), None).await,
        Err(error) => {
            tracing::error!(%error, "invite code not made");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&signed_in),
                "The code could not be made just now; try again.",
            )
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ChangeForm {
    csrf: String,
    role: Option<String>,
}

/// `POST /family/{member}/role` and `/family/{member}/remove`.
pub async fn change(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<(String, String)>,
    body: web::Form<ChangeForm>,
) -> HttpResponse {
    let (signed_in, membership) = match parent(&state, &request).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    if !signed_in.csrf_ok(&body.csrf) {
        return layout::forged_form(Some(&signed_in));
    }
    let (target, what) = path.into_inner();
    if state.family.member(&target).is_none() {
        return layout::not_found(Some(&signed_in));
    }
    let changed = match (
        what.as_str(),
        body.role.as_deref().and_then(FamilyRole::parse),
    ) {
        ("role", Some(role)) => membership
            .set_role(Some(&signed_in.member), &target, role, now_ms())
            .await
            .map(|change| {
                change.map(|member| format!("{} is now a {}.", member.id, member.role.as_str()))
            }),
        ("remove", _) => membership
            .remove(Some(&signed_in.member), &target, now_ms())
            .await
            .map(|change| {
                change.map(|member| format!("{} is no longer in the family.", member.id))
            }),
        _ => return layout::not_found(Some(&signed_in)),
    };
    match changed {
        Ok(Change::Done(text) | Change::Refused(text)) => {
            family_page(&state, &signed_in, Some(&text), None).await
        }
        Err(error) => {
            tracing::error!(%error, "family change not stored");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&signed_in),
                "The change could not be stored just now; try again.",
            )
        }
    }
}
