//! `POST /inbound` as `multipart/form-data`: the fields of the JSON form (`user_id`,
//! `text`, `session_id`, `message_id`) and one audio file, `audio`, streamed into
//! `<attachments folder>/<inbox id>/<safe file name>` within `http.max_attachment_bytes`
//! and sent on as an audio attachment (its length is measured from the file before it is
//! transcribed, as every voice note's is). The caller is
//! authenticated before any of the body is read; a file whose message is refused, a
//! duplicate or not stored is removed with its folder.

use std::path::{Path, PathBuf};

use actix_multipart::{Field, Multipart};
use actix_web::guard::GuardContext;
use actix_web::{HttpRequest, HttpResponse, web};
use futures::{StreamExt, TryStreamExt};
use serde_json::json;

use super::HttpState;
use super::auth::inbound_caller;
use super::inbound::{InboundFields, MAX_TEXT_CHARS, bad_request, inbound_of, submit};
use crate::actors::channels::core::attachments::{StoreError, safe_file_name, store_limited};
use crate::ports::{Attachment, AttachmentKind, Inbound};

/// The form's file field.
const AUDIO_FIELD: &str = "audio";
/// A text field's bytes at most: the longest text in four-byte characters.
const MAX_FIELD_BYTES: usize = MAX_TEXT_CHARS * 4;

/// Whether a request to `POST /inbound` is a form with a file rather than JSON.
pub fn is_multipart(context: &GuardContext<'_>) -> bool {
    context
        .head()
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

/// `POST /inbound` with `multipart/form-data`: answered as the JSON form is.
pub async fn post_inbound_form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    form: Multipart,
) -> HttpResponse {
    let caller = match inbound_caller(
        state.keys.as_ref(),
        &state.identity,
        &state.family,
        &request,
    )
    .await
    {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    let id = Inbound::new_id();
    let folder = state.attachments_dir.join(&id);
    let received = receive(state.max_attachment_bytes, form, &folder).await;
    let kept = match received {
        Ok(form) => form,
        Err(refused) => return discard(&folder, refused).await,
    };
    let user_id = match caller.member_named(kept.user_id.as_deref()) {
        Ok(Some(user_id)) => user_id,
        Ok(None) => {
            let missing = bad_request("field `user_id` is missing".into());
            return discard(&folder, missing).await;
        }
        Err(refused) => return discard(&folder, refused).await,
    };
    let text = kept.text.unwrap_or_default();
    if text.trim().is_empty() && kept.audio.is_none() {
        let empty = bad_request("field `text` is empty and no `audio` file came with it".into());
        return discard(&folder, empty).await;
    }
    let fields = InboundFields {
        text,
        session_id: kept.session_id,
        message_id: kept.message_id,
    };
    let mut inbound = match inbound_of(&state, &user_id, fields, id) {
        Ok(inbound) => inbound,
        Err(refused) => return discard(&folder, refused).await,
    };
    inbound.extras.attachments.extend(kept.audio);
    let submission = submit(&state, inbound).await;
    if submission.stored {
        submission.response
    } else {
        discard(&folder, submission.response).await
    }
}

/// The message's folder removed (nothing of a refused message stays on disk), then
/// `response`.
async fn discard(folder: &Path, response: HttpResponse) -> HttpResponse {
    match tokio::fs::remove_dir_all(folder).await {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::warn!(folder = %folder.display(), %error, "refused upload not removed");
        }
    }
    response
}

/// The form as it came: its text fields and its stored audio file.
#[derive(Debug, Default)]
pub struct ReceivedForm {
    pub user_id: Option<String>,
    pub text: Option<String>,
    pub session_id: Option<String>,
    pub message_id: Option<String>,
    pub audio: Option<Attachment>,
}

/// A form refused: the answer's status and its `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormRefusal {
    pub status: u16,
    pub error: String,
}

/// Reads `body` (as the chunks it arrives in), sent with `content_type`, as `POST /inbound`
/// reads a form, its audio file stored in `folder` within `limit` bytes: what the fuzz
/// target `inbound_form` checks. No caller, member or queue is involved.
pub async fn read_form(
    content_type: &str,
    body: Vec<Vec<u8>>,
    folder: &Path,
    limit: u64,
) -> Result<ReceivedForm, FormRefusal> {
    let mut headers = actix_web::http::header::HeaderMap::new();
    let value =
        actix_web::http::header::HeaderValue::from_str(content_type).map_err(|_| FormRefusal {
            status: 400,
            error: "the content type is not a header value".to_string(),
        })?;
    headers.insert(actix_web::http::header::CONTENT_TYPE, value);
    let chunks = futures::stream::iter(
        body.into_iter()
            .map(|chunk| Ok::<_, actix_web::error::PayloadError>(web::Bytes::from(chunk))),
    );
    match receive(limit, Multipart::new(&headers, chunks), folder).await {
        Ok(form) => Ok(form),
        Err(response) => {
            let status = response.status().as_u16();
            let body = actix_web::body::to_bytes(response.into_body())
                .await
                .unwrap_or_default();
            let error = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|answer| answer.get("error")?.as_str().map(str::to_string))
                .unwrap_or_default();
            Err(FormRefusal { status, error })
        }
    }
}

/// Every field of `form` read, the audio file stored in `folder` within `limit` bytes; else
/// the answer to give.
async fn receive(
    limit: u64,
    mut form: Multipart,
    folder: &Path,
) -> Result<ReceivedForm, HttpResponse> {
    let mut received = ReceivedForm::default();
    while let Some(field) = form.next().await {
        let field = field.map_err(|error| bad_request(format!("malformed form: {error}")))?;
        let name = field.name().unwrap_or_default().to_string();
        let slot = match name.as_str() {
            AUDIO_FIELD => {
                if received.audio.is_some() {
                    return Err(bad_request("only one `audio` file is read".into()));
                }
                received.audio = Some(store_audio(limit, field, folder).await?);
                continue;
            }
            "user_id" => &mut received.user_id,
            "text" => &mut received.text,
            "session_id" => &mut received.session_id,
            "message_id" => &mut received.message_id,
            other => return Err(bad_request(format!("unknown field `{other}`"))),
        };
        if slot.is_some() {
            return Err(bad_request(format!("field `{name}` is given twice")));
        }
        *slot = Some(read_text(field, &name).await?);
    }
    Ok(received)
}

/// A text field's value, refused past `MAX_FIELD_BYTES` or when it is no UTF-8.
async fn read_text(mut field: Field, name: &str) -> Result<String, HttpResponse> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|error| bad_request(format!("malformed form: {error}")))?;
        if bytes.len() + chunk.len() > MAX_FIELD_BYTES {
            return Err(bad_request(format!(
                "field `{name}` is longer than {MAX_TEXT_CHARS} characters"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).map_err(|_| bad_request(format!("field `{name}` is not UTF-8")))
}

/// The audio file streamed into `folder` within `limit` bytes, as the message's attachment.
async fn store_audio(limit: u64, field: Field, folder: &Path) -> Result<Attachment, HttpResponse> {
    let mime = field
        .content_type()
        .map(|mime| mime.essence_str().to_ascii_lowercase())
        .unwrap_or_default();
    if !is_audio(&mime) {
        let named = if mime.is_empty() { "none" } else { &mime };
        return Err(bad_request(format!(
            "field `audio` has content type {named}: send audio/* or application/ogg"
        )));
    }
    let file_name = safe_file_name(
        field
            .content_disposition()
            .and_then(|disposition| disposition.get_filename())
            .filter(|name| !name.trim().is_empty())
            .unwrap_or(default_name(&mime)),
    );
    let path: PathBuf = folder.join(&file_name);
    // Whether a failure was the upload's (told to the caller) or hearth's own disk's
    // (logged; the caller hears nothing of hearth's folders).
    let upload_broke = std::cell::Cell::new(None);
    let chunks = field.map_err(|error| {
        upload_broke.set(Some(error.to_string()));
        error.to_string()
    });
    let size_bytes = match store_limited(chunks, &path, limit).await {
        Ok(size) => size,
        Err(StoreError::TooLarge { limit }) => {
            return Err(HttpResponse::PayloadTooLarge().json(json!({
                "error": format!(
                    "field `audio` is larger than the {limit} bytes hearth accepts \
                     (http.max_attachment_bytes)"
                )
            })));
        }
        Err(StoreError::Failed(reason)) => {
            tracing::warn!(%reason, "uploaded audio not stored");
            return Err(match upload_broke.take() {
                Some(broke) => bad_request(format!("field `audio` was not received: {broke}")),
                None => HttpResponse::ServiceUnavailable().json(json!({
                    "error": "the audio file could not be stored just now; try again later"
                })),
            });
        }
    };
    Ok(Attachment {
        kind: AttachmentKind::Audio,
        file_name,
        mime_type: Some(mime),
        size_bytes,
        // Measured from the file before it is transcribed, as every voice note is.
        duration_seconds: None,
        path: Some(path.display().to_string()),
        note: None,
        transcript: None,
    })
}

fn is_audio(mime: &str) -> bool {
    mime == "application/ogg"
        || mime
            .strip_prefix("audio/")
            .is_some_and(|sub| !sub.is_empty())
}

/// A name for a file sent without one.
fn default_name(mime: &str) -> &'static str {
    match mime {
        "audio/ogg" | "audio/opus" | "application/ogg" => "audio.ogg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "audio.wav",
        "audio/mpeg" => "audio.mp3",
        _ => "audio",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_audio_content_types_are_taken() {
        assert!(is_audio("audio/ogg"));
        assert!(is_audio("audio/x-wav"));
        assert!(is_audio("application/ogg"));
        assert!(!is_audio("audio/"));
        assert!(!is_audio("image/png"));
        assert!(!is_audio("application/octet-stream"));
    }
}
