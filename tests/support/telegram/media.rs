//! Files: getFile (photos, documents, voice notes, audio files), and sendPhoto /
//! sendDocument with an upload or a known file_id. The fake stores bytes as they are; it
//! decodes no image and fetches no URL.

use serde_json::{Value, json};

use super::methods::{Answer, Outcome, chat_id, deliver, formatted};
use super::state::{Media, State};
use super::types::{TgError, UploadedFile};

const MAX_CAPTION: usize = 1024;
/// The Bot API refuses getFile beyond this.
const MAX_DOWNLOAD: usize = 20 * 1024 * 1024;

pub(super) fn get_file(s: &mut State, p: &Value) -> Outcome {
    let id = p["file_id"].as_str().unwrap_or("");
    let Some(file) = s.files.get(id) else {
        return Err(TgError::bad_request("invalid file_id"));
    };
    if file.bytes.len() > MAX_DOWNLOAD {
        return Err(TgError::bad_request("file is too big"));
    }
    Ok(Answer::new(json!({
        "file_id": id,
        "file_unique_id": file.unique_id,
        "file_size": file.bytes.len(),
        "file_path": file.path,
    })))
}

/// sendPhoto and sendDocument: an upload (`attach://`) or a known file_id, and a caption.
pub(super) fn send_media(s: &mut State, p: &Value, files: &[UploadedFile], field: &str) -> Outcome {
    let chat_id = chat_id(s, p)?;
    let reference = p[field].as_str().unwrap_or("");
    let (bytes, file_name, mime) = if let Some(part) = reference.strip_prefix("attach://") {
        let Some(upload) = files.iter().find(|file| file.field == part) else {
            return Err(TgError::bad_request(&format!(
                "there is no {field} in the request"
            )));
        };
        (
            upload.bytes.clone(),
            upload.file_name.clone(),
            upload.content_type.clone(),
        )
    } else if let Some(known) = s.files.get(reference) {
        (known.bytes.clone(), None, None)
    } else if reference.is_empty() {
        return Err(TgError::bad_request(&format!(
            "there is no {field} in the request"
        )));
    } else {
        // URLs are not fetched by the fake.
        return Err(TgError::bad_request(
            "wrong file identifier/HTTP URL specified",
        ));
    };
    if bytes.is_empty() {
        return Err(TgError::bad_request("file must be non-empty"));
    }
    let caption = match p["caption"].as_str().filter(|caption| !caption.is_empty()) {
        Some(raw) => Some(formatted(
            s,
            raw,
            p,
            "caption_entities",
            (MAX_CAPTION, "message caption is too long"),
        )?),
        None => None,
    };
    let media = if field == "photo" {
        Media::Photo(photo_sizes(s, &bytes))
    } else {
        let name = file_name.unwrap_or_else(|| "document".to_string());
        let extension = name
            .rsplit_once('.')
            .map_or("bin", |(_, ext)| ext)
            .to_string();
        let (file_id, unique_id) = s.add_file("documents", &extension, &bytes);
        Media::Document(json!({
            "file_name": name,
            "mime_type": mime.unwrap_or_else(|| "application/octet-stream".to_string()),
            "file_id": file_id,
            "file_unique_id": unique_id,
            "file_size": bytes.len(),
        }))
    };
    deliver(s, chat_id, p, media, caption)
}

/// A thumbnail and a full size, both serving `bytes` (the fake does not decode images).
pub(super) fn photo_sizes(s: &mut State, bytes: &[u8]) -> Vec<Value> {
    [(90, 67), (1280, 960)]
        .into_iter()
        .map(|(width, height)| {
            let (file_id, unique_id) = s.add_file("photos", "jpg", bytes);
            json!({
                "file_id": file_id,
                "file_unique_id": unique_id,
                "file_size": bytes.len(),
                "width": width,
                "height": height,
            })
        })
        .collect()
}
