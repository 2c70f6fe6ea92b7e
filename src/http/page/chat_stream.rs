//! The web chat's streamed answer to one message (`POST /chat` or `POST /chat/answer`
//! with `Accept: text/event-stream`): `accepted` with the message's id, then `delta`
//! events with the reply's text as the model writes it (`restart` when a retry starts
//! it over), then one `done` saying how the turn stands (answered, failed, waits for a
//! confirmation, asks a question, or still working). The script then reads the log once.
//!
//! The streamed text is only a preview: the reply that counts is the one stored with the
//! turn's history, which the log shows. A browser gone mid-stream drops the receiving end,
//! and the turn goes on unaware.

use std::time::Duration;

use actix::Addr;
use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use futures::stream;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::actors::channels::{ForgetReply, HttpChannel};
use crate::actors::request_queue::{DeliverReply, ReplyKind};
use crate::llm::{StreamEvent, TextListener};

/// Pieces of text a browser may fall behind by before some are left out of its preview.
const STREAM_BUFFER: usize = 256;

/// Whether the caller asked for the streamed answer.
pub(super) fn wants_stream(request: &HttpRequest) -> bool {
    request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.starts_with("text/event-stream"))
}

/// A listener for one message's turn, and what it hears.
pub(super) fn listener() -> (TextListener, mpsc::Receiver<StreamEvent>) {
    TextListener::channel(STREAM_BUFFER)
}

/// How a turn stands after the reply it sent, as the script names it.
pub(super) fn done_kind(kind: &ReplyKind) -> &'static str {
    match kind {
        ReplyKind::Answer => "answered",
        ReplyKind::Failed => "failed",
        ReplyKind::AskConfirmation { .. } => "confirmation",
        ReplyKind::Question => "question",
        ReplyKind::Delayed => "delayed",
        ReplyKind::Progress | ReplyKind::ConfirmationExpired { .. } => "working",
    }
}

/// What the stream is waiting for.
struct Following {
    message: String,
    /// The inbox id the reply comes for (the answer's own, for an answered question).
    waiter: String,
    events: Option<mpsc::Receiver<StreamEvent>>,
    reply: Option<oneshot::Receiver<DeliverReply>>,
    deadline: Instant,
    channel: Addr<HttpChannel>,
    accepted_sent: bool,
}

fn event(name: &str, data: &serde_json::Value) -> Bytes {
    // JSON has no raw newline, so one `data:` line holds it whole.
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn heard(event_heard: StreamEvent) -> Bytes {
    match event_heard {
        StreamEvent::Text(text) => event("delta", &json!({ "text": text })),
        StreamEvent::Restart => event("restart", &json!({})),
    }
}

impl Following {
    async fn next(&mut self) -> Option<Bytes> {
        if !self.accepted_sent {
            self.accepted_sent = true;
            return Some(event("accepted", &json!({ "id": self.message })));
        }
        loop {
            let reply = self.reply.as_mut()?;
            let listening = self.events.is_some();
            let events = self.events.as_mut();
            let woke = tokio::select! {
                biased;
                heard_event = async { events?.recv().await }, if listening => Woke::Heard(heard_event),
                answer = reply => Woke::Reply(answer.ok()),
                () = tokio::time::sleep_until(self.deadline) => Woke::Late,
            };
            match woke {
                Woke::Heard(Some(heard_event)) => return Some(heard(heard_event)),
                Woke::Heard(None) => self.events = None,
                Woke::Reply(answer) => {
                    self.reply = None;
                    // What the model wrote before its turn ended goes out before `done`.
                    let mut out = Vec::new();
                    if let Some(events) = self.events.as_mut() {
                        while let Ok(heard_event) = events.try_recv() {
                            out.extend_from_slice(&heard(heard_event));
                        }
                    }
                    let kind = answer.map_or("working", |reply| done_kind(&reply.kind));
                    let done = json!({ "id": self.message, "kind": kind });
                    out.extend_from_slice(&event("done", &done));
                    return Some(Bytes::from(out));
                }
                Woke::Late => {
                    self.reply = None;
                    self.channel.do_send(ForgetReply {
                        inbox_id: self.waiter.clone(),
                    });
                    let done = json!({ "id": self.message, "kind": "working" });
                    return Some(event("done", &done));
                }
            }
        }
    }
}

enum Woke {
    Heard(Option<StreamEvent>),
    Reply(Option<DeliverReply>),
    Late,
}

/// The streamed answer for `message`, whose reply comes through `reply` (for the inbox id
/// `waiter`) within `wait`; `events` is what its turn's listener hears.
pub(super) fn respond(
    channel: Addr<HttpChannel>,
    message: String,
    waiter: String,
    events: mpsc::Receiver<StreamEvent>,
    reply: oneshot::Receiver<DeliverReply>,
    wait: Duration,
) -> HttpResponse {
    let following = Following {
        message,
        waiter,
        events: Some(events),
        reply: Some(reply),
        deadline: Instant::now() + wait,
        channel,
        accepted_sent: false,
    };
    let body = stream::unfold(following, |mut following| async move {
        let bytes = following.next().await?;
        Some((Ok::<_, actix_web::Error>(bytes), following))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}
