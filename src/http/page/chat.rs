//! The member's own web conversation with hearth (`http:<member>/web`, an HTTP
//! conversation like any other: slash commands, confirmations and questions work as on
//! the inbound API). The page is whole without script: a message posted waits for its
//! reply (up to `http.reply_timeout_seconds`) and the page comes back with it. With
//! `hearth.js`, a message is posted in the background and its reply streams into the page
//! as the model writes it (`chat_stream.rs`); the log is read again once the turn is
//! answered or waits for the member. A question the turn asks (an MCP server's) is shown
//! in the log with its form (`question.rs`); the member's next message answers it too.
//! Everything shown is escaped: what a member or the model wrote is text, never markup.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::oneshot;

use super::chat_stream;
use super::layout::{self, Tab, notice, see_other};
use super::question;
use super::session::{self, SignedIn, signed_in};
use super::waiting;
use crate::actors::channels::{ForgetReply, HttpSubmitError, SubmitHttpInbound};
use crate::actors::request_queue::{ReplyKind, SubmitError, Submitted};
use crate::http::HttpState;
use crate::ids::ConversationKey;
use crate::llm::Role;
use crate::ports::{Inbound, InboxStatus, now_ms};
use crate::secrets;

/// The session id of every member's web conversation.
const WEB_SESSION: &str = "web";
/// Entries of the log shown, newest last.
const LOG_ENTRIES: usize = 100;
const LOG_DAYS_MS: i64 = 30 * 24 * 60 * 60 * 1000;
const MAX_TEXT_CHARS: usize = 16_000;

pub(super) fn conversation_of(signed_in: &SignedIn) -> Option<ConversationKey> {
    ConversationKey::http_session(&signed_in.member.id, Some(WEB_SESSION)).ok()
}

/// The log and what waits for the member in this conversation.
async fn log(state: &HttpState, signed_in: &SignedIn) -> Result<Markup, HttpResponse> {
    let Some(conversation) = conversation_of(signed_in) else {
        return Err(layout::not_found(Some(signed_in)));
    };
    let entries = state
        .memory
        .recent(&conversation, LOG_ENTRIES, now_ms() - LOG_DAYS_MS)
        .await
        .map_err(|error| {
            tracing::error!(%error, "web conversation not read");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(signed_in),
                "hearth cannot read this conversation just now; try again in a moment.",
            )
        })?;
    let waiting: Vec<_> = waiting::open_for(state, signed_in)
        .await?
        .into_iter()
        .filter(|confirmation| confirmation.conversation == conversation)
        .collect();
    let asked = question::open_in(state, signed_in, &conversation).await;
    Ok(html! {
        @if entries.is_empty() && waiting.is_empty() && asked.is_none() {
            p.hint { "Write to hearth below. Slash commands work here as in chat: " code { "/help" } "." }
        }
        ol.messages {
            @for entry in &entries {
                @match entry.role {
                    Role::User => li.member { span.visually-hidden { "You: " } (entry.content) },
                    _ => li.hearth { span.visually-hidden { "hearth: " } (entry.content) },
                }
            }
        }
        @for confirmation in &waiting {
            (waiting::card(state, signed_in, confirmation, "chat"))
        }
        @if let Some(asked) = &asked {
            (question::card(signed_in, asked))
        }
    })
}

fn composer(signed_in: &SignedIn) -> Markup {
    // A fresh id per page: the same form posted twice (a double click, a reload) is one
    // message.
    let nonce = secrets::random_key("").unwrap_or_default();
    html! {
        form id="chat-form" method="post" action="/chat" {
            input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
            input type="hidden" name="nonce" value=(nonce);
            label for="text" { "Your message" }
            textarea id="text" name="text" rows="3" maxlength="16000" required {}
            button type="submit" { "Send" }
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ChatQuery {
    answered: Option<String>,
}

/// `GET /chat`.
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<ChatQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let log = match log(&state, &signed_in).await {
        Ok(log) => log,
        Err(problem) => return problem,
    };
    let said = match query.answered.as_deref() {
        Some("approve") => Some("Approved."),
        Some("decline") => Some("Declined."),
        _ => None,
    };
    layout::page(
        "Chat",
        Some(&signed_in),
        Tab::Chat,
        html! {
            h1 { "Chat" }
            (notice(said))
            section id="log" aria-live="polite" aria-label="Conversation" { (log) }
            (composer(&signed_in))
        },
    )
}

/// `GET /chat/log`: the log alone, for the page's script.
pub async fn log_fragment(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    let signed_in = match signed_in(&state, &request).await {
        Ok(Some(signed_in)) => signed_in,
        Ok(None) => return HttpResponse::Unauthorized().finish(),
        Err(unavailable) => return unavailable,
    };
    match log(&state, &signed_in).await {
        Ok(log) => HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .body(log.into_string()),
        Err(problem) => problem,
    }
}

#[derive(Debug, Deserialize)]
pub struct SendForm {
    csrf: String,
    nonce: String,
    text: String,
}

fn wants_json(request: &HttpRequest) -> bool {
    request
        .headers()
        .get("accept")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.starts_with("application/json"))
}

/// `POST /chat`: one message to hearth.
pub async fn send(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<SendForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let body = body.into_inner();
    let text = body.text.trim();
    if text.is_empty() || text.chars().count() > MAX_TEXT_CHARS {
        return layout::problem(
            StatusCode::BAD_REQUEST,
            Some(&signed_in),
            &format!("A message is 1 to {MAX_TEXT_CHARS} characters."),
        );
    }
    deliver(
        &request,
        &state,
        &signed_in,
        text.to_string(),
        &body.nonce,
        false,
    )
    .await
}

/// Submit `text` as the member's message in their web conversation (`only_answer`: as
/// the answer to the question they are asked, or not at all), and answer with the
/// streamed reply, the JSON the script used to follow, or the page again once it came.
pub(super) async fn deliver(
    request: &HttpRequest,
    state: &HttpState,
    signed_in: &SignedIn,
    text: String,
    nonce: &str,
    only_answer: bool,
) -> HttpResponse {
    let nonce_ok = nonce.len() == 64 && nonce.bytes().all(|b| b.is_ascii_hexdigit());
    let Some(conversation) = conversation_of(signed_in).filter(|_| nonce_ok) else {
        return layout::forged_form(Some(signed_in));
    };
    let inbound = Inbound {
        id: Inbound::new_id(),
        conversation,
        platform_event_id: Some(format!("{}/web-{nonce}", signed_in.member.id)),
        member_id: signed_in.member.id.clone(),
        text,
        received_at_ms: now_ms(),
        extras: Default::default(),
    };
    let inbox_id = inbound.id.clone();
    let (reply_to, receiver) = oneshot::channel();
    let (listener, events) = if chat_stream::wants_stream(request) {
        let (listener, events) = chat_stream::listener();
        (Some(listener), Some(events))
    } else {
        (None, None)
    };
    let submitted = state
        .channel
        .send(SubmitHttpInbound {
            inbound,
            reply_to,
            listener,
            only_answer,
        })
        .await;
    let (waiter, message) = match submitted {
        Ok(Ok(Submitted::Accepted)) => (inbox_id.clone(), inbox_id),
        Ok(Ok(Submitted::AnsweredQuestion { inbox_id: asking })) => (inbox_id, asking),
        Ok(Ok(Submitted::Duplicate(record))) => (inbox_id, record.inbound.id),
        Ok(Err(HttpSubmitError::Queue(SubmitError::NoOpenQuestion))) => {
            return layout::problem(
                StatusCode::CONFLICT,
                Some(signed_in),
                "That question is no longer open (answered already, cancelled or expired). \
                 Go back to the chat to see where things stand.",
            );
        }
        Ok(Err(HttpSubmitError::Queue(SubmitError::Busy { .. }))) => {
            return layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(signed_in),
                "hearth is busy; send your message again in a few seconds.",
            );
        }
        Ok(Err(error)) => {
            tracing::error!(%error, "web message not stored");
            return layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(signed_in),
                "Your message could not be stored; send it again.",
            );
        }
        Err(_) => {
            return layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(signed_in),
                "hearth is shutting down; send your message again in a moment.",
            );
        }
    };
    if let Some(events) = events {
        return chat_stream::respond(
            state.channel.clone(),
            message,
            waiter,
            events,
            receiver,
            state.reply_timeout,
        );
    }
    let first = tokio::time::timeout(state.reply_timeout, receiver).await;
    if !matches!(first, Ok(Ok(_))) {
        state.channel.do_send(ForgetReply { inbox_id: waiter });
    }
    if !wants_json(request) {
        return see_other("/chat");
    }
    // The script shows a question at once (the member's next message answers it: it is
    // kept nowhere else) and otherwise reads the log while the message is worked on.
    let (kind, text) = match first {
        Ok(Ok(reply)) => match reply.kind {
            ReplyKind::Question => ("question", reply.text),
            ReplyKind::Answer | ReplyKind::Failed => ("answered", String::new()),
            ReplyKind::AskConfirmation { .. } => ("confirmation", String::new()),
            _ => ("working", reply.text),
        },
        _ => ("working", String::new()),
    };
    HttpResponse::Accepted().json(json!({ "id": message, "kind": kind, "text": text }))
}

/// `GET /chat/messages/{id}`: whether one of the member's web messages is still worked on.
pub async fn message_status(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
) -> HttpResponse {
    let signed_in = match signed_in(&state, &request).await {
        Ok(Some(signed_in)) => signed_in,
        Ok(None) => return HttpResponse::Unauthorized().finish(),
        Err(unavailable) => return unavailable,
    };
    let conversation = conversation_of(&signed_in);
    match state.inbox.get(&path).await {
        Ok(Some(record))
            if Some(&record.inbound.conversation) == conversation.as_ref()
                && record.inbound.member_id == signed_in.member.id =>
        {
            let working = matches!(record.status, InboxStatus::Accepted);
            HttpResponse::Ok().json(json!({ "status": record.status.as_str(), "working": working }))
        }
        Ok(_) => HttpResponse::NotFound().json(json!({ "error": "no such message of yours" })),
        Err(error) => {
            tracing::error!(%error, "web message not read");
            HttpResponse::ServiceUnavailable().json(json!({ "error": "storage unavailable" }))
        }
    }
}
