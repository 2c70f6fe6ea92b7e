//! The transcription entry of `llms` tried once: a tenth of a second of silence (a WAV made
//! here, 16-bit PCM mono) sent through the transcriber hearth runs with. Any text back, or a
//! refusal of that audio itself (a 4xx other than 401, 403, 404 and 429), shows the server
//! answers and takes the key; a refused key, a wrong url or model, or no answer fails.

use std::time::Instant;

use super::super::{CHECK_TIMEOUT, Check, within};
use super::what_to_fix;
use crate::config::{LlmModelConfig, LoadedConfig};
use crate::llm::{AudioFile, LlmError};
use crate::redaction::redact_url_password;

const SAMPLE_RATE: u32 = 16_000;
/// A tenth of a second.
const SAMPLES: u32 = SAMPLE_RATE / 10;

pub(super) async fn check(
    loaded: &LoadedConfig,
    subject: &str,
    name: &str,
    config: &LlmModelConfig,
) -> Check {
    let entry = match crate::app::build_transcription(loaded) {
        Ok(Some(entry)) => entry,
        // Only a second transcription entry, which validation refuses, could be left out.
        Ok(None) => return Check::skipped(subject, "skipped (not the transcription entry)"),
        Err(error) => return Check::failed(subject, error.to_string()),
    };
    let look_at = format!(
        "llms.{name}.base_url and that the server at {} runs",
        redact_url_password(&config.base_url)
    );
    // The transcriber reads a file, as it reads a voice note a channel kept.
    let path = std::env::temp_dir().join(format!(
        "hearth-doctor-{}-{}.wav",
        std::process::id(),
        fastrand::u64(..)
    ));
    if let Err(error) = tokio::fs::write(&path, silent_wav()).await {
        return Check::failed(
            subject,
            format!("cannot write the test audio {}: {error}", path.display()),
        );
    }
    let audio = AudioFile {
        path: path.clone(),
        file_name: "silence.wav".into(),
        mime_type: Some("audio/wav".into()),
        size_bytes: u64::try_from(silent_wav().len()).unwrap_or(u64::MAX),
        duration_seconds: Some(0),
    };
    let started = Instant::now();
    let asked = async {
        let answer = entry
            .transcriber
            .transcribe(&audio, entry.language.as_deref())
            .await;
        let at = format!(
            "{} at {}",
            entry.transcriber.wire(),
            redact_url_password(&config.base_url)
        );
        let took = started.elapsed().as_millis();
        match answer {
            Ok(_) => Check::ok(
                subject,
                format!(
                    "{} transcribed a test audio in {took} ms ({at})",
                    entry.model
                ),
            ),
            Err(LlmError::Status { status, .. }) if audio_refused(status) => Check::ok(
                subject,
                format!(
                    "{} answered in {took} ms and took the key; it refused the silent test \
                     audio ({status}), which a voice note is not ({at})",
                    entry.model
                ),
            ),
            Err(error) => Check::failed(subject, what_to_fix(name, config, &error)),
        }
    };
    let check = within(CHECK_TIMEOUT, subject, &look_at, asked).await;
    let _ = tokio::fs::remove_file(&path).await;
    check
}

/// A refusal about the audio, not the server, the key or the model.
fn audio_refused(status: u16) -> bool {
    (400..500).contains(&status) && ![401, 403, 404, 429].contains(&status)
}

/// A RIFF/WAVE file of silence: the 44-byte canonical header, then the zero samples.
fn silent_wav() -> Vec<u8> {
    const BYTES_PER_SAMPLE: u32 = 2;
    let data_len = SAMPLES * BYTES_PER_SAMPLE;
    let mut wav = Vec::with_capacity(44 + data_len as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // the fmt chunk's size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&SAMPLE_RATE.to_le_bytes());
    wav.extend_from_slice(&(SAMPLE_RATE * BYTES_PER_SAMPLE).to_le_bytes()); // bytes per second
    wav.extend_from_slice(&(BYTES_PER_SAMPLE as u16).to_le_bytes()); // block align
    wav.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.resize(44 + data_len as usize, 0);
    wav
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_audio_is_a_tenth_of_a_second_of_16_bit_mono_pcm() {
        let wav = silent_wav();
        assert_eq!(wav.len(), 44 + 3_200);
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(
            u32::from_le_bytes(wav[4..8].try_into().unwrap()),
            36 + 3_200
        );
        assert_eq!(&wav[8..16], b"WAVEfmt ");
        assert_eq!(u16::from_le_bytes([wav[22], wav[23]]), 1, "channels");
        assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 16_000);
        assert_eq!(u16::from_le_bytes([wav[34], wav[35]]), 16, "bits");
        assert_eq!(&wav[36..40], b"data");
        assert!(wav[44..].iter().all(|byte| *byte == 0));
    }

    #[test]
    fn only_a_refusal_of_the_audio_counts_as_an_answer() {
        assert!(audio_refused(400) && audio_refused(415) && audio_refused(422));
        for status in [401, 403, 404, 429, 500, 200] {
            assert!(!audio_refused(status), "{status}");
        }
    }
}
