//! The scripted LLM server's streamed answers: a request with `"stream": true` on the
//! OpenAI wire gets real server-sent `chat.completion.chunk`s (text cut at spaces, tool
//! calls' arguments cut in two, usage last when asked, then `[DONE]`), each after
//! `pause`, so a test sees the text arrive piece by piece.

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Bytes;
use serde_json::{Value, json};

/// One chunk's JSON around `delta`, with `finish` as its finish reason.
fn chunk(id: u64, model: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// The chunks of a text answer.
pub fn text_chunks(id: u64, model: &str, text: &str) -> Vec<Value> {
    let mut chunks = vec![chunk(
        id,
        model,
        json!({"role": "assistant", "content": ""}),
        None,
    )];
    for piece in text.split_inclusive(' ') {
        chunks.push(chunk(id, model, json!({"content": piece}), None));
    }
    chunks.push(chunk(id, model, json!({}), Some("stop")));
    chunks
}

/// The chunks of a tool-calls answer: each call's id and name first, its arguments in two.
pub fn tool_call_chunks(id: u64, model: &str, calls: &[(String, Value)]) -> Vec<Value> {
    let mut chunks = vec![chunk(
        id,
        model,
        json!({"role": "assistant", "content": null}),
        None,
    )];
    for (index, (name, arguments)) in calls.iter().enumerate() {
        let arguments = arguments.to_string();
        let half = arguments
            .char_indices()
            .nth(arguments.chars().count() / 2)
            .map_or(0, |(at, _)| at);
        chunks.push(chunk(
            id,
            model,
            json!({"tool_calls": [{"index": index, "id": format!("call_{id}_{index}"),
                "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        for part in [&arguments[..half], &arguments[half..]] {
            chunks.push(chunk(
                id,
                model,
                json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                None,
            ));
        }
    }
    chunks.push(chunk(id, model, json!({}), Some("tool_calls")));
    chunks
}

/// `chunks` as an event stream, `usage` last when given, each event after `pause`.
pub fn respond(chunks: Vec<Value>, usage: Option<Value>, pause: Duration) -> HttpResponse {
    let mut events: Vec<String> = chunks
        .into_iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    if let Some(usage) = usage {
        events.push(format!(
            "data: {}\n\n",
            json!({"choices": [], "usage": usage})
        ));
    }
    events.push("data: [DONE]\n\n".to_owned());
    let body = futures::stream::unfold(events.into_iter(), move |mut events| async move {
        let event = events.next()?;
        if !pause.is_zero() {
            actix_web::rt::time::sleep(pause).await;
        }
        Some((Ok::<_, actix_web::Error>(Bytes::from(event)), events))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}
