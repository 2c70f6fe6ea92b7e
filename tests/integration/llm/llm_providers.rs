//! The OpenAI and Anthropic providers against the scripted LLM server, each over its own wire
//! format and real HTTP: replies, usage, tool-call round trips, JSON-schema output, auth headers,
//! error mapping, time-outs and refused connections, images; plus the fake's own concurrency
//! counting.

use std::time::{Duration, Instant};

use hearth::llm::{
    ChatMessage, ChatRequest, IMAGES_NOT_SHOWN, ImageContent, LlmError, LlmProvider,
    ResponseFormat, ToolCall, ToolSpec,
};
use serde_json::{Value, json};

use crate::support::llm_server::*;
use crate::support::providers::{TIMEOUT, anthropic, anthropic_at, ask, openai, openai_at};

/// A question with a photo; "Man" is "TWFu" in base64, so the expected data is known by hand.
fn ask_with_photo() -> ChatRequest {
    let mut request = ask("what is this?");
    request.messages[1]
        .images
        .push(ImageContent::from_bytes("image/png", b"Man"));
    request
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".to_string(),
        description: "Weather for a city.".to_string(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }
}

fn verdict_format() -> ResponseFormat {
    ResponseFormat {
        name: "verdict".to_string(),
        schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
    }
}

/// The question, the assistant's tool call and its result: the second leg of a tool loop.
fn follow_up(first: &ChatRequest, call: &ToolCall) -> ChatRequest {
    let mut assistant = ChatMessage::assistant("");
    assistant.tool_calls.push(call.clone());
    let mut request = first.clone();
    request.messages.push(assistant);
    request
        .messages
        .push(ChatMessage::tool_result(&call.id, "sunny, 21C"));
    request
}

fn last_body(server: &ScriptedLlmServer) -> Value {
    server
        .requests()
        .last()
        .expect("a recorded request")
        .body
        .clone()
}

async fn error_for(provider: &dyn LlmProvider, server: &ScriptedLlmServer, step: Step) -> LlmError {
    server.push(step);
    provider
        .chat(&ask("hi"))
        .await
        .expect_err("the scripted error")
}

/// 429 with Retry-After, a transient 5xx and a permanent 400, for either wire.
async fn assert_error_mapping(
    provider: &dyn LlmProvider,
    server: &ScriptedLlmServer,
    server_error: u16,
) {
    let limited = Step::Error {
        status: 429,
        retry_after: Some(7),
        body: "slow down".to_string(),
    };
    let error = error_for(provider, server, limited).await;
    match &error {
        LlmError::Status {
            status: 429,
            retry_after: Some(after),
            body,
        } => {
            assert_eq!(*after, Duration::from_secs(7));
            assert!(body.contains("slow down"), "body: {body}");
        }
        other => panic!("expected a 429 status error, got {other:?}"),
    }
    assert!(error.is_transient());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));

    let broken = Step::Error {
        status: server_error,
        retry_after: None,
        body: "boom".to_string(),
    };
    let error = error_for(provider, server, broken).await;
    assert!(
        matches!(error, LlmError::Status { status, retry_after: None, .. } if status == server_error),
        "{error:?}"
    );
    assert!(error.is_transient());

    let bad = Step::Error {
        status: 400,
        retry_after: None,
        body: "bad request".to_string(),
    };
    let error = error_for(provider, server, bad).await;
    assert!(
        matches!(error, LlmError::Status { status: 400, .. }),
        "{error:?}"
    );
    assert!(!error.is_transient());
}

async fn assert_times_out(provider: &dyn LlmProvider, server: &ScriptedLlmServer) {
    server.push(Step::Delay(
        Duration::from_secs(2),
        Box::new(Step::Reply("too late".to_string())),
    ));
    let started = Instant::now();
    let error = provider.chat(&ask("hi")).await.expect_err("a time-out");
    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");
    assert!(error.is_transient());
    assert!(started.elapsed() < Duration::from_millis(1500));
}

/// A loopback port nobody listens on.
fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn openai_plain_reply_with_usage() {
    let server = ScriptedLlmServer::start();
    server.push(Step::Reply("hello there friend".to_string()));
    let response = openai(&server).chat(&ask("hi")).await.unwrap();

    assert_eq!(response.content, "hello there friend");
    assert!(response.tool_calls.is_empty());
    // The fake counts words: "be kind" + "hi" in, the reply out.
    assert_eq!(response.usage.input_tokens, 3);
    assert_eq!(response.usage.output_tokens, 3);
    assert_eq!(response.model, "gpt-test");

    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.body["model"], "gpt-test");
    assert_eq!(
        recorded.body["messages"],
        json!([{"role": "system", "content": "be kind"}, {"role": "user", "content": "hi"}])
    );
    assert!(recorded.body.get("tools").is_none());
    assert!(recorded.body.get("response_format").is_none());
}

#[tokio::test]
async fn openai_echoes_when_unscripted() {
    let server = ScriptedLlmServer::start();
    let response = openai(&server).chat(&ask("what's up")).await.unwrap();
    assert_eq!(response.content, "echo: what's up");
}

#[tokio::test]
async fn openai_tool_call_round_trip() {
    let server = ScriptedLlmServer::start();
    let provider = openai(&server);
    let mut first = ask("weather in Oslo?");
    first.tools.push(weather_tool());
    server.push(Step::ToolCalls(vec![(
        "get_weather".to_string(),
        json!({"city": "Oslo"}),
    )]));

    let response = provider.chat(&first).await.unwrap();
    assert_eq!(response.content, "");
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, json!({"city": "Oslo"}));
    assert!(!call.id.is_empty());
    assert_eq!(
        last_body(&server)["tools"],
        json!([{"type": "function", "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": weather_tool().parameters,
        }}])
    );

    server.push(Step::Reply("Sunny in Oslo.".to_string()));
    let answer = provider.chat(&follow_up(&first, call)).await.unwrap();
    assert_eq!(answer.content, "Sunny in Oslo.");
    let messages = last_body(&server)["messages"].clone();
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": call.id,
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
        }]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "sunny, 21C", "tool_call_id": call.id})
    );
}

#[tokio::test]
async fn openai_json_schema_response_format() {
    let server = ScriptedLlmServer::start();
    server.push(Step::Reply("{\"ok\":true}".to_string()));
    let mut request = ask("is it fine?");
    request.response_format = Some(verdict_format());
    request.max_tokens = Some(50);
    request.temperature = Some(0.25);

    let response = openai(&server).chat(&request).await.unwrap();
    assert_eq!(response.content, "{\"ok\":true}");
    let body = last_body(&server);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "verdict", "schema": verdict_format().schema, "strict": true,
        }})
    );
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["temperature"], 0.25);
}

#[tokio::test]
async fn openai_auth_header_only_with_a_key() {
    let server = ScriptedLlmServer::start();
    openai(&server).chat(&ask("hi")).await.unwrap();
    openai_at(server.base_url(), None, TIMEOUT)
        .chat(&ask("hi"))
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[1].header("authorization"), None);
}

#[tokio::test]
async fn openai_maps_http_errors() {
    let server = ScriptedLlmServer::start();
    assert_error_mapping(&openai(&server), &server, 500).await;
}

#[tokio::test]
async fn openai_times_out_per_call() {
    let server = ScriptedLlmServer::start();
    let provider = openai_at(server.base_url(), None, Duration::from_millis(200));
    assert_times_out(&provider, &server).await;
}

#[tokio::test]
async fn openai_connection_refused_is_connect() {
    let provider = openai_at(
        format!("http://127.0.0.1:{}/v1", refused_port()),
        None,
        TIMEOUT,
    );
    let error = provider.chat(&ask("hi")).await.expect_err("refused");
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
    assert!(error.is_transient());
}

#[tokio::test]
async fn anthropic_plain_reply_with_usage_and_headers() {
    let server = ScriptedLlmServer::start();
    server.push(Step::Reply("hello there friend".to_string()));
    let response = anthropic(&server).chat(&ask("hi")).await.unwrap();

    assert_eq!(response.content, "hello there friend");
    assert_eq!(response.usage.input_tokens, 3);
    assert_eq!(response.usage.output_tokens, 3);
    assert_eq!(response.model, "claude-test");

    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.header("x-api-key"), Some("ak-test"));
    assert_eq!(recorded.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(recorded.header("authorization"), None);
    assert_eq!(recorded.body["system"], "be kind");
    assert_eq!(recorded.body["max_tokens"], 1024);
    assert_eq!(
        recorded.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    );
}

#[tokio::test]
async fn anthropic_without_key_sends_no_key_header() {
    let server = ScriptedLlmServer::start();
    anthropic_at(server.anthropic_base_url(), None, TIMEOUT)
        .chat(&ask("hi"))
        .await
        .unwrap();
    assert_eq!(server.requests()[0].header("x-api-key"), None);
}

#[tokio::test]
async fn anthropic_tool_call_round_trip() {
    let server = ScriptedLlmServer::start();
    let provider = anthropic(&server);
    let mut first = ask("weather in Oslo?");
    first.tools.push(weather_tool());
    server.push(Step::ToolCalls(vec![(
        "get_weather".to_string(),
        json!({"city": "Oslo"}),
    )]));

    let response = provider.chat(&first).await.unwrap();
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, json!({"city": "Oslo"}));
    assert_eq!(
        last_body(&server)["tools"],
        json!([{
            "name": "get_weather",
            "description": "Weather for a city.",
            "input_schema": weather_tool().parameters,
        }])
    );

    // The follow-up has the tool result then a new user line: both go in one user turn.
    server.push(Step::Reply("Sunny in Oslo.".to_string()));
    let mut second = follow_up(&first, call);
    second.messages.push(ChatMessage::user("and tomorrow?"));
    let answer = provider.chat(&second).await.unwrap();
    assert_eq!(answer.content, "Sunny in Oslo.");
    assert_eq!(
        last_body(&server)["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "weather in Oslo?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": call.id, "name": "get_weather", "input": {"city": "Oslo"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 21C"},
                {"type": "text", "text": "and tomorrow?"},
            ]},
        ])
    );
}

#[tokio::test]
async fn anthropic_json_schema_forces_a_tool() {
    let server = ScriptedLlmServer::start();
    let provider = anthropic(&server);
    let mut request = ask("is it fine?");
    request.response_format = Some(verdict_format());

    // The fake answers a forced tool_choice with a tool_use block, as Anthropic does.
    server.push(Step::Reply("{\"ok\":true}".to_string()));
    let response = provider.chat(&request).await.unwrap();
    assert_eq!(response.content, "{\"ok\":true}");
    assert!(response.tool_calls.is_empty());
    let body = last_body(&server);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "verdict"})
    );
    assert_eq!(body["tools"][0]["name"], "verdict");
    assert_eq!(body["tools"][0]["input_schema"], verdict_format().schema);

    // An explicit tool_use of the format's tool is the answer too, never a call to run.
    server.push(Step::ToolCalls(vec![(
        "verdict".to_string(),
        json!({"ok": false}),
    )]));
    let response = provider.chat(&request).await.unwrap();
    assert_eq!(response.content, "{\"ok\":false}");
    assert!(response.tool_calls.is_empty());
}

#[tokio::test]
async fn anthropic_maps_http_errors() {
    let server = ScriptedLlmServer::start();
    // 529 is Anthropic's "overloaded".
    assert_error_mapping(&anthropic(&server), &server, 529).await;
}

#[tokio::test]
async fn anthropic_times_out_per_call() {
    let server = ScriptedLlmServer::start();
    let provider = anthropic_at(
        server.anthropic_base_url(),
        None,
        Duration::from_millis(200),
    );
    assert_times_out(&provider, &server).await;
}

#[tokio::test]
async fn anthropic_connection_refused_is_connect() {
    let provider = anthropic_at(
        format!("http://127.0.0.1:{}", refused_port()),
        None,
        TIMEOUT,
    );
    let error = provider.chat(&ask("hi")).await.expect_err("refused");
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
}

#[tokio::test]
async fn openai_sends_images_as_content_parts_and_plain_text_otherwise() {
    let server = ScriptedLlmServer::start();
    let provider = openai(&server);
    server.push(Step::Reply("A cat.".to_string()));
    let response = provider.chat(&ask_with_photo()).await.unwrap();
    assert_eq!(response.content, "A cat.");
    assert_eq!(
        last_body(&server)["messages"],
        json!([
            {"role": "system", "content": "be kind"},
            {"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,TWFu"}},
            ]},
        ])
    );

    provider.chat(&ask("and now?")).await.unwrap();
    assert_eq!(
        last_body(&server)["messages"][1],
        json!({"role": "user", "content": "and now?"})
    );
}

#[tokio::test]
async fn anthropic_sends_images_as_base64_blocks_and_plain_text_otherwise() {
    let server = ScriptedLlmServer::start();
    let provider = anthropic(&server);
    server.push(Step::Reply("A cat.".to_string()));
    let response = provider.chat(&ask_with_photo()).await.unwrap();
    assert_eq!(response.content, "A cat.");
    assert_eq!(
        last_body(&server)["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "TWFu"}},
        ]}])
    );

    // What the broker sends a model that cannot see: the text and a note, no image block.
    provider
        .chat(&ask_with_photo().without_images())
        .await
        .unwrap();
    assert_eq!(
        last_body(&server)["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": format!("what is this?\n{IMAGES_NOT_SHOWN}")},
        ]}])
    );
}

#[tokio::test]
async fn fake_counts_max_concurrent_requests() {
    let server = ScriptedLlmServer::start();
    server.set_default(Step::Delay(
        Duration::from_millis(300),
        Box::new(Step::Echo),
    ));
    let provider = openai(&server);
    let questions: Vec<String> = (0..6).map(|n| format!("question {n}")).collect();
    let requests: Vec<ChatRequest> = questions.iter().map(|q| ask(q)).collect();

    let answers = futures::future::join_all(requests.iter().map(|r| provider.chat(r))).await;
    for (answer, question) in answers.into_iter().zip(&questions) {
        assert_eq!(answer.unwrap().content, format!("echo: {question}"));
    }
    assert_eq!(server.max_concurrent(), 6);
    assert_eq!(server.request_count(), 6);
    assert_eq!(server.in_flight(), 0);

    server.reset_counters();
    assert_eq!(server.max_concurrent(), 0);
    assert_eq!(server.request_count(), 0);
    assert!(server.requests().is_empty());

    // One at a time never overlaps.
    server.set_default(Step::Echo);
    for request in &requests[..3] {
        provider.chat(request).await.unwrap();
    }
    assert_eq!(server.max_concurrent(), 1);
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn fake_default_error_and_hang_until_dropped() {
    let server = ScriptedLlmServer::start();
    server.set_default(Step::Error {
        status: 500,
        retry_after: None,
        body: "down".to_string(),
    });
    let error = anthropic(&server).chat(&ask("hi")).await.expect_err("500");
    assert!(
        matches!(error, LlmError::Status { status: 500, .. }),
        "{error:?}"
    );

    server.push(Step::Hang);
    let provider = openai(&server);
    let waiting = tokio::spawn(async move { provider.chat(&ask("anyone?")).await });
    while server.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "a hanging step must not answer");

    let started = Instant::now();
    drop(server);
    let outcome = tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .expect("the hanging call ends once the server is dropped")
        .unwrap();
    assert!(outcome.is_err(), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}
