//! A scripted LLM backend speaking real HTTP on 127.0.0.1: OpenAI chat completions
//! (`POST /v1/chat/completions`), Anthropic messages (`POST /v1/messages`) and OpenAI
//! embeddings (`POST /v1/embeddings`).
//!
//! It runs on its own thread with its own actix system (`background_server.rs`), so it serves
//! async tests, the benchmarks and `hearth` subprocesses alike. Requests consume scripted
//! `Step`s in order; with an empty script it echoes the last user message. Every request is
//! recorded, and concurrency is measured.
//!
//! Token usage it reports is a word count: input = words in all message texts (and the
//! Anthropic `system`), output = words of the reply (of name and JSON arguments for tool calls).
//!
//! Embeddings have a script of their own (`EmbeddingStep`); with it empty, each input is
//! answered by `hearth::llm::hashed_embedding` of 64 dimensions, so a test or a benchmark
//! knows every vector in advance and texts sharing words come out close. Its usage is the
//! inputs' word count.

// Each includer (integration tests, bench) uses a different part of this API.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use super::background_server::serve_in_background;
use serde_json::{Value, json};

#[path = "llm_stream.rs"]
mod llm_stream;

/// What the server does with one incoming request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answer with this text. On `/v1/messages` with a forced `tool_choice`, text that parses
    /// as a JSON object is answered as that tool's input, as Anthropic would.
    Reply(String),
    /// Answer with these tool calls (name, arguments) and no text.
    ToolCalls(Vec<(String, Value)>),
    /// Fail with this HTTP status; `body` becomes the message of the vendor's error JSON.
    Error {
        status: u16,
        retry_after: Option<u64>,
        body: String,
    },
    /// Wait, then do the inner step.
    Delay(Duration, Box<Step>),
    /// Never answer while the server lives.
    Hang,
    /// Wait until the gate is opened (or the server stops), then do the inner step.
    Gated(Gate, Box<Step>),
    /// Answer `"echo: <text of the last user message>"` (the default when nothing is scripted).
    Echo,
    /// Ask for this tool call (name, arguments); once the request's last message is a
    /// tool's result, answer as `Echo` does: one call per turn, whichever conversation's
    /// turn asks, for load that runs tools.
    CallThenEcho(String, Value),
    /// Streamed: send the first half of this text's answer, then cut the connection.
    /// Asked for a whole answer: fail with HTTP 502, as a proxy losing its upstream would.
    BrokenStream(String),
}

/// What the server does with one `/v1/embeddings` request.
#[derive(Debug, Clone, PartialEq)]
pub enum EmbeddingStep {
    /// Each input's hashed vector, in their order (the default when nothing is scripted).
    Vectors,
    /// The same vectors and indexes, listed last first, as a server may answer them.
    VectorsReversed,
    /// Answer this status and body as they are (an answer that is not what was asked).
    Body { status: u16, body: String },
    /// Fail with this status as OpenAI's error JSON, quoting the key it was sent as OpenAI
    /// does, with `Retry-After` in seconds if set.
    Error {
        status: u16,
        retry_after: Option<u64>,
    },
    /// Never answer while the server lives.
    Hang,
}

/// The dimensions of the fake's vectors.
pub const EMBEDDING_DIMENSIONS: usize = hearth::llm::HASHED_DIMENSIONS;

/// Holds the requests of `Step::Gated` until the test opens it.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Let every request waiting at the gate (and every later one) go on.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn opened(&self, stopped: &tokio::sync::watch::Sender<bool>) {
        let mut open = self.0.subscribe();
        let mut stopped = stopped.subscribe();
        tokio::select! {
            _ = open.wait_for(|open| *open) => {}
            _ = stopped.wait_for(|stopped| *stopped) => {}
        }
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Gate) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub path: String,
    /// Header names are lower-case.
    pub headers: Vec<(String, String)>,
    /// `Value::Null` when the body was not JSON.
    pub body: Value,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The running fake; stopped when dropped.
pub struct ScriptedLlmServer {
    shared: Arc<Shared>,
    port: u16,
    handle: ServerHandle,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedLlmServer {
    /// Bind 127.0.0.1 on a free port and serve from a background thread; returns once listening.
    pub fn start() -> ScriptedLlmServer {
        let shared = Arc::new(Shared::default());
        let data = web::Data::from(Arc::clone(&shared));
        // Two workers keep it light yet let the benchmark overlap requests.
        let server = serve_in_background("fake-llm", 2, move |routes| {
            routes
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                .route("/v1/chat/completions", web::post().to(openai))
                .route("/v1/messages", web::post().to(anthropic))
                .route("/v1/embeddings", web::post().to(embeddings));
        });
        ScriptedLlmServer {
            shared,
            port: server.port,
            handle: server.handle,
            thread: Some(server.thread),
        }
    }

    /// Root for OpenAI clients: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Root for Anthropic clients: `http://127.0.0.1:PORT`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queue a step for the next unscripted request.
    pub fn push(&self, step: Step) {
        self.shared.script().steps.push_back(step);
    }

    pub fn push_many(&self, steps: impl IntoIterator<Item = Step>) {
        self.shared.script().steps.extend(steps);
    }

    /// Queue a step for the next `/v1/embeddings` request.
    pub fn push_embedding(&self, step: EmbeddingStep) {
        lock(&self.shared.embedding_steps).push_back(step);
    }

    /// The recorded requests to `/v1/embeddings`, in arrival order.
    pub fn embedding_requests(&self) -> Vec<RecordedRequest> {
        let recorded = self.shared.recorded();
        let embeddings = recorded
            .iter()
            .filter(|request| request.path == "/v1/embeddings");
        embeddings.cloned().collect()
    }

    /// The pause before each event of a streamed (`"stream": true`) answer.
    pub fn set_stream_pause(&self, pause: Duration) {
        *self
            .shared
            .stream_pause
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = pause;
    }

    /// What to do when the script is empty (initially `Step::Echo`).
    pub fn set_default(&self, step: Step) {
        self.shared.script().default = step;
    }

    /// Steps pushed but not yet consumed.
    pub fn pending_steps(&self) -> usize {
        self.shared.script().steps.len()
    }

    /// Keep recording requests (the default) or not; a long benchmark turns it off to save memory.
    pub fn set_recording(&self, on: bool) {
        self.shared.recording.store(on, Ordering::Relaxed);
    }

    /// Every recorded request, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.recorded().clone()
    }

    /// Requests received (recorded or not) since start or the last `reset_counters`.
    pub fn request_count(&self) -> usize {
        self.shared.request_count.load(Ordering::SeqCst)
    }

    /// The most requests ever in flight at once, from arrival to response (delays included).
    pub fn max_concurrent(&self) -> usize {
        self.shared.max_concurrent.load(Ordering::SeqCst)
    }

    /// The last tool result the model was shown in recorded request `index` (OpenAI
    /// format), or an empty string when it was shown none.
    pub fn tool_result_seen(&self, index: usize) -> String {
        self.requests()[index].body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .rev()
            .find(|message| message["role"] == "tool")
            .and_then(|message| message["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }

    /// The last tool result the model was shown in its latest request.
    pub fn last_tool_result(&self) -> String {
        self.tool_result_seen(self.requests().len() - 1)
    }

    /// The tool results recorded request `index` ends with (the results of the calls of the
    /// round before it), in call order.
    pub fn tool_results_seen(&self, index: usize) -> Vec<String> {
        let messages = self.requests()[index].body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut results: Vec<String> = messages
            .iter()
            .rev()
            .take_while(|message| message["role"] == "tool")
            .map(|message| message["content"].as_str().unwrap_or_default().to_string())
            .collect();
        results.reverse();
        results
    }

    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Zero the request count, forget recorded requests, and restart `max_concurrent` from the
    /// requests in flight now. The script and the default step are kept.
    pub fn reset_counters(&self) {
        let mut recorded = self.shared.recorded();
        recorded.clear();
        self.shared.request_count.store(0, Ordering::SeqCst);
        self.shared.max_concurrent.store(
            self.shared.in_flight.load(Ordering::SeqCst),
            Ordering::SeqCst,
        );
    }
}

impl Drop for ScriptedLlmServer {
    fn drop(&mut self) {
        // Release hanging handlers first so the workers can stop without waiting on them.
        self.shared.stopped.send_replace(true);
        // The stop command is sent eagerly; the returned future only reports completion.
        drop(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Script {
    steps: VecDeque<Step>,
    default: Step,
}

struct Shared {
    script: Mutex<Script>,
    embedding_steps: Mutex<VecDeque<EmbeddingStep>>,
    recorded: Mutex<Vec<RecordedRequest>>,
    recording: AtomicBool,
    request_count: AtomicUsize,
    in_flight: AtomicUsize,
    max_concurrent: AtomicUsize,
    next_id: AtomicU64,
    stopped: tokio::sync::watch::Sender<bool>,
    /// The pause before each event of a streamed answer.
    stream_pause: Mutex<Duration>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            script: Mutex::new(Script {
                steps: VecDeque::new(),
                default: Step::Echo,
            }),
            embedding_steps: Mutex::default(),
            recorded: Mutex::new(Vec::new()),
            recording: AtomicBool::new(true),
            request_count: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_concurrent: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            stopped: tokio::sync::watch::Sender::new(false),
            stream_pause: Mutex::new(Duration::ZERO),
        }
    }
}

impl Shared {
    // A test that panicked while holding a lock must not turn every later request into a panic.
    fn script(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn recorded(&self) -> MutexGuard<'_, Vec<RecordedRequest>> {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn next_step(&self) -> Step {
        let mut script = self.script();
        match script.steps.pop_front() {
            Some(step) => step,
            None => script.default.clone(),
        }
    }
}

// A test that panicked while holding a lock must not fail every later request.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts a request as in flight for as long as its handler lives, even if the client gives up.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> Self {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_concurrent.fetch_max(now, Ordering::SeqCst);
        shared.request_count.fetch_add(1, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Wire {
    OpenAi,
    Anthropic,
}

async fn openai(request: HttpRequest, body: web::Bytes, shared: web::Data<Shared>) -> HttpResponse {
    serve(Wire::OpenAi, &request, &body, &shared).await
}

async fn anthropic(
    request: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    serve(Wire::Anthropic, &request, &body, &shared).await
}

/// What an answer needs from the request, taken before the body is moved into the record.
struct Asked {
    model: String,
    last_user: String,
    input_words: u64,
    forced_tool: Option<String>,
    /// The last message is a tool's result: the model has its call's answer.
    after_tool_result: bool,
}

impl Asked {
    fn of(body: &Value) -> Asked {
        let messages = body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut input_words = words(body["system"].as_str().unwrap_or(""));
        let mut last_user = None;
        for message in messages {
            let mut text = String::new();
            collect_text(&message["content"], &mut text);
            input_words += words(&text);
            // Anthropic tool results are user turns without text; they are not "what the user said".
            if message["role"] == "user" && has_text(&message["content"]) {
                last_user = Some(text);
            }
        }
        let after_tool_result = messages.last().is_some_and(|last| {
            last["role"] == "tool"
                || last["content"]
                    .as_array()
                    .is_some_and(|parts| parts.iter().any(|part| part["type"] == "tool_result"))
        });
        Asked {
            after_tool_result,
            model: body["model"]
                .as_str()
                .unwrap_or("scripted-model")
                .to_string(),
            last_user: last_user.unwrap_or_default(),
            input_words,
            forced_tool: (body["tool_choice"]["type"] == "tool")
                .then(|| body["tool_choice"]["name"].as_str().map(str::to_string))
                .flatten(),
        }
    }
}

/// Text of a message's content: a string, or the `text` (and tool-result `content`) of its parts.
fn collect_text(content: &Value, out: &mut String) {
    match content {
        Value::String(text) => push_text(out, text),
        Value::Array(parts) => {
            for part in parts {
                if let Some(text) = part["text"].as_str() {
                    push_text(out, text);
                }
                if part["content"].is_string() || part["content"].is_array() {
                    collect_text(&part["content"], out);
                }
            }
        }
        _ => {}
    }
}

fn push_text(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

fn has_text(content: &Value) -> bool {
    match content {
        Value::String(_) => true,
        Value::Array(parts) => parts.iter().any(|part| part["type"] == "text"),
        _ => false,
    }
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

async fn serve(wire: Wire, request: &HttpRequest, body: &[u8], shared: &Shared) -> HttpResponse {
    let _in_flight = InFlight::enter(shared);
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let asked = Asked::of(&body);
    let streamed =
        (body["stream"] == true).then(|| body["stream_options"]["include_usage"] == true);
    if shared.recording.load(Ordering::Relaxed) {
        let headers = request
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_string(), value)
            })
            .collect();
        shared.recorded().push(RecordedRequest {
            path: request.path().to_string(),
            headers,
            body,
        });
    }
    let mut step = shared.next_step();
    loop {
        step = match step {
            Step::Delay(pause, inner) => {
                actix_web::rt::time::sleep(pause).await;
                *inner
            }
            Step::Hang => {
                let mut stopped = shared.stopped.subscribe();
                let _ = stopped.wait_for(|stopped| *stopped).await;
                return HttpResponse::ServiceUnavailable().finish();
            }
            Step::Gated(gate, inner) => {
                gate.opened(&shared.stopped).await;
                *inner
            }
            Step::Echo => Step::Reply(format!("echo: {}", asked.last_user)),
            Step::CallThenEcho(_, _) if asked.after_tool_result => Step::Echo,
            Step::CallThenEcho(name, arguments) => Step::ToolCalls(vec![(name, arguments)]),
            other => {
                break match streamed {
                    Some(usage) => stream(wire, other, &asked, usage, shared),
                    None => respond(wire, other, &asked, shared),
                };
            }
        };
    }
}

/// A streamed answer (`usage`: OpenAI's `include_usage`); an error is answered whole, as
/// before any stream starts.
fn stream(wire: Wire, step: Step, asked: &Asked, usage: bool, shared: &Shared) -> HttpResponse {
    let (step, broken) = match step {
        Step::BrokenStream(text) => (Step::Reply(text), true),
        other => (other, false),
    };
    let (text, calls) = match step {
        Step::Reply(text) => match forced_call(wire, &text, asked) {
            Some(call) => (None, vec![call]),
            None => (Some(text), Vec::new()),
        },
        Step::ToolCalls(calls) => (None, calls),
        other => return respond(wire, other, asked, shared),
    };
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let output = text.as_deref().map_or(0, words) + call_words(&calls);
    let events = match wire {
        Wire::OpenAi => {
            let chunks = match &text {
                Some(text) => llm_stream::text_chunks(id, &asked.model, text),
                None => llm_stream::tool_call_chunks(id, &asked.model, &calls),
            };
            let usage = usage.then(|| openai_usage(asked.input_words, output));
            llm_stream::openai_events(chunks, usage)
        }
        Wire::Anthropic => llm_stream::anthropic_events(
            id,
            &asked.model,
            text.as_deref(),
            &calls,
            (asked.input_words, output),
        ),
    };
    let pause = *shared
        .stream_pause
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    llm_stream::respond(events, pause, broken)
}

/// On `/v1/messages` with a forced `tool_choice`, text that parses as a JSON object is
/// that tool's input, as Anthropic answers it.
fn forced_call(wire: Wire, text: &str, asked: &Asked) -> Option<(String, Value)> {
    let name = (wire == Wire::Anthropic)
        .then(|| asked.forced_tool.clone())
        .flatten()?;
    match serde_json::from_str::<Value>(text) {
        Ok(input) if input.is_object() => Some((name, input)),
        _ => None,
    }
}

fn call_words(calls: &[(String, Value)]) -> u64 {
    calls
        .iter()
        .map(|(name, args)| words(name) + words(&args.to_string()))
        .sum()
}

fn respond(wire: Wire, step: Step, asked: &Asked, shared: &Shared) -> HttpResponse {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    match step {
        Step::Error {
            status,
            retry_after,
            body,
        } => error_response(wire, status, retry_after, &body),
        Step::Reply(text) => match forced_call(wire, &text, asked) {
            Some(call) => tool_calls_response(wire, id, vec![call], asked),
            None => text_response(wire, id, &text, asked),
        },
        Step::BrokenStream(_) => error_response(wire, 502, None, "the upstream went away"),
        Step::ToolCalls(calls) => tool_calls_response(wire, id, calls, asked),
        // `serve` resolves these before calling here.
        Step::Delay(..) | Step::Hang | Step::Gated(..) | Step::Echo | Step::CallThenEcho(..) => {
            HttpResponse::InternalServerError().finish()
        }
    }
}

fn text_response(wire: Wire, id: u64, text: &str, asked: &Asked) -> HttpResponse {
    let output = words(text);
    let body = match wire {
        Wire::OpenAi => json!({
            "id": format!("chatcmpl-{id}"),
            "object": "chat.completion",
            "created": 0,
            "model": asked.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }],
            "usage": openai_usage(asked.input_words, output),
        }),
        Wire::Anthropic => json!({
            "id": format!("msg_{id}"),
            "type": "message",
            "role": "assistant",
            "model": asked.model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": asked.input_words, "output_tokens": output},
        }),
    };
    HttpResponse::Ok().json(body)
}

fn tool_calls_response(
    wire: Wire,
    id: u64,
    calls: Vec<(String, Value)>,
    asked: &Asked,
) -> HttpResponse {
    let output = call_words(&calls);
    let body = match wire {
        Wire::OpenAi => {
            let tool_calls: Vec<Value> = calls
                .into_iter()
                .enumerate()
                .map(|(index, (name, args))| {
                    json!({
                        "id": format!("call_{id}_{index}"),
                        "type": "function",
                        "function": {"name": name, "arguments": args.to_string()},
                    })
                })
                .collect();
            json!({
                "id": format!("chatcmpl-{id}"),
                "object": "chat.completion",
                "created": 0,
                "model": asked.model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": null, "tool_calls": tool_calls},
                    "finish_reason": "tool_calls",
                }],
                "usage": openai_usage(asked.input_words, output),
            })
        }
        Wire::Anthropic => {
            let content: Vec<Value> = calls
                .into_iter()
                .enumerate()
                .map(|(index, (name, input))| {
                    json!({
                        "type": "tool_use",
                        "id": format!("toolu_{id}_{index}"),
                        "name": name,
                        "input": input,
                    })
                })
                .collect();
            json!({
                "id": format!("msg_{id}"),
                "type": "message",
                "role": "assistant",
                "model": asked.model,
                "content": content,
                "stop_reason": "tool_use",
                "stop_sequence": null,
                "usage": {"input_tokens": asked.input_words, "output_tokens": output},
            })
        }
    };
    HttpResponse::Ok().json(body)
}

fn openai_usage(input: u64, output: u64) -> Value {
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
}

fn error_response(
    wire: Wire,
    status: u16,
    retry_after: Option<u64>,
    message: &str,
) -> HttpResponse {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match wire {
        Wire::OpenAi => {
            let kind = match status {
                401 => "invalid_api_key",
                429 => "rate_limit_exceeded",
                500.. => "server_error",
                _ => "invalid_request_error",
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
        Wire::Anthropic => {
            let kind = match status {
                401 => "authentication_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                500.. => "api_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    let mut response = HttpResponse::build(code);
    if let Some(seconds) = retry_after {
        response.insert_header(("retry-after", seconds.to_string()));
    }
    response.json(body)
}

/// `POST /v1/embeddings`: `{"model", "input": [texts]}` answered as its next
/// `EmbeddingStep` says.
async fn embeddings(
    request: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let _in_flight = InFlight::enter(&shared);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = body["model"]
        .as_str()
        .unwrap_or("scripted-embedding")
        .to_owned();
    // A single string is one input, as OpenAI takes it.
    let inputs: Vec<String> = match &body["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(texts) => texts
            .iter()
            .map(|text| text.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    };
    let key = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if shared.recording.load(Ordering::Relaxed) {
        let headers = request
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_string(), value)
            })
            .collect();
        shared.recorded().push(RecordedRequest {
            path: request.path().to_string(),
            headers,
            body,
        });
    }
    let step = lock(&shared.embedding_steps).pop_front();
    let reversed = match step.unwrap_or(EmbeddingStep::Vectors) {
        EmbeddingStep::Vectors => false,
        EmbeddingStep::VectorsReversed => true,
        EmbeddingStep::Body { status, body } => {
            let status = StatusCode::from_u16(status).expect("fake embeddings: status");
            return HttpResponse::build(status)
                .content_type("application/json")
                .body(body);
        }
        EmbeddingStep::Error {
            status,
            retry_after,
        } => {
            let message = format!("scripted failure; key provided: {key}");
            return error_response(Wire::OpenAi, status, retry_after, &message);
        }
        EmbeddingStep::Hang => {
            let mut stopped = shared.stopped.subscribe();
            let _ = stopped.wait_for(|stopped| *stopped).await;
            return HttpResponse::ServiceUnavailable().finish();
        }
    };
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            json!({
                "object": "embedding",
                "index": index,
                "embedding": hearth::llm::hashed_embedding(text, EMBEDDING_DIMENSIONS),
            })
        })
        .collect();
    if reversed {
        data.reverse();
    }
    let tokens: u64 = inputs.iter().map(|text| words(text)).sum();
    HttpResponse::Ok().json(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}
