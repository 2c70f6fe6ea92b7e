//! The HTTP face of the fake: `/bot<token>/<method>` with parameters from the query string, a
//! JSON body, a urlencoded form or multipart (which teloxide uses for uploads), the file route
//! `/file/bot<token>/<path>`, and getUpdates' long poll.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value, json};

use super::methods::{self, Answer};
use super::state::{HeldFate, Hold, Shared};
use super::types::{Call, TgError, UploadedFile, as_int};

/// Parameters the Bot API types as integers, booleans or JSON; form and multipart values of
/// these are converted so recorded calls look the same whatever the encoding.
const INT_KEYS: &[&str] = &[
    "chat_id",
    "message_id",
    "message_thread_id",
    "reply_to_message_id",
    "offset",
    "limit",
    "timeout",
    "user_id",
    "cache_time",
    "from_chat_id",
    "max_connections",
];
const BOOL_KEYS: &[&str] = &[
    "disable_notification",
    "protect_content",
    "show_alert",
    "drop_pending_updates",
    "allow_sending_without_reply",
    "has_spoiler",
    "disable_content_type_detection",
    "allow_paid_broadcast",
    "show_caption_above_media",
];
const JSON_KEYS: &[&str] = &[
    "reply_markup",
    "reply_parameters",
    "entities",
    "caption_entities",
    "commands",
    "scope",
    "allowed_updates",
    "link_preview_options",
    "media",
];

pub(super) async fn api(
    request: HttpRequest,
    body: web::Bytes,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let token = request.match_info().get("token").unwrap_or_default();
    if token != shared.token {
        return respond(Err(TgError::new(401, "Unauthorized")));
    }
    let sent_method = request.match_info().get("method").unwrap_or_default();
    let (params, files) = match parameters(&request, &body) {
        Ok(parsed) => parsed,
        Err(detail) => return respond(Err(TgError::bad_request(&detail))),
    };
    let known = methods::canonical(sent_method);
    let method = known.unwrap_or(sent_method).to_string();
    let index = shared.record(Call {
        method: method.clone(),
        params: params.clone(),
        files: files.clone(),
        response: Value::Null,
    });
    if known == Some("getUpdates") {
        // Counted before faults and stalls: a watchdog test wants every attempt.
        shared.state().get_updates_count += 1;
    }
    let hold = shared
        .state()
        .holds
        .get_mut(&method.to_ascii_lowercase())
        .and_then(|queue| queue.pop_front());
    if let Some(hold) = hold.as_ref().filter(|hold| !hold.done_first) {
        // Received and left undone and unanswered, as by a slow Telegram, until the test
        // lets it go or says it was lost.
        if held(&shared, hold).await != HeldFate::Released {
            return respond(Err(TgError::bad_gateway()));
        }
    }
    let fault = shared
        .state()
        .faults
        .get_mut(&method.to_ascii_lowercase())
        .and_then(|queue| queue.pop_front());
    let chat = params.get("chat_id").and_then(|id| {
        id.as_i64()
            .or_else(|| id.as_str().and_then(|text| text.parse().ok()))
    });
    let fault =
        fault.or_else(|| chat.and_then(|chat| shared.state().chat_faults.get(&chat).cloned()));
    let outcome = match (fault, known) {
        (Some(error), _) => Err(error),
        (None, None) => Err(TgError::new(404, "Not Found")),
        (None, Some("getUpdates")) => get_updates(&shared, &params).await,
        (None, Some(method)) => methods::call(&shared, method, &params, &files),
    };
    let body = match &outcome {
        Ok(answer) => answer.to_json(),
        Err(error) => error.to_json(),
    };
    shared.set_response(index, body);
    if let Some(hold) = hold.as_ref().filter(|hold| hold.done_first) {
        // Done, and the answer on its way back until the test lets it go.
        held(&shared, hold).await;
    }
    respond(outcome)
}

/// Wait for what the test says of a held call (`Lost` when the server stops first).
async fn held(shared: &Shared, hold: &Hold) -> HeldFate {
    let mut fate = hold.fate.clone();
    let mut stopped = shared.stopped.subscribe();
    tokio::select! {
        decided = fate.wait_for(|fate| *fate != HeldFate::Waiting) => {
            decided.map(|fate| *fate).unwrap_or(HeldFate::Released)
        }
        _ = stopped.wait_for(|stopped| *stopped) => HeldFate::Lost,
    }
}

fn respond(outcome: Result<Answer, TgError>) -> HttpResponse {
    let (status, body) = match outcome {
        Ok(answer) => (StatusCode::OK, answer.to_json()),
        Err(error) => (
            StatusCode::from_u16(error.code).unwrap_or(StatusCode::BAD_REQUEST),
            error.to_json(),
        ),
    };
    HttpResponse::build(status)
        .content_type("application/json")
        .body(body.to_string())
}

/// `GET /file/bot<token>/<file_path>`: the bytes of a file getFile described.
pub(super) async fn file(request: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    let token = request.match_info().get("token").unwrap_or_default();
    // teloxide sends the file path as one URL segment, its `/` encoded as `%2F`.
    let path = percent_decode(request.match_info().get("path").unwrap_or_default());
    let bytes = (token == shared.token)
        .then(|| {
            let state = shared.state();
            state
                .files
                .values()
                .find(|file| file.path == path)
                .map(|file| file.bytes.clone())
        })
        .flatten();
    match bytes {
        Some(bytes) => HttpResponse::Ok()
            .content_type("application/octet-stream")
            .body(bytes),
        None => respond(Err(TgError::new(404, "Not Found"))),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Any other path, answered as Telegram does.
pub(super) async fn not_found() -> HttpResponse {
    respond(Err(TgError::new(404, "Not Found")))
}

/// The long poll: answers at once when updates are pending, else when one is pushed or after
/// `timeout` seconds with `[]`. Confirms updates below `offset` first.
async fn get_updates(shared: &Shared, p: &Value) -> Result<Answer, TgError> {
    let (generation, stall) = {
        let mut state = shared.state();
        state.poll_generation += 1;
        (state.poll_generation, state.stalls.pop_front())
    };
    // An older poll still waiting must learn it was superseded.
    shared.updates_changed.notify_waiters();
    let mut stopped = shared.stopped.subscribe();
    if let Some(pause) = stall {
        // Like a request lost on the way: nothing happens until the pause is over.
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stopped.wait_for(|stopped| *stopped) => return Err(TgError::bad_gateway()),
        }
    }
    let offset = as_int(&p["offset"]).unwrap_or(0);
    let limit = as_int(&p["limit"]).unwrap_or(100).clamp(1, 100) as usize;
    let timeout = as_int(&p["timeout"]).unwrap_or(0).clamp(0, 3600) as u64;
    {
        let mut state = shared.state();
        if state.webhook.is_some() {
            return Err(TgError::new(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use \
                 deleteWebhook to delete the webhook first",
            ));
        }
        if let Some(kinds) = p["allowed_updates"].as_array() {
            state.allowed_updates = Some(
                kinds
                    .iter()
                    .filter_map(|kind| kind.as_str().map(str::to_string))
                    .collect(),
            );
        }
        state.confirm(offset);
    }
    shared.changed();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        // Registered before looking, so a push between the look and the wait is not missed.
        let notified = shared.updates_changed.notified();
        {
            let mut state = shared.state();
            if state.poll_generation != generation {
                state.superseded_polls += 1;
                return Err(TgError::new(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one \
                     bot instance is running",
                ));
            }
            let batch = state.deliverable(limit);
            if !batch.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(Answer::new(json!(batch)));
            }
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = stopped.wait_for(|stopped| *stopped) => return Ok(Answer::new(json!([]))),
        }
    }
}

/// The call's parameters as a JSON object, and the uploaded files. Query parameters come
/// first; the body's override them.
fn parameters(request: &HttpRequest, body: &[u8]) -> Result<(Value, Vec<UploadedFile>), String> {
    let mut params = Map::new();
    let mut files = Vec::new();
    for (key, value) in urlencoded(request.query_string())? {
        params.insert(key.clone(), typed(&key, value));
    }
    let content_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_string();
    let media_type = content_type.to_ascii_lowercase();
    if body.is_empty() {
        return Ok((Value::Object(params), files));
    }
    if media_type.starts_with("application/json") {
        match serde_json::from_slice(body) {
            Ok(Value::Object(object)) => params.extend(object),
            _ => return Err("can't parse JSON object".to_string()),
        }
    } else if media_type.starts_with("application/x-www-form-urlencoded") {
        let text = std::str::from_utf8(body).map_err(|_| "can't parse form".to_string())?;
        for (key, value) in urlencoded(text)? {
            params.insert(key.clone(), typed(&key, value));
        }
    } else if media_type.starts_with("multipart/form-data") {
        for part in multipart(&content_type, body)? {
            match part.file_name {
                None => {
                    let value = String::from_utf8_lossy(&part.bytes).into_owned();
                    params.insert(part.name.clone(), typed(&part.name, value));
                }
                Some(file_name) => files.push(UploadedFile {
                    field: part.name,
                    file_name: Some(file_name),
                    content_type: part.content_type,
                    bytes: part.bytes,
                }),
            }
        }
    }
    Ok((Value::Object(params), files))
}

fn urlencoded(text: &str) -> Result<Vec<(String, String)>, String> {
    web::Query::<Vec<(String, String)>>::from_query(text)
        .map(web::Query::into_inner)
        .map_err(|error| format!("can't parse parameters: {error}"))
}

/// A string parameter given the JSON type the Bot API documents for it.
fn typed(key: &str, value: String) -> Value {
    if INT_KEYS.contains(&key) {
        if let Ok(number) = value.trim().parse::<i64>() {
            return json!(number);
        }
    } else if BOOL_KEYS.contains(&key) {
        match value.as_str() {
            "true" | "1" => return json!(true),
            "false" | "0" => return json!(false),
            _ => {}
        }
    } else if JSON_KEYS.contains(&key)
        && let Ok(parsed) = serde_json::from_str::<Value>(&value)
    {
        return parsed;
    }
    Value::String(value)
}

struct Part {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    bytes: Vec<u8>,
}

/// A minimal `multipart/form-data` reader (RFC 7578), enough for reqwest's encoder.
fn multipart(content_type: &str, body: &[u8]) -> Result<Vec<Part>, String> {
    let boundary = header_params(content_type)
        .into_iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("boundary"))
        .map(|(_, value)| value)
        .ok_or("multipart without boundary")?;
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut start = find(body, &delimiter, 0).ok_or("multipart without parts")? + delimiter.len();
    while !body[start..].starts_with(b"--") {
        let end = find(body, &delimiter, start).ok_or("unterminated multipart")?;
        let section = &body[start..end];
        let section = section.strip_prefix(b"\r\n").unwrap_or(section);
        let section = section.strip_suffix(b"\r\n").unwrap_or(section);
        let split = find(section, b"\r\n\r\n", 0).ok_or("multipart part without headers")?;
        let headers = String::from_utf8_lossy(&section[..split]).into_owned();
        let mut part = Part {
            name: String::new(),
            file_name: None,
            content_type: None,
            bytes: section[split + 4..].to_vec(),
        };
        for line in headers.split("\r\n") {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("content-disposition") {
                for (key, value) in header_params(value) {
                    match key.as_str() {
                        "name" => part.name = value,
                        "filename" => part.file_name = Some(value),
                        _ => {}
                    }
                }
            } else if name.trim().eq_ignore_ascii_case("content-type") {
                part.content_type = Some(value.trim().to_string());
            }
        }
        parts.push(part);
        start = end + delimiter.len();
    }
    Ok(parts)
}

/// The `key=value` parameters of a header value such as `form-data; name="x"`.
fn header_params(value: &str) -> Vec<(String, String)> {
    value
        .split(';')
        .filter_map(|piece| piece.split_once('='))
        .map(|(key, value)| {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|inner| inner.strip_suffix('"'))
                .unwrap_or(value);
            (key.trim().to_ascii_lowercase(), value.to_string())
        })
        .collect()
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|position| position + from)
}
