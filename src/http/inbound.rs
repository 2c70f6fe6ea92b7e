//! `POST /inbound` and `GET /inbound/{id}`.
//!
//! A member's HTTP conversations are their own: the conversation is the member's id, or
//! `<member>/<session_id>`, so a `session_id` never reaches another member's history; a
//! `message_id` is scoped to its member, and `GET /inbound/{id}?user_id=` finds only that
//! member's messages.
//!
//! `POST /inbound {user_id, text, session_id?, message_id?}` answers `200` with the
//! reply (or with a question the turn asks, `status: "question"`: the member's next
//! message answers it and gets the turn's next reply, under the asking message's id);
//! `202` with the message id when the answer is delayed or takes longer
//! than `http.reply_timeout_seconds` (read it later with `GET /inbound/{id}`); the same
//! message sent again (its `message_id`) while its turn runs, on this worker or another,
//! waits for that turn's reply the same way;
//! `503` with `Retry-After` when the queue is full; `204` and nothing else for a
//! user id that is not a family member.
//!
//! The same message may come as `multipart/form-data` (`inbound_form.rs`) with the same
//! fields and one audio file, `audio` (`audio/*` or `application/ogg`; `text` may then be
//! left out): the file is streamed into the attachments folder within
//! `http.max_attachment_bytes` (`413` past it, nothing kept) and reaches the turn as an
//! audio attachment, with its duration when it is an OGG or WAV file.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::oneshot;

use super::HttpState;
use super::auth::{InboundCaller, inbound_caller, inbound_member};
use crate::actors::channels::{AwaitReply, ForgetReply, HttpSubmitError, SubmitHttpInbound};
use crate::actors::request_queue::{
    AnswerConfirmation, AnswerError, DeliverReply, ReplyKind, SubmitError, Submitted,
};
use crate::ids::{ConfirmationId, ConversationKey, HTTP_CHANNEL};
use crate::ports::{AnswerPlace, AnswerRefused, Inbound, InboxRecord, InboxStatus, now_ms};

pub(super) const MAX_TEXT_CHARS: usize = 16_000;
/// Longer session and message ids are refused: they are keys, not content.
const MAX_ID_CHARS: usize = 200;

/// A caller's own id (`session_id`, `message_id`): present, short, printable.
fn check_caller_id(field: &str, value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        return Err(format!("field `{field}` is empty"));
    }
    if value.chars().count() > MAX_ID_CHARS {
        return Err(format!(
            "field `{field}` is longer than {MAX_ID_CHARS} characters"
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("field `{field}` contains control characters"));
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboundBody {
    /// The member; left out with a member's own token, which speaks as its member.
    user_id: Option<String>,
    text: String,
    /// Separate conversations of one member; defaults to the member's id.
    session_id: Option<String>,
    /// The caller's id for this message: sending it again is answered once.
    message_id: Option<String>,
}

pub(super) fn bad_request(message: String) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({ "error": message }))
}

fn record_json(record: &InboxRecord) -> serde_json::Value {
    json!({
        "id": record.inbound.id,
        "status": record.status.as_str(),
        "reply": record.reply,
    })
}

pub async fn post_inbound(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Json<InboundBody>,
) -> HttpResponse {
    let named = body.user_id.as_deref();
    let user_id =
        match inbound_member(&state.keys, &state.identity, &state.family, &request, named).await {
            Ok(user_id) => user_id,
            Err(refused) => return refused,
        };
    let body = body.into_inner();
    if body.text.trim().is_empty() {
        return bad_request("field `text` is empty".into());
    }
    let fields = InboundFields {
        text: body.text,
        session_id: body.session_id,
        message_id: body.message_id,
    };
    let inbound = match inbound_of(&state, &user_id, fields, Inbound::new_id()) {
        Ok(inbound) => inbound,
        Err(refused) => return refused,
    };
    submit(&state, inbound).await.response
}

/// What a message to `POST /inbound` says besides its member, in either form.
pub(super) struct InboundFields {
    pub text: String,
    pub session_id: Option<String>,
    pub message_id: Option<String>,
}

/// The message `user_id` sends, its fields checked, under inbox id `id`; else the answer
/// to give (`204` for a user id that is no family member).
// The refusal is the HTTP answer itself, made at most once per request.
#[allow(clippy::result_large_err)]
pub(super) fn inbound_of(
    state: &HttpState,
    user_id: &str,
    fields: InboundFields,
    id: String,
) -> Result<Inbound, HttpResponse> {
    if fields.text.chars().count() > MAX_TEXT_CHARS {
        return Err(bad_request(format!(
            "field `text` is longer than {MAX_TEXT_CHARS} characters"
        )));
    }
    for (field, value) in [
        ("session_id", &fields.session_id),
        ("message_id", &fields.message_id),
    ] {
        if let Some(value) = value
            && let Err(problem) = check_caller_id(field, value)
        {
            return Err(bad_request(problem));
        }
    }
    // The member's id as the family knows it: the caller's text is read no further.
    let Some(member_id) = state
        .family
        .by_id(HTTP_CHANNEL, user_id)
        .map(|member| member.id.clone())
    else {
        return Err(HttpResponse::NoContent().finish());
    };
    let conversation = ConversationKey::http_session(&member_id, fields.session_id.as_deref())
        .map_err(|error| bad_request(error.to_string()))?;
    Ok(Inbound {
        id,
        conversation,
        // A message id is the member's own: another member's same id is another message.
        platform_event_id: fields
            .message_id
            .map(|message_id| format!("{member_id}/{message_id}")),
        member_id,
        text: fields.text,
        received_at_ms: now_ms(),
        extras: Default::default(),
    })
}

/// What became of a submitted message: the HTTP answer, and whether the inbox took it as a
/// new message (not a duplicate, not refused), so its files are kept.
pub(super) struct Submission {
    pub response: HttpResponse,
    pub stored: bool,
}

/// Submit `inbound` through the HTTP channel and wait for its reply.
pub(super) async fn submit(state: &HttpState, inbound: Inbound) -> Submission {
    let refused = |response| Submission {
        response,
        stored: false,
    };
    let inbox_id = inbound.id.clone();
    let (reply_to, receiver) = oneshot::channel();
    let submitted = state
        .channel
        .send(SubmitHttpInbound {
            inbound,
            reply_to,
            listener: None,
            only_answer: false,
        })
        .await;
    let reported_id = match submitted {
        Ok(Ok(Submitted::Accepted)) => inbox_id.clone(),
        Ok(Ok(Submitted::AnsweredQuestion { inbox_id: asking })) => asking,
        Ok(Ok(Submitted::Duplicate(record))) => {
            return refused(match record.status {
                InboxStatus::Accepted => wait_again(state, *record).await,
                _ => HttpResponse::Ok().json(record_json(&record)),
            });
        }
        Ok(Err(HttpSubmitError::Queue(SubmitError::Busy { .. }))) => {
            return refused(
                HttpResponse::ServiceUnavailable()
                    .insert_header(("Retry-After", "5"))
                    .json(json!({"error": "busy, try again in a few seconds"})),
            );
        }
        Ok(Err(HttpSubmitError::Queue(error))) => {
            tracing::error!(%error, "inbound message not stored");
            return refused(
                HttpResponse::ServiceUnavailable()
                    .json(json!({"error": "the message could not be stored, try again"})),
            );
        }
        Ok(Err(HttpSubmitError::QueueStopped)) | Err(_) => {
            return refused(
                HttpResponse::ServiceUnavailable()
                    .json(json!({"error": "hearth is shutting down"})),
            );
        }
    };
    Submission {
        response: wait_for_reply(state, inbox_id, reported_id, receiver).await,
        stored: true,
    }
}

/// A message sent again while its first turn runs (here or on another worker): waits for
/// that turn's reply like the first call, up to `http.reply_timeout_seconds`.
async fn wait_again(state: &HttpState, record: InboxRecord) -> HttpResponse {
    let inbox_id = record.inbound.id.clone();
    let (reply_to, receiver) = oneshot::channel();
    if state
        .channel
        .send(AwaitReply {
            inbox_id: inbox_id.clone(),
            reply_to,
        })
        .await
        .is_err()
    {
        return HttpResponse::Accepted().json(record_json(&record));
    }
    // Answered between the queue's reading and the wait: no reply is coming any more.
    match state.inbox.get(&inbox_id).await {
        Ok(Some(now)) if now.status != InboxStatus::Accepted => {
            state.channel.do_send(ForgetReply {
                inbox_id: inbox_id.clone(),
            });
            drop(receiver);
            return HttpResponse::Ok().json(record_json(&now));
        }
        _ => {}
    }
    wait_for_reply(state, inbox_id.clone(), inbox_id, receiver).await
}

/// The turn's reply as the HTTP answer, or `202` with the message id once
/// `http.reply_timeout_seconds` have passed (the reply is then read by id).
/// `waiter_id` is what the channel knows the waiter by; `inbox_id` is the stored
/// message whose turn answers (they differ for an answer to a question).
async fn wait_for_reply(
    state: &HttpState,
    waiter_id: String,
    inbox_id: String,
    receiver: impl std::future::Future<Output = Result<DeliverReply, oneshot::error::RecvError>>,
) -> HttpResponse {
    match tokio::time::timeout(state.reply_timeout, receiver).await {
        Ok(Ok(reply)) => match reply.kind {
            ReplyKind::Answer => HttpResponse::Ok().json(json!({
                "id": inbox_id, "status": "answered", "reply": reply.text
            })),
            ReplyKind::Delayed => HttpResponse::Accepted().json(json!({
                "id": inbox_id, "status": "accepted", "notice": reply.text
            })),
            ReplyKind::Failed => HttpResponse::Ok().json(json!({
                "id": inbox_id, "status": "failed", "reply": reply.text
            })),
            ReplyKind::AskConfirmation {
                confirmation_id,
                expires_at_ms,
            } => HttpResponse::Ok().json(json!({
                "id": inbox_id,
                "status": "confirmation_required",
                "confirmation": {
                    "id": confirmation_id,
                    "prompt": reply.text,
                    "expires_at_ms": expires_at_ms,
                },
            })),
            ReplyKind::Question => HttpResponse::Ok().json(json!({
                "id": inbox_id, "status": "question", "question": reply.text
            })),
            // Only sent to channels, never to a waiting call; answered like a delay.
            ReplyKind::ConfirmationExpired { .. } | ReplyKind::Progress => HttpResponse::Accepted()
                .json(json!({
                    "id": inbox_id, "status": "accepted", "notice": reply.text
                })),
        },
        _ => {
            state.channel.do_send(ForgetReply {
                inbox_id: waiter_id,
            });
            HttpResponse::Accepted().json(json!({"id": inbox_id, "status": "accepted"}))
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {
    confirmation_id: String,
    user_id: Option<String>,
    approve: bool,
}

/// `POST /inbound/confirm {confirmation_id, user_id?, approve}` with the member's own token:
/// answer one of their confirmations, asked on any channel, and get the resumed turn's next
/// reply, like `POST /inbound` (for one asked over HTTP; else it goes where it was asked).
/// A parent answering a child's escalated request gets `{confirmation_id, status:
/// "approved" | "declined", asked_by, notice}` at once instead: the outcome goes to the
/// child's conversation. The shared inbound key answers nothing (`403`).
pub async fn post_confirm(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Json<ConfirmBody>,
) -> HttpResponse {
    let caller = match inbound_caller(
        state.keys.as_ref(),
        &state.identity,
        &state.family,
        &request,
    )
    .await
    {
        Ok(InboundCaller::SharedKey) => {
            return HttpResponse::Forbidden().json(json!({
                "error": "the shared inbound key answers no confirmation: a member answers with \
                          their own token (hearth token create --user NAME), on the web page, \
                          or where they were asked"
            }));
        }
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let body = body.into_inner();
    let user_id = match caller.member_named(body.user_id.as_deref()) {
        Ok(Some(user_id)) => user_id,
        Ok(None) => return bad_request("field `user_id` is missing".into()),
        Err(refused) => return refused,
    };
    let Some(member_id) = state
        .family
        .by_id(HTTP_CHANNEL, &user_id)
        .map(|member| member.id.clone())
    else {
        return HttpResponse::NoContent().finish();
    };
    // A member's own token proves the member: their confirmations are answered from
    // anywhere. Without auth, only those asked over HTTP.
    let place = match caller {
        InboundCaller::Member(_) => AnswerPlace::OwnCredential,
        _ => AnswerPlace::Channel(HTTP_CHANNEL.into()),
    };
    let refused = |status: actix_web::http::StatusCode, refusal: AnswerRefused| {
        HttpResponse::build(status).json(json!({"error": refusal.to_string()}))
    };
    // No confirmation has an id of another form: as if it did not exist.
    let Ok(confirmation_id) = body.confirmation_id.parse::<ConfirmationId>() else {
        return refused(
            actix_web::http::StatusCode::NOT_FOUND,
            AnswerRefused::Unknown,
        );
    };
    let (reply_to, receiver) = oneshot::channel();
    let answered = state
        .queue
        .send(AnswerConfirmation {
            confirmation_id,
            member_id: member_id.clone(),
            place,
            approve: body.approve,
            reply_to: Some(reply_to),
        })
        .await;
    let answered = match answered {
        Ok(Ok(answered)) => answered,
        Ok(Err(AnswerError::Refused(refusal))) => {
            use actix_web::http::StatusCode;
            return match refusal {
                AnswerRefused::Unknown => refused(StatusCode::NOT_FOUND, refusal),
                AnswerRefused::NotYours => refused(StatusCode::FORBIDDEN, refusal),
                AnswerRefused::AlreadyAnswered | AnswerRefused::InProgress => {
                    refused(StatusCode::CONFLICT, refusal)
                }
                AnswerRefused::Expired => refused(StatusCode::GONE, refusal),
            };
        }
        Ok(Err(AnswerError::Storage(error))) => {
            tracing::error!(%error, "confirmation answer not stored");
            return HttpResponse::ServiceUnavailable()
                .json(json!({"error": "the answer could not be stored, try again"}));
        }
        Err(_) => {
            return HttpResponse::ServiceUnavailable()
                .json(json!({"error": "hearth is shutting down"}));
        }
    };
    if answered.asked_by != member_id {
        // A parent answered a child's escalated request: the outcome goes to the child's
        // conversation, where the request came from; this call hears only that it counted.
        let status = if body.approve { "approved" } else { "declined" };
        return HttpResponse::Ok().json(json!({
            "confirmation_id": body.confirmation_id,
            "status": status,
            "asked_by": answered.asked_by,
            "notice": format!(
                "Your answer is taken: {status}. {} hears the outcome where they asked.",
                answered.asked_by
            ),
        }));
    }
    // Among workers, the conversation may be held by another, which resumes the turn:
    // the queue here then drops the waiter it was given, and the turn's reply is read back
    // once that worker stored its end, as for a message sent again.
    let channel = state.channel.clone();
    let waited_for = answered.inbox_id.clone();
    let reply = async move {
        match receiver.await {
            Ok(reply) => Ok(reply),
            Err(_) => {
                let (reply_to, receiver) = oneshot::channel();
                let inbox_id = waited_for;
                if channel
                    .send(AwaitReply { inbox_id, reply_to })
                    .await
                    .is_err()
                {
                    tracing::debug!(
                        "http channel stopped while a confirmation's reply was awaited"
                    );
                }
                receiver.await
            }
        }
    };
    wait_for_reply(&state, answered.inbox_id.clone(), answered.inbox_id, reply).await
}

#[derive(Debug, Deserialize)]
pub struct GetInboundQuery {
    /// Whose message it is: only a member's own messages are found.
    user_id: Option<String>,
}

/// `GET /inbound/{id}?user_id=<member>`: the status and reply of one of that member's
/// messages sent over HTTP; any other message is not found.
pub async fn get_inbound(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    query: web::Query<GetInboundQuery>,
) -> HttpResponse {
    let caller = match inbound_caller(
        state.keys.as_ref(),
        &state.identity,
        &state.family,
        &request,
    )
    .await
    {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let named = query.into_inner().user_id.filter(|id| !id.is_empty());
    let member_id = match caller.member_named(named.as_deref()) {
        Ok(member_id) => member_id,
        Err(refused) => return refused,
    };
    let Some(member_id) = member_id else {
        return bad_request(
            "query parameter `user_id` is missing: a message is read by the member who sent it \
             (GET /inbound/{id}?user_id=<member>)"
                .into(),
        );
    };
    match state.inbox.get(&path).await {
        // Only the member's own messages that came in over HTTP are readable here.
        Ok(Some(record))
            if record.inbound.conversation.channel() == HTTP_CHANNEL
                && record.inbound.member_id.as_str() == member_id =>
        {
            let mut body = record_json(&record);
            // A turn that waits for the member says what it asks (its question may have come
            // after the POST stopped waiting), so it can be answered.
            if record.status == InboxStatus::Suspended {
                match state.pending.waiting_for(&record.inbound.id).await {
                    Ok(Some(waiting)) => {
                        body["confirmation"] = json!({
                            "id": waiting.id,
                            "prompt": waiting.prompt,
                            "expires_at_ms": waiting.expires_at_ms,
                        });
                    }
                    Ok(None) => {}
                    Err(error) => tracing::warn!(%error, "the message's confirmation not read"),
                }
            }
            HttpResponse::Ok().json(body)
        }
        Ok(_) => HttpResponse::NotFound()
            .json(json!({"error": format!("no message with id {:?}", path.as_str())})),
        Err(error) => {
            tracing::error!(%error, "inbox read failed");
            HttpResponse::ServiceUnavailable().json(json!({"error": "storage unavailable"}))
        }
    }
}
