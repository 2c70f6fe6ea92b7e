//! Streamed answers from both providers against the scripted LLM server, over real HTTP
//! and server-sent events: the text is heard in pieces, and the answer is the same
//! `ChatResponse` the same step gives whole (text, tool calls, usage), errors included.

use std::time::Duration;

use hearth::llm::{LlmError, LlmProvider, ResponseFormat, StreamEvent, TextListener};
use serde_json::json;

use crate::support::llm_server::*;
use crate::support::providers::{anthropic, ask, openai};

/// Every text piece heard so far (a restart would be a failure here).
fn pieces(heard: &mut tokio::sync::mpsc::Receiver<StreamEvent>) -> Vec<String> {
    let mut pieces = Vec::new();
    while let Ok(event) = heard.try_recv() {
        match event {
            StreamEvent::Text(piece) => pieces.push(piece),
            StreamEvent::Restart => panic!("a provider never restarts on its own"),
        }
    }
    pieces
}

#[actix::test]
async fn openai_streams_text_and_tool_calls_into_the_same_answer_as_a_whole_one() {
    let server = ScriptedLlmServer::start();
    server.set_stream_pause(Duration::from_millis(20));
    let provider = openai(&server);
    let calls = vec![
        (
            "add_note".to_string(),
            json!({"title": "milk", "body": "two litres"}),
        ),
        ("list_notes".to_string(), json!({})),
    ];
    // The same steps answered whole and streamed give the same answer.
    server.push_many([
        Step::Reply("Hello there, dear family".into()),
        Step::Reply("Hello there, dear family".into()),
        Step::ToolCalls(calls.clone()),
        Step::ToolCalls(calls),
    ]);
    let whole = provider.chat(&ask("hi")).await.unwrap();
    let (listener, mut heard) = TextListener::channel(64);
    let streamed = provider
        .chat_streaming(&ask("hi"), &listener)
        .await
        .unwrap();
    assert_eq!(streamed.content, whole.content);
    assert_eq!(streamed.usage, whole.usage);
    assert!(streamed.usage.output_tokens > 0);
    let mut pieces = Vec::new();
    while let Ok(StreamEvent::Text(piece)) = heard.try_recv() {
        pieces.push(piece);
    }
    assert!(pieces.len() >= 4, "heard in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), "Hello there, dear family");

    let whole = provider.chat(&ask("note it")).await.unwrap();
    let streamed = provider
        .chat_streaming(&ask("note it"), &listener)
        .await
        .unwrap();
    assert_eq!(streamed.tool_calls.len(), 2);
    assert_eq!(
        streamed.tool_calls[0].arguments,
        whole.tool_calls[0].arguments
    );
    assert_eq!(streamed.tool_calls[1].name, "list_notes");
    assert!(heard.try_recv().is_err(), "tool calls say no text");

    let requests = server.requests();
    assert_eq!(requests[0].body.get("stream"), None);
    assert_eq!(requests[1].body["stream"], true);
    assert_eq!(requests[1].body["stream_options"]["include_usage"], true);
    assert_eq!(requests[1].header("accept"), Some("text/event-stream"));

    // An error before the stream starts is the same error as without streaming.
    server.push(Step::Error {
        status: 429,
        retry_after: Some(3),
        body: "slow down".into(),
    });
    let error = provider
        .chat_streaming(&ask("again"), &listener)
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
}

#[actix::test]
async fn anthropic_streams_text_and_tool_calls_into_the_same_answer_as_a_whole_one() {
    let server = ScriptedLlmServer::start();
    server.set_stream_pause(Duration::from_millis(10));
    let provider = anthropic(&server);
    let calls = vec![
        (
            "add_note".to_string(),
            json!({"title": "milk", "body": "two litres"}),
        ),
        ("list_notes".to_string(), json!({})),
    ];
    server.push_many([
        Step::Reply("Hello there, dear family".into()),
        Step::Reply("Hello there, dear family".into()),
        Step::ToolCalls(calls.clone()),
        Step::ToolCalls(calls),
        Step::Reply("{\"ok\": true}".into()),
        Step::Reply("{\"ok\": true}".into()),
    ]);
    let (listener, mut heard) = TextListener::channel(64);

    let whole = provider.chat(&ask("hi")).await.unwrap();
    let streamed = provider
        .chat_streaming(&ask("hi"), &listener)
        .await
        .unwrap();
    assert_eq!(streamed, whole);
    assert!(streamed.usage.input_tokens > 0 && streamed.usage.output_tokens > 0);
    let heard_text = pieces(&mut heard);
    assert!(heard_text.len() >= 4, "heard in pieces: {heard_text:?}");
    assert_eq!(heard_text.concat(), "Hello there, dear family");

    let whole = provider.chat(&ask("note it")).await.unwrap();
    let streamed = provider
        .chat_streaming(&ask("note it"), &listener)
        .await
        .unwrap();
    // Each answer of the server has its own ids; all else is the same.
    let without_ids = |answer: &hearth::llm::ChatResponse| {
        let mut answer = answer.clone();
        for call in &mut answer.tool_calls {
            assert!(call.id.starts_with("toolu_"), "{call:?}");
            call.id.clear();
        }
        answer
    };
    assert_eq!(without_ids(&streamed), without_ids(&whole));
    assert_ne!(streamed.tool_calls[0].id, streamed.tool_calls[1].id);
    assert_eq!(streamed.tool_calls.len(), 2);
    assert_eq!(
        streamed.tool_calls[0].arguments,
        json!({"title": "milk", "body": "two litres"})
    );
    assert_eq!(streamed.tool_calls[1].arguments, json!({}));
    assert!(pieces(&mut heard).is_empty(), "tool calls say no text");

    // A forced tool (structured output) streamed is the same structured answer.
    let mut structured = ask("judge");
    structured.response_format = Some(ResponseFormat {
        name: "verdict".into(),
        schema: json!({"type": "object"}),
    });
    let whole = provider.chat(&structured).await.unwrap();
    let streamed = provider
        .chat_streaming(&structured, &listener)
        .await
        .unwrap();
    assert_eq!(streamed, whole);
    assert_eq!(streamed.content, "{\"ok\":true}");

    let requests = server.requests();
    assert_eq!(requests[0].body.get("stream"), None);
    assert_eq!(requests[1].body["stream"], true);
    assert_eq!(requests[1].header("accept"), Some("text/event-stream"));
    assert_eq!(requests[1].header("x-api-key"), Some("ak-test"));
    assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));

    // Refused before the stream starts: the same error as a whole call's.
    server.push(Step::Error {
        status: 529,
        retry_after: Some(2),
        body: "overloaded".into(),
    });
    let error = provider
        .chat_streaming(&ask("again"), &listener)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, LlmError::Status { status: 529, body, .. } if body.contains("overloaded")),
        "{error:?}"
    );
    assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));

    // Cut mid-answer: the text so far was heard, the call fails as a dropped connection.
    server.push(Step::BrokenStream("one two three four five six".into()));
    let error = provider
        .chat_streaming(&ask("again"), &listener)
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
    assert!(error.is_transient());
    let partial = pieces(&mut heard).concat();
    assert!(
        !partial.is_empty() && partial.len() < "one two three four five six".len(),
        "heard {partial:?}"
    );
}
