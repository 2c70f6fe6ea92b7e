//! The scripted LLM server's streamed answers: a request with `"stream": true` gets real
//! server-sent events, each after `pause`, so a test sees the text arrive piece by piece.
//! On the OpenAI wire: `chat.completion.chunk`s (text cut at spaces, tool calls' arguments
//! cut in two, usage last when asked, then `[DONE]`). On the Anthropic wire: the Messages
//! events (`message_start`, a `ping`, each content block's start, deltas and stop,
//! `message_delta` with the stop reason and usage, `message_stop`). A broken stream sends
//! its first half and then cuts the connection, as a server dying mid-answer does.

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

/// OpenAI `chunks` as events, `usage` last when given, then `[DONE]`.
pub fn openai_events(chunks: Vec<Value>, usage: Option<Value>) -> Vec<String> {
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
    events
}

/// One Anthropic event: its name as the SSE `event:` and as the data's `type`.
fn anthropic_event(kind: &str, mut data: Value) -> String {
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

/// The Anthropic events of an answer: `text` (cut at spaces) or `calls` (each input cut in
/// two), with the usage a whole answer reports.
pub fn anthropic_events(
    id: u64,
    model: &str,
    text: Option<&str>,
    calls: &[(String, Value)],
    (input, output): (u64, u64),
) -> Vec<String> {
    let mut events = vec![
        anthropic_event(
            "message_start",
            json!({"message": {"id": format!("msg_{id}"), "type": "message", "role": "assistant",
                "content": [], "model": model, "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": 1}}}),
        ),
        anthropic_event("ping", json!({})),
    ];
    if let Some(text) = text {
        events.push(anthropic_event(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in text.split_inclusive(' ') {
            events.push(anthropic_event(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(anthropic_event("content_block_stop", json!({"index": 0})));
    }
    for (index, (name, input)) in calls.iter().enumerate() {
        let input = input.to_string();
        let half = input
            .char_indices()
            .nth(input.chars().count() / 2)
            .map_or(0, |(at, _)| at);
        events.push(anthropic_event(
            "content_block_start",
            json!({"index": index, "content_block": {"type": "tool_use",
                "id": format!("toolu_{id}_{index}"), "name": name, "input": {}}}),
        ));
        for part in ["", &input[..half], &input[half..]] {
            events.push(anthropic_event(
                "content_block_delta",
                json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
        events.push(anthropic_event(
            "content_block_stop",
            json!({"index": index}),
        ));
    }
    let stop_reason = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    events.push(anthropic_event(
        "message_delta",
        json!({"delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output}}),
    ));
    events.push(anthropic_event("message_stop", json!({})));
    events
}

/// `events` as an event stream, each after `pause`. A `broken` stream stops after its
/// first half and then fails, so the client sees the connection cut mid-answer.
pub fn respond(mut events: Vec<String>, pause: Duration, broken: bool) -> HttpResponse {
    if broken {
        events.truncate(events.len() / 2);
    }
    let body = futures::stream::unfold(
        (events.into_iter(), broken),
        move |(mut events, broken)| async move {
            if !pause.is_zero() {
                actix_web::rt::time::sleep(pause).await;
            }
            match events.next() {
                Some(event) => Some((
                    Ok::<_, actix_web::Error>(Bytes::from(event)),
                    (events, broken),
                )),
                None if broken => Some({
                    // What was sent reaches the client before the cut, as over a real network.
                    actix_web::rt::time::sleep(Duration::from_millis(50)).await;
                    (
                        Err(actix_web::error::ErrorInternalServerError(
                            "the scripted stream breaks here",
                        )),
                        (events, false),
                    )
                }),
                None => None,
            }
        },
    );
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(body)
}
