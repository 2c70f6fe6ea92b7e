//! A scripted OpenAI-compatible transcription backend speaking real HTTP on 127.0.0.1:
//! `POST /v1/audio/transcriptions`, its multipart body read by `multer` as a real server
//! reads it. It runs on its own thread with its own actix system (`background_server.rs`).
//! Requests consume scripted `Step`s in order; with an empty script it answers HTTP 500, so
//! a test that forgot its script sees it fail. Every request is recorded.

// Each test uses a different part of this API.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};

use super::background_server::serve_in_background;
use serde_json::json;

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answer `{"text": ...}`.
    Text(String),
    /// Fail with this status, as OpenAI's error JSON, with `Retry-After` in seconds if set.
    Error {
        status: u16,
        retry_after: Option<u64>,
    },
    /// Never answer while the server lives.
    Hang,
}

/// One request as the server read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Received {
    pub path: String,
    /// The whole `Authorization` header, when sent.
    pub authorization: Option<String>,
    pub model: Option<String>,
    pub language: Option<String>,
    pub response_format: Option<String>,
    /// The `file` part's file name, content type, size and first four bytes.
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub file_size: usize,
    pub file_start: Vec<u8>,
    /// Names of all the form's fields, in order.
    pub fields: Vec<String>,
}

/// The running fake; stopped when dropped.
pub struct TranscriptionServer {
    shared: Arc<Shared>,
    port: u16,
    handle: ServerHandle,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    steps: Mutex<VecDeque<Step>>,
    received: Mutex<Vec<Received>>,
    stopped: Mutex<Option<tokio::sync::watch::Sender<bool>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding a lock must not fail every later request.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl TranscriptionServer {
    /// Bind 127.0.0.1 on a free port and serve from a background thread; returns once listening.
    pub fn start() -> TranscriptionServer {
        let shared = Arc::new(Shared::default());
        *lock(&shared.stopped) = Some(tokio::sync::watch::Sender::new(false));
        let data = web::Data::from(Arc::clone(&shared));
        let server = serve_in_background("fake-transcription", 1, move |routes| {
            routes
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(32 * 1024 * 1024))
                .route("/v1/audio/transcriptions", web::post().to(transcribe));
        });
        TranscriptionServer {
            shared,
            port: server.port,
            handle: server.handle,
            thread: Some(server.thread),
        }
    }

    /// The root an OpenAI client is configured with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn push(&self, step: Step) {
        lock(&self.shared.steps).push_back(step);
    }

    /// Every request read so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }
}

impl Drop for TranscriptionServer {
    fn drop(&mut self) {
        // Release hanging handlers first so the worker can stop without waiting on them.
        if let Some(stopped) = lock(&self.shared.stopped).as_ref() {
            stopped.send_replace(true);
        }
        drop(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn transcribe(
    request: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let mut received = Received {
        path: request.path().to_owned(),
        authorization: header(&request, "authorization"),
        ..Received::default()
    };
    if let Err(error) = read_form(&request, body, &mut received).await {
        // A body that is not the form a real server reads is refused as one would.
        lock(&shared.received).push(received);
        return HttpResponse::BadRequest().json(json!({"error": {"message": error}}));
    }
    let received_key = received.authorization.clone();
    lock(&shared.received).push(received);
    let step = lock(&shared.steps).pop_front();
    match step {
        Some(Step::Text(text)) => HttpResponse::Ok().json(json!({"text": text})),
        Some(Step::Error {
            status,
            retry_after,
        }) => {
            let status = StatusCode::from_u16(status).expect("fake transcription: status");
            let mut response = HttpResponse::build(status);
            if let Some(seconds) = retry_after {
                response.insert_header(("retry-after", seconds.to_string()));
            }
            // As OpenAI does, a refusal quotes what it was sent as the key.
            let key = received_key.unwrap_or_default();
            response.json(
                json!({"error": {"message": format!("scripted failure; key provided: {key}")}}),
            )
        }
        Some(Step::Hang) => {
            let stopped = lock(&shared.stopped)
                .as_ref()
                .map(|sender| sender.subscribe());
            if let Some(mut stopped) = stopped {
                let _ = stopped.wait_for(|stopped| *stopped).await;
            }
            HttpResponse::ServiceUnavailable().finish()
        }
        None => HttpResponse::InternalServerError()
            .json(json!({"error": {"message": "nothing scripted for this request"}})),
    }
}

fn header(request: &HttpRequest, name: &str) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

async fn read_form(
    request: &HttpRequest,
    body: web::Bytes,
    received: &mut Received,
) -> Result<(), String> {
    let content_type = header(request, CONTENT_TYPE.as_str()).unwrap_or_default();
    let boundary = multer::parse_boundary(&content_type).map_err(|error| error.to_string())?;
    let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let mut form = multer::Multipart::new(stream, boundary);
    while let Some(field) = form.next_field().await.map_err(|error| error.to_string())? {
        let name = field.name().unwrap_or_default().to_owned();
        received.fields.push(name.clone());
        if name == "file" {
            received.file_name = field.file_name().map(str::to_owned);
            received.content_type = field.content_type().map(ToString::to_string);
            let bytes = field.bytes().await.map_err(|error| error.to_string())?;
            received.file_size = bytes.len();
            received.file_start = bytes.iter().take(4).copied().collect();
            continue;
        }
        let text = field.text().await.map_err(|error| error.to_string())?;
        match name.as_str() {
            "model" => received.model = Some(text),
            "language" => received.language = Some(text),
            "response_format" => received.response_format = Some(text),
            _ => {}
        }
    }
    Ok(())
}
