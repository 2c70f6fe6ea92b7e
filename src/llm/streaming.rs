//! Streamed answers: who hears a reply's text while the model writes it (`TextListener`),
//! the server-sent-events reader every streaming wire format shares (`SseReader`), the
//! streamed POST itself (`post_stream`), and the OpenAI-compatible chunks assembled into
//! the same `ChatResponse` a whole answer gives (`OpenAiChunks`).
//!
//! Streamed text is only a preview: the listener never waits, and what the turn answers
//! is the `ChatResponse` returned at the end, exactly as without streaming.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{ChatResponse, ERROR_BODY_LIMIT, LlmError, ToolCall, Usage, truncate_chars};

/// What a listener hears while a turn's model writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// More of the reply's text.
    Text(String),
    /// What was heard so far is void (a retry, or the fallback model, starts again).
    Restart,
}

/// Where a turn's streamed text goes: a bounded channel, written without ever waiting.
/// A full channel drops the piece (the preview has a gap, the answer none); a closed one
/// is ignored. The queue may point it elsewhere while the turn runs (`redirect`): the
/// answer to a question the turn asked then hears the rest.
#[derive(Clone, Default)]
pub struct TextListener {
    to: Arc<Mutex<Option<mpsc::Sender<StreamEvent>>>>,
}

impl std::fmt::Debug for TextListener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("TextListener")
    }
}

impl TextListener {
    /// A listener and the receiving end of its channel of `capacity` events.
    pub fn channel(capacity: usize) -> (TextListener, mpsc::Receiver<StreamEvent>) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        (
            TextListener {
                to: Arc::new(Mutex::new(Some(sender))),
            },
            receiver,
        )
    }

    /// From now on, what this listener hears goes where `other` sends (or nowhere).
    pub fn redirect(&self, other: &TextListener) {
        let sender = other.lock_take_clone();
        *self.lock() = sender;
    }

    /// Whether anyone still listens.
    pub fn is_open(&self) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|sender| !sender.is_closed())
    }

    pub fn text(&self, delta: &str) {
        if !delta.is_empty() {
            self.send(StreamEvent::Text(delta.to_owned()));
        }
    }

    pub fn restart(&self) {
        self.send(StreamEvent::Restart);
    }

    fn send(&self, event: StreamEvent) {
        if let Some(sender) = self.lock().as_ref()
            && let Err(mpsc::error::TrySendError::Full(_)) = sender.try_send(event)
        {
            tracing::debug!("stream listener is behind; a piece of the preview is dropped");
        }
    }

    fn lock_take_clone(&self) -> Option<mpsc::Sender<StreamEvent>> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<mpsc::Sender<StreamEvent>>> {
        // Poisoned only by a panic while swapping a sender: the value is still whole.
        self.to
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One server-sent event: its `event:` name (empty when none) and its joined `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Reads server-sent events from bytes cut anywhere (inside a line, a `\r\n` or a
/// character): only whole lines are decoded, and an event ends at its blank line.
#[derive(Debug, Default)]
pub struct SseReader {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
}

/// The most one event may hold: a server sending more is broken or hostile.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

impl SseReader {
    /// The events completed by `bytes`.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, LlmError> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(SseEvent {
                        event: std::mem::take(&mut self.event),
                        data: std::mem::take(&mut self.data).join("\n"),
                    });
                }
                self.event.clear();
            } else if let Some(value) = field(line, "data") {
                self.data.push(value.to_owned());
            } else if let Some(value) = field(line, "event") {
                self.event = value.to_owned();
            }
            // Comments (`:`), `id:` and `retry:` mean nothing to a model's answer.
        }
        let held = self.pending.len() + self.data.iter().map(String::len).sum::<usize>();
        if held > MAX_EVENT_BYTES {
            return Err(LlmError::Decode(format!(
                "a streamed event is longer than {MAX_EVENT_BYTES} bytes"
            )));
        }
        Ok(events)
    }
}

fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let value = line.strip_prefix(name)?.strip_prefix(':')?;
    Some(value.strip_prefix(' ').unwrap_or(value))
}

/// POST `body` asking for a stream, and hand each event to `on_event` as it comes; a
/// non-2xx answer is read whole and fails as `post_json`'s would.
pub(crate) async fn post_stream(
    request: reqwest::RequestBuilder,
    body: &impl serde::Serialize,
    timeout: Duration,
    mut on_event: impl FnMut(SseEvent) -> Result<(), LlmError>,
) -> Result<(), LlmError> {
    let mut response = request
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .json(body)
        .timeout(timeout)
        .send()
        .await
        .map_err(|err| super::transport_error(&err, timeout))?;
    if !response.status().is_success() {
        return Err(super::refused(response, timeout).await);
    }
    let mut reader = SseReader::default();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| super::body_error(&err, timeout))?
    {
        for event in reader.push(&chunk)? {
            on_event(event)?;
        }
    }
    Ok(())
}

/// An error a server sends inside a stream, as the broker's retry policy reads errors:
/// overloaded or failing servers are worth another try, anything else is not.
pub(crate) fn stream_error(kind: &str, message: &str) -> LlmError {
    let status = match kind {
        "overloaded_error" => 529,
        "rate_limit_error" | "rate_limit_exceeded" => 429,
        "api_error" | "server_error" | "" => 500,
        _ => 400,
    };
    LlmError::Status {
        status,
        retry_after: None,
        body: truncate_chars(&format!("{kind}: {message}"), ERROR_BODY_LIMIT),
    }
}

/// OpenAI-compatible `chat.completion.chunk`s put back together: text in order, each tool
/// call's pieces joined by its index, usage from the last chunk.
#[derive(Debug, Default)]
pub struct OpenAiChunks {
    content: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<Usage>,
    model: Option<String>,
    finished: bool,
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<ChunkError>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<ChunkDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ChunkToolCall>,
}

#[derive(Deserialize)]
struct ChunkToolCall {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<ChunkFunction>,
}

#[derive(Deserialize)]
struct ChunkFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct ChunkError {
    #[serde(default)]
    message: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

impl OpenAiChunks {
    /// Take one event's data; answers the text it adds, for the listener.
    pub fn push(&mut self, data: &str) -> Result<String, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(String::new());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|err| {
            LlmError::Decode(format!(
                "{err} in streamed chunk {:?}",
                truncate_chars(data, ERROR_BODY_LIMIT)
            ))
        })?;
        if let Some(error) = chunk.error {
            let code = error.code.as_ref().and_then(Value::as_str).unwrap_or("");
            let kind = error.kind.as_deref().filter(|kind| !kind.is_empty());
            return Err(stream_error(kind.unwrap_or(code), &error.message));
        }
        if let Some(model) = chunk.model.filter(|model| !model.is_empty()) {
            self.model = Some(model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        let mut added = String::new();
        for choice in chunk.choices {
            self.finished |= choice.finish_reason.is_some();
            let Some(delta) = choice.delta else { continue };
            if let Some(text) = delta.content {
                self.content.push_str(&text);
                added.push_str(&text);
            }
            for call in delta.tool_calls {
                let partial = self.calls.entry(call.index).or_default();
                if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                    partial.id = id;
                }
                if let Some(function) = call.function {
                    if let Some(name) = function.name {
                        partial.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        partial.arguments.push_str(&arguments);
                    }
                }
            }
        }
        Ok(added)
    }

    /// The whole answer, once the stream ended; one cut short is a dropped connection.
    pub fn finish(self, asked_model: &str) -> Result<ChatResponse, LlmError> {
        if !self.done && !self.finished {
            return Err(LlmError::Connect(
                "the streamed answer ended before it was complete".to_owned(),
            ));
        }
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(index, call)| ToolCall {
                // As in a whole answer: servers that give no id still need one per call.
                id: if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: super::openai::parse_arguments(Value::String(call.arguments)),
            })
            .collect();
        Ok(ChatResponse {
            content: self.content,
            tool_calls,
            usage: self.usage.unwrap_or_default(),
            model: self.model.unwrap_or_else(|| asked_model.to_owned()),
        })
    }
}

#[cfg(test)]
#[path = "streaming_tests.rs"]
mod tests;
