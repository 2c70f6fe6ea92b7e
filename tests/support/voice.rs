//! Real voice notes for tests: a sentence spoken by espeak-ng into a WAV file and encoded
//! by opusenc as OGG/Opus, as a phone records one (installed by
//! `scripts/install-test-audio.sh`); the multipart form of `POST /inbound` carrying one
//! (`field`, `file`, `post_form`); and a profile transcribing with the fake transcription
//! server (`transcribing_on`).

// The benchmarks compile the support modules too, without these tests.
#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

use super::hearth_app::{API_KEY, Hearth};
use super::transcription_server::TranscriptionServer;

/// `sentence` spoken, as the bytes of an OGG/Opus file.
///
/// Panics, naming the install script, when espeak-ng or opusenc is missing.
pub fn spoken_ogg(sentence: &str) -> Vec<u8> {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let wav = folder.path().join("out.wav");
    let ogg = folder.path().join("out.ogg");
    run(
        Command::new("espeak-ng").arg("-w").arg(&wav).arg(sentence),
        "espeak-ng",
    );
    run(
        Command::new("opusenc").arg("--quiet").arg(&wav).arg(&ogg),
        "opusenc",
    );
    std::fs::read(&ogg).expect("opusenc wrote the voice note")
}

/// How long `ogg` plays in seconds, as opusinfo (opus-tools) reads it.
pub fn opusinfo_seconds(ogg: &[u8]) -> f64 {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("note.ogg");
    std::fs::write(&path, ogg).expect("the voice note is written");
    let output = run(Command::new("opusinfo").arg(&path), "opusinfo");
    playback_seconds(&String::from_utf8_lossy(&output))
        .unwrap_or_else(|| panic!("opusinfo said no playback length for {}", path.display()))
}

/// `Playback length: 0m:02.435s` as seconds.
fn playback_seconds(report: &str) -> Option<f64> {
    let length = report
        .lines()
        .find_map(|line| line.trim().strip_prefix("Playback length:"))?
        .trim()
        .trim_end_matches('s');
    let (minutes, seconds) = length.split_once("m:")?;
    Some(minutes.parse::<f64>().ok()? * 60.0 + seconds.parse::<f64>().ok()?)
}

fn run(command: &mut Command, tool: &str) -> Vec<u8> {
    let output = command.output().unwrap_or_else(|error| {
        panic!("{tool} cannot run ({error}): install it with `bash scripts/install-test-audio.sh`")
    });
    assert!(
        output.status.success(),
        "{tool} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Whether `bytes` begin as an Ogg stream does.
pub fn is_ogg(bytes: &[u8]) -> bool {
    bytes.starts_with(b"OggS")
}

/// Every audio attachment the inbox at `database` (a SQLite file) holds, with the text of
/// its message, oldest first: what a channel stored, before any turn ran.
pub async fn stored_audio(database: &std::path::Path) -> Vec<(String, hearth::ports::Attachment)> {
    use sqlx::Row;
    let url = format!("sqlite://{}", database.display());
    let pool = sqlx::SqlitePool::connect(&url)
        .await
        .expect("the inbox database opens");
    let rows = sqlx::query("SELECT text, extras FROM inbox ORDER BY seq")
        .fetch_all(&pool)
        .await
        .expect("the inbox is read");
    pool.close().await;
    rows.iter()
        .flat_map(|row| {
            let text: String = row.get("text");
            let extras: Option<String> = row.get("extras");
            let extras: hearth::ports::InboundExtras = extras
                .map(|json| serde_json::from_str(&json).expect("stored extras parse"))
                .unwrap_or_default();
            extras
                .attachments
                .into_iter()
                .filter(|attachment| attachment.kind == hearth::ports::AttachmentKind::Audio)
                .map(move |attachment| (text.clone(), attachment))
        })
        .collect()
}

pub fn borrowed(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect()
}

pub fn file<'a>(
    name: &'a str,
    file_name: &'a str,
    content_type: &'a str,
    bytes: &'a [u8],
) -> Part<'a> {
    Part {
        name,
        file: Some((file_name, content_type)),
        bytes,
    }
}

/// `POST /inbound` with `parts` as `multipart/form-data` and the API key.
pub async fn post_form(app: &Hearth, parts: &[Part<'_>]) -> (u16, Value) {
    post_form_to(&app.client, &app.base_url, parts)
        .await
        .expect("the form is posted")
}

/// `POST /inbound` to the hearth at `base_url`; `None` when no answer came (it was killed).
pub async fn post_form_to(
    client: &reqwest::Client,
    base_url: &str,
    parts: &[Part<'_>],
) -> Option<(u16, Value)> {
    let boundary = "hearth-test-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for part in parts {
        body.extend(format!("--{boundary}\r\n").as_bytes());
        match part.file {
            Some((file_name, content_type)) => body.extend(
                format!(
                    "Content-Disposition: form-data; name=\"{}\"; filename=\"{file_name}\"\r\n\
                     Content-Type: {content_type}\r\n\r\n",
                    part.name
                )
                .as_bytes(),
            ),
            None => body.extend(
                format!(
                    "Content-Disposition: form-data; name=\"{}\"\r\n\r\n",
                    part.name
                )
                .as_bytes(),
            ),
        }
        body.extend(part.bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").as_bytes());
    let response = client
        .post(format!("{base_url}/inbound"))
        .header("X-API-Key", API_KEY)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.unwrap_or(Value::Null)))
}

/// The overrides naming `server` as the transcription backend `whisper`, English spoken,
/// voice notes up to 1 MB on Telegram; then `extra`.
pub fn transcribing_on(
    server: &TranscriptionServer,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("HEARTH__LLMS__WHISPER__PROVIDER", "openai"),
        ("HEARTH__LLMS__WHISPER__KIND", "transcription"),
        ("HEARTH__LLMS__WHISPER__MODEL", "whisper-1"),
        ("HEARTH__LLMS__WHISPER__TIMEOUT_SECONDS", "5"),
        ("HEARTH__VOICE_NOTES__LANGUAGE", "en"),
        (
            "HEARTH__CHANNELS__TELEGRAM__MAX_ATTACHMENT_BYTES",
            "1048576",
        ),
    ]
    .iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect();
    env.push(("HEARTH__LLMS__WHISPER__BASE_URL".into(), server.base_url()));
    env.extend(
        extra
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string())),
    );
    env
}

pub fn field<'a>(name: &'a str, value: &'a str) -> Part<'a> {
    Part {
        name,
        file: None,
        bytes: value.as_bytes(),
    }
}

/// One part of a `multipart/form-data` body: a text field, or a file with its type.
pub struct Part<'a> {
    name: &'a str,
    file: Option<(&'a str, &'a str)>,
    bytes: &'a [u8],
}
