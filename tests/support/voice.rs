//! Real voice notes for tests: a sentence spoken by espeak-ng into a WAV file and encoded
//! by opusenc as OGG/Opus, as a phone records one (installed by
//! `scripts/install-test-audio.sh`).

// The benchmarks compile the support modules too, without these tests.
#![allow(dead_code)]

use std::process::Command;

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
