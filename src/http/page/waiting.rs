//! "Waiting for you": the member's open confirmations on every channel and, for a parent,
//! the children's requests escalated to them, each with exactly what would run (the tool,
//! its arguments, the prompt the member was shown). An answer here counts as the member's
//! own (`AnswerPlace::OwnCredential`): the queue resumes the turn where it was asked, and
//! a prompt of it answered elsewhere is no longer open there.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, SignedIn};
use crate::actors::request_queue::{AnswerConfirmation, AnswerError};
use crate::http::HttpState;
use crate::ids::ConfirmationId;
use crate::local_time::phrasing;
use crate::ports::{AnswerPlace, AnswerRefused, PendingConfirmation, now_ms};

/// The confirmations `signed_in` may answer now, oldest first.
pub async fn open_for(
    state: &HttpState,
    signed_in: &SignedIn,
) -> Result<Vec<PendingConfirmation>, HttpResponse> {
    let open = state.pending.open().await.map_err(|error| {
        tracing::error!(%error, "open confirmations not read");
        layout::problem(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(signed_in),
            "hearth cannot read what waits for you just now; try again in a moment.",
        )
    })?;
    let now = now_ms();
    Ok(open
        .into_iter()
        .filter(|open| open.decision.is_none())
        .map(|open| open.confirmation)
        .filter(|confirmation| {
            confirmation.expires_at_ms > now && confirmation.answerable_by(&signed_in.member.id)
        })
        .collect())
}

/// One confirmation with its Approve and Decline buttons; `back` is where the answer
/// returns to (`chat` or `waiting`).
pub fn card(
    state: &HttpState,
    signed_in: &SignedIn,
    confirmation: &PendingConfirmation,
    back: &str,
) -> Markup {
    let now = crate::clock::now();
    let expires = DateTime::<Utc>::from_timestamp_millis(confirmation.expires_at_ms)
        .map(|at| phrasing::say_instant(at, signed_in.zone(), now))
        .unwrap_or_default();
    let for_someone_else = confirmation.member_id != signed_in.member.id;
    let arguments = serde_json::to_string_pretty(&confirmation.arguments).unwrap_or_default();
    html! {
        article.confirmation aria-label={ "Confirmation " (confirmation.id) } {
            @if for_someone_else {
                p.asked-by { strong { (state.family.display_name(&confirmation.member_id)) } " asks for your approval (on " (place_name(confirmation)) ")." }
            } @else {
                p.asked-by { "You were asked on " (place_name(confirmation)) "." }
            }
            p.prompt { (confirmation.prompt) }
            details {
                summary { "Exactly what would run: " code { (confirmation.tool_name) } }
                pre { code { (arguments) } }
            }
            p.hint { "Open until " (expires) "." }
            form.answer method="post" action={ "/waiting/" (confirmation.id) } {
                input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                input type="hidden" name="back" value=(back);
                button type="submit" name="answer" value="approve" { "Approve" }
                button.secondary type="submit" name="answer" value="decline" { "Decline" }
            }
        }
    }
}

/// Where a confirmation was asked, in words.
fn place_name(confirmation: &PendingConfirmation) -> &'static str {
    match confirmation.conversation.channel() {
        "telegram" => "Telegram",
        "matrix" => "Matrix",
        "http" => "the web page or the API",
        "console" => "the terminal",
        _ => "another channel",
    }
}

#[derive(Debug, Deserialize)]
pub struct WaitingQuery {
    answered: Option<String>,
}

/// `GET /waiting`.
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<WaitingQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let open = match open_for(&state, &signed_in).await {
        Ok(open) => open,
        Err(problem) => return problem,
    };
    let said = match query.answered.as_deref() {
        Some("approve") => Some("Approved. The request goes on where it was asked."),
        Some("decline") => Some("Declined. The one who asked is told where they asked."),
        _ => None,
    };
    layout::page(
        "Waiting for you",
        Some(&signed_in),
        Tab::Waiting,
        html! {
            h1 { "Waiting for you" }
            (notice(said))
            @if open.is_empty() {
                p { "Nothing waits for your approval." }
            }
            @for confirmation in &open {
                (card(&state, &signed_in, confirmation, "waiting"))
            }
        },
    )
}

#[derive(Debug, Deserialize)]
pub struct AnswerForm {
    csrf: String,
    answer: String,
    back: Option<String>,
}

/// `POST /waiting/{id}`: approve or decline, as the signed-in member.
pub async fn answer(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<AnswerForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let approve = match body.answer.as_str() {
        "approve" => true,
        "decline" => false,
        _ => {
            return layout::problem(
                StatusCode::BAD_REQUEST,
                Some(&signed_in),
                "Answer with Approve or Decline.",
            );
        }
    };
    let Ok(confirmation_id) = path.parse::<ConfirmationId>() else {
        return layout::not_found(Some(&signed_in));
    };
    // From the chat, the page comes back with the resumed turn's reply (as after a message).
    let (reply_to, receiver) = tokio::sync::oneshot::channel();
    let back_to_chat = body.back.as_deref() == Some("chat");
    let answered = state
        .queue
        .send(AnswerConfirmation {
            confirmation_id,
            member_id: signed_in.member.id.clone(),
            place: AnswerPlace::OwnCredential,
            approve,
            reply_to: back_to_chat.then_some(reply_to),
        })
        .await;
    let text = match answered {
        Ok(Ok(answered)) => {
            if back_to_chat {
                if answered.asked_by == signed_in.member.id {
                    let _ = tokio::time::timeout(state.reply_timeout, receiver).await;
                }
                return see_other(&format!("/chat?answered={}", body.answer));
            }
            return see_other(&format!("/waiting?answered={}", body.answer));
        }
        // Another member's confirmation is as one that does not exist.
        Ok(Err(AnswerError::Refused(AnswerRefused::Unknown | AnswerRefused::NotYours))) => {
            return layout::not_found(Some(&signed_in));
        }
        Ok(Err(AnswerError::Refused(refusal))) => refusal.to_string(),
        Ok(Err(AnswerError::Storage(error))) => {
            tracing::error!(%error, "confirmation answer not stored");
            "The answer could not be stored; try again.".to_string()
        }
        Err(_) => "hearth is shutting down; try again in a moment.".to_string(),
    };
    layout::problem(
        StatusCode::CONFLICT,
        Some(&signed_in),
        &layout::upper_first(&text),
    )
}
