use serde_json::json;

use super::*;
use crate::llm::streaming::SseReader;
use crate::llm::{ToolCall, Usage};

/// A streamed answer as the Messages API sends it: text in two blocks, a thinking block,
/// a tool call whose input comes in pieces, pings, and an event type nobody knows yet.
const STREAM: &str = concat!(
    "event: message_start\r\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\r\n\r\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: ping\n",
    "data: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Grüß\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\" dich\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"add_note\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"title\\\": \\\"mi\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"lk\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":\"list_notes\",\"input\":{}}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":4,\"content_block\":{\"type\":\"text\",\"text\":\"Done\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":4}\n\n",
    "event: something_new\n",
    "data: {\"type\":\"something_new\",\"detail\":1}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

/// Feeds `bytes` in pieces cut at `cuts`, and reads the answer with the text heard.
fn read(bytes: &[u8], cuts: &[usize]) -> (Result<ChatResponse, LlmError>, String) {
    let mut reader = SseReader::default();
    let mut events = AnthropicEvents::default();
    let mut heard = String::new();
    let mut start = 0;
    for end in cuts.iter().copied().chain([bytes.len()]) {
        for event in reader.push(&bytes[start..end]).unwrap() {
            match events.push(&event.data) {
                Ok(text) => heard.push_str(&text),
                Err(error) => return (Err(error), heard),
            }
        }
        start = end;
    }
    (events.finish("asked", None), heard)
}

#[test]
fn events_cut_anywhere_make_the_whole_answer() {
    let bytes = STREAM.as_bytes();
    let (whole, heard) = read(bytes, &[]);
    let whole = whole.unwrap();
    assert_eq!(whole.content, "Grüß dich\nDone");
    assert_eq!(heard, whole.content);
    assert_eq!(whole.model, "claude-x");
    assert_eq!(
        whole.usage,
        Usage {
            input_tokens: 25,
            output_tokens: 15
        }
    );
    assert_eq!(
        whole.tool_calls,
        vec![
            ToolCall {
                id: "toolu_a".into(),
                name: "add_note".into(),
                arguments: json!({"title": "milk"}),
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "list_notes".into(),
                arguments: json!({}),
            },
        ]
    );
    for cut in 1..bytes.len() {
        let (answer, heard) = read(bytes, &[cut]);
        assert_eq!(answer.unwrap(), whole, "cut at {cut}");
        assert_eq!(heard, whole.content, "cut at {cut}");
    }
}

#[test]
fn a_forced_tool_streamed_is_the_structured_answer() {
    let format = ResponseFormat {
        name: "answer".into(),
        schema: json!({"type": "object"}),
    };
    let mut events = AnthropicEvents::default();
    for data in [
        r#"{"type":"message_start","message":{"model":"c","usage":{"input_tokens":3,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"answer","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"ok\": true}"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}"#,
        r#"{"type":"message_stop"}"#,
    ] {
        assert_eq!(events.push(data).unwrap(), "", "no text is heard: {data}");
    }
    let answer = events.finish("claude", Some(&format)).unwrap();
    assert_eq!(answer.content, "{\"ok\":true}");
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.usage.output_tokens, 4);
}

#[test]
fn an_error_event_fails_the_call_as_its_http_status_would() {
    let stream = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hal\"}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let (answer, heard) = read(stream.as_bytes(), &[]);
    assert_eq!(heard, "Hal");
    let error = answer.unwrap_err();
    assert!(
        matches!(&error, LlmError::Status { status: 529, body, .. } if body.contains("Overloaded")),
        "{error:?}"
    );
    assert!(error.is_transient());

    let mut events = AnthropicEvents::default();
    let error = events
        .push(r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#)
        .unwrap_err();
    assert!(
        matches!(&error, LlmError::Status { status: 400, body, .. } if body.contains("max_tokens")),
        "{error:?}"
    );
    assert!(!error.is_transient());
}

#[test]
fn malformed_events_fail_clearly() {
    let mut events = AnthropicEvents::default();
    let error = events
        .push("{\"type\":\"content_block_delta\",")
        .unwrap_err();
    assert!(
        matches!(&error, LlmError::Decode(message) if message.contains("streamed event")),
        "{error:?}"
    );

    let mut events = AnthropicEvents::default();
    let error = events
        .push(
            r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}"#,
        )
        .unwrap_err();
    assert!(
        matches!(&error, LlmError::Decode(message) if message.contains("block 7") && message.contains("never started")),
        "{error:?}"
    );

    let mut events = AnthropicEvents::default();
    events
        .push(
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        )
        .unwrap();
    let error = events
        .push(r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#)
        .unwrap_err();
    assert!(
        matches!(&error, LlmError::Decode(message) if message.contains("does not fit")),
        "{error:?}"
    );

    // A tool call whose pieces never make JSON names the tool.
    let mut events = AnthropicEvents::default();
    for data in [
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"add_note","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"title\": "}}"#,
        r#"{"type":"message_stop"}"#,
    ] {
        events.push(data).unwrap();
    }
    let error = events.finish("c", None).unwrap_err();
    assert!(
        matches!(&error, LlmError::Decode(message) if message.contains("\"add_note\"")),
        "{error:?}"
    );
}

#[test]
fn a_stream_cut_before_message_stop_is_a_dropped_connection() {
    let cut = STREAM.find("event: message_stop").unwrap();
    let (answer, _) = read(&STREAM.as_bytes()[..cut], &[]);
    let error = answer.unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
    assert!(error.is_transient());
}
