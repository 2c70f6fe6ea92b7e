use serde_json::json;

use super::*;

const OPENAI_STREAM: &str = concat!(
    "data: {\"model\":\"m-1\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Grüß\"}}]}\r\n\r\n",
    ": keep-alive\n\n",
    "data: {\"choices\":[{\"delta\":{\"content\":\" dich\"}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"add_note\",\"arguments\":\"\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"list_notes\",\"arguments\":\"{}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"title\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"milk\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7}}\n\n",
    "data: [DONE]\n\n",
);

/// Feeds `bytes` in pieces cut at `cuts`, and reads the answer with the text heard.
fn read_openai(bytes: &[u8], cuts: &[usize]) -> (Result<ChatResponse, LlmError>, String) {
    let mut reader = SseReader::default();
    let mut chunks = OpenAiChunks::default();
    let mut heard = String::new();
    let mut start = 0;
    for end in cuts.iter().copied().chain([bytes.len()]) {
        for event in reader.push(&bytes[start..end]).unwrap() {
            match chunks.push(&event.data) {
                Ok(text) => heard.push_str(&text),
                Err(error) => return (Err(error), heard),
            }
        }
        start = end;
    }
    (chunks.finish("asked"), heard)
}

#[test]
fn openai_chunks_cut_anywhere_make_the_whole_answer() {
    let bytes = OPENAI_STREAM.as_bytes();
    let (whole, heard) = read_openai(bytes, &[]);
    let whole = whole.unwrap();
    assert_eq!(whole.content, "Grüß dich");
    assert_eq!(heard, "Grüß dich");
    assert_eq!(whole.model, "m-1");
    assert_eq!(
        whole.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 7
        }
    );
    assert_eq!(
        whole.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "add_note".into(),
                arguments: json!({"title": "milk"}),
            },
            ToolCall {
                id: "call_b".into(),
                name: "list_notes".into(),
                arguments: json!({}),
            },
        ]
    );
    // Every single cut, and every byte on its own (inside `ü`, `ß` and `\r\n` too).
    for cut in 1..bytes.len() {
        let (answer, heard) = read_openai(bytes, &[cut]);
        assert_eq!(answer.unwrap(), whole, "cut at {cut}");
        assert_eq!(heard, "Grüß dich", "cut at {cut}");
    }
    let every: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(read_openai(bytes, &every).0.unwrap(), whole);
}

#[test]
fn an_error_event_mid_stream_fails_the_call_with_what_it_said() {
    let stream = concat!(
        "data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\n\n",
        "data: {\"error\":{\"message\":\"the server is overloaded\",\"type\":\"server_error\"}}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
    );
    let (answer, heard) = read_openai(stream.as_bytes(), &[5, 60]);
    let error = answer.unwrap_err();
    assert_eq!(heard, "Hal");
    assert!(error.is_transient(), "{error}");
    assert!(
        error.to_string().contains("the server is overloaded"),
        "{error}"
    );
    let refused =
        "data: {\"error\":{\"message\":\"bad tools\",\"type\":\"invalid_request_error\"}}\n\n";
    assert!(
        !read_openai(refused.as_bytes(), &[])
            .0
            .unwrap_err()
            .is_transient()
    );
}

#[test]
fn a_stream_cut_short_is_a_dropped_connection_not_an_answer() {
    let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\n\n";
    let error = read_openai(stream.as_bytes(), &[]).0.unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error}");
    let garbage = "data: {not json\n\n";
    let error = read_openai(garbage.as_bytes(), &[]).0.unwrap_err();
    assert!(matches!(error, LlmError::Decode(_)), "{error}");
}

#[test]
fn sse_events_keep_their_names_and_join_data_lines() {
    let mut reader = SseReader::default();
    let events = reader
        .push(b"event: message_start\ndata: {\"a\":\ndata: 1}\nid: 7\n\nevent: ping\n\n")
        .unwrap();
    assert_eq!(
        events,
        vec![SseEvent {
            event: "message_start".into(),
            data: "{\"a\":\n1}".into()
        }]
    );
    // A name without data is no event, and does not stick to the next one.
    assert_eq!(reader.push(b"data: x\n\n").unwrap()[0].event, "");
}

#[test]
fn a_listener_never_waits_and_can_be_pointed_elsewhere() {
    let (listener, mut first) = TextListener::channel(2);
    listener.text("a");
    listener.text("b");
    // Full: dropped, without waiting.
    listener.text("c");
    listener.text("");
    assert_eq!(first.try_recv().unwrap(), StreamEvent::Text("a".into()));
    assert_eq!(first.try_recv().unwrap(), StreamEvent::Text("b".into()));
    assert!(first.try_recv().is_err());

    let (other, mut second) = TextListener::channel(4);
    let turn_side = listener.clone();
    listener.redirect(&other);
    turn_side.restart();
    turn_side.text("d");
    assert!(first.try_recv().is_err());
    assert_eq!(second.try_recv().unwrap(), StreamEvent::Restart);
    assert_eq!(second.try_recv().unwrap(), StreamEvent::Text("d".into()));

    drop(second);
    assert!(!turn_side.is_open());
    turn_side.text("nobody hears this, and nothing fails");
}
