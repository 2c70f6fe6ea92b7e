//! `POST /inbound` as `multipart/form-data`: the form's fields and its audio file read as
//! the route reads them (`hearth::fuzzing::read_form`), the file stored in a scratch
//! folder within a 4 KiB limit.
//!
//! Input: the `Content-Type` header on the first line, the size of the chunks the body
//! arrives in on the second, the body after it.
//!
//! Properties: the same body read whole and read in chunks gives the same fields, file and
//! refusal; a form that is read has text fields within their length, and an audio file of
//! an audio type stored inside the message's folder under a safe name, as long as the
//! bytes that came and within the limit; a refusal is a 400 (a 413 for a file over the
//! limit) saying why. A form read, written again as a new body, reads the same.
#![no_main]

use std::path::{Path, PathBuf};

use hearth::fuzzing::{FormRefusal, ReceivedForm, read_form};
use hearth_fuzz_checks::scratch::{folder as scratch, runtime};
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 4096;
/// A text field's bytes at most (16,000 characters of four bytes).
const MAX_FIELD_BYTES: usize = 64_000;

/// What a read gives, comparable across folders: the fields, and the audio file's
/// attachment with its bytes.
#[derive(Debug, PartialEq)]
struct Outcome {
    fields: [Option<String>; 4],
    audio: Option<(String, Option<String>, u64, Option<u32>, Vec<u8>)>,
}

fn read(content_type: &str, chunks: Vec<Vec<u8>>, folder: &Path) -> Result<Outcome, FormRefusal> {
    let form: ReceivedForm = runtime().block_on(read_form(content_type, chunks, folder, LIMIT))?;
    for (name, value) in [
        ("user_id", &form.user_id),
        ("text", &form.text),
        ("session_id", &form.session_id),
        ("message_id", &form.message_id),
    ] {
        if let Some(value) = value {
            assert!(
                value.len() <= MAX_FIELD_BYTES,
                "{name} is {} bytes",
                value.len()
            );
        }
    }
    let audio = form.audio.map(|attachment| {
        let mime = attachment.mime_type.clone().unwrap_or_default();
        assert!(
            mime == "application/ogg"
                || mime
                    .strip_prefix("audio/")
                    .is_some_and(|sub| !sub.is_empty()),
            "stored a file of type {mime:?}"
        );
        let name = &attachment.file_name;
        assert!(
            !name.is_empty()
                && !name.starts_with('.')
                && !name
                    .chars()
                    .any(|c| matches!(c, '/' | '\\' | '\0' | ':') || c.is_control()),
            "unsafe file name {name:?}"
        );
        let path = PathBuf::from(
            attachment
                .path
                .as_deref()
                .expect("a stored file has a path"),
        );
        assert_eq!(path, folder.join(name), "stored outside its folder");
        let bytes = std::fs::read(&path).expect("the stored file is there");
        assert_eq!(bytes.len() as u64, attachment.size_bytes);
        assert!(attachment.size_bytes <= LIMIT);
        (
            name.clone(),
            attachment.mime_type,
            attachment.size_bytes,
            attachment.duration_seconds,
            bytes,
        )
    });
    Ok(Outcome {
        fields: [form.user_id, form.text, form.session_id, form.message_id],
        audio,
    })
}

fn check_refusal(refusal: &FormRefusal) {
    assert!(matches!(refusal.status, 400 | 413), "{refusal:?}");
    assert!(
        !refusal.error.trim().is_empty(),
        "refused without saying why: {refusal:?}"
    );
}

/// The outcome written again as a form, with a boundary none of it contains.
fn written_again(outcome: &Outcome) -> (String, Vec<u8>) {
    let mut boundary = String::from("hearthfuzzboundary");
    let contains =
        |haystack: &[u8], needle: &[u8]| haystack.windows(needle.len()).any(|w| w == needle);
    let mut parts: Vec<(String, Option<(String, String)>, Vec<u8>)> = Vec::new();
    for (name, value) in ["user_id", "text", "session_id", "message_id"]
        .iter()
        .zip(&outcome.fields)
    {
        if let Some(value) = value {
            parts.push((name.to_string(), None, value.as_bytes().to_vec()));
        }
    }
    if let Some((file_name, mime, _, _, bytes)) = &outcome.audio {
        let mime = mime.clone().unwrap_or_default();
        parts.push((
            "audio".into(),
            Some((file_name.clone(), mime)),
            bytes.clone(),
        ));
    }
    while parts
        .iter()
        .any(|(_, _, bytes)| contains(bytes, boundary.as_bytes()))
    {
        boundary.push('x');
    }
    let mut body = Vec::new();
    for (name, file, bytes) in &parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match file {
            Some((file_name, mime)) => body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\nContent-Type: {mime}\r\n\r\n"
                )
                .as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
            ),
        }
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

fn fresh(name: &str) -> PathBuf {
    let folder = scratch().join(name);
    let _ = std::fs::remove_dir_all(&folder);
    folder
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.splitn(3, |byte| *byte == b'\n');
    let (Some(content_type), Some(chunk_size), Some(body)) =
        (lines.next(), lines.next(), lines.next())
    else {
        return;
    };
    let Ok(content_type) = std::str::from_utf8(content_type) else {
        return;
    };
    let chunk_size = std::str::from_utf8(chunk_size)
        .ok()
        .and_then(|size| size.trim().parse::<usize>().ok())
        .filter(|size| *size > 0)
        .unwrap_or(7);
    let whole = read(content_type, vec![body.to_vec()], &fresh("whole"));
    let chunked = read(
        content_type,
        body.chunks(chunk_size).map(<[u8]>::to_vec).collect(),
        &fresh("chunked"),
    );
    assert_eq!(
        whole, chunked,
        "read whole and in chunks of {chunk_size}, the form differs"
    );
    match whole {
        Ok(outcome) => {
            // A name with a quote or a backslash would need escaping this writer does not do.
            if outcome
                .audio
                .as_ref()
                .is_some_and(|(name, ..)| name.contains(['"', '\\']))
            {
                return;
            }
            let (content_type, body) = written_again(&outcome);
            let again = read(&content_type, vec![body.clone()], &fresh("again"));
            assert_eq!(
                again.as_ref(),
                Ok(&outcome),
                "written again, the form reads otherwise:\n{}",
                String::from_utf8_lossy(&body)
            );
        }
        Err(refusal) => check_refusal(&refusal),
    }
});
