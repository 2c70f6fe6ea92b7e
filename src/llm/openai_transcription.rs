//! The OpenAI-compatible transcription wire format (OpenAI, Groq, a whisper.cpp or
//! faster-whisper server): one audio file as `POST {base_url}/audio/transcriptions`, a
//! multipart form of `file`, `model`, `response_format=json` and `language` when
//! configured, answered by `{"text": "..."}`. Nothing outside this file knows this shape.

use std::fmt;

use async_trait::async_trait;
use reqwest::multipart::{Form, Part};
use serde::Deserialize;

use super::{
    AudioFile, LlmError, ProviderSettings, Transcriber, Transcript, join_url, send_for_json,
    without_key,
};

/// Sent when the channel did not say what the audio is: the server reads the bytes anyway.
const UNKNOWN_AUDIO_TYPE: &str = "application/octet-stream";

/// A `Transcriber` speaking OpenAI's `/v1/audio/transcriptions`.
pub struct OpenAiTranscriber {
    settings: ProviderSettings,
    url: String,
    client: reqwest::Client,
}

impl OpenAiTranscriber {
    /// The client is shared with the chat providers, so all reuse one connection pool.
    pub fn new(settings: ProviderSettings, client: reqwest::Client) -> Self {
        // The same joining rule as chat's `chat/completions`, so one `base_url` serves both.
        let url = join_url(&settings.base_url, "audio/transcriptions");
        OpenAiTranscriber {
            settings,
            url,
            client,
        }
    }

    async fn form(&self, audio: &AudioFile, language: Option<&str>) -> Result<Form, LlmError> {
        // Read whole: a voice note is small (bounded by `voice_notes.max_duration_seconds`
        // and the channel's attachment limit), and a retry sends the same bytes again.
        let bytes = tokio::fs::read(&audio.path)
            .await
            .map_err(|error| LlmError::AudioFile(format!("{}: {error}", audio.path.display())))?;
        // A type the channel got wrong must not cost the transcription: sent as unknown.
        let mime_type = audio
            .mime_type
            .as_deref()
            .filter(|mime_type| is_media_type(mime_type))
            .unwrap_or(UNKNOWN_AUDIO_TYPE);
        let file = Part::bytes(bytes)
            .file_name(audio.file_name.clone())
            .mime_str(mime_type)
            .map_err(|error| LlmError::AudioFile(format!("media type {mime_type:?}: {error}")))?;
        let form = Form::new()
            .part("file", file)
            .text("model", self.settings.model.clone())
            .text("response_format", "json");
        Ok(match language {
            Some(language) => form.text("language", language.to_owned()),
            None => form,
        })
    }
}

// By hand: the settings hold the API key, which is never printed.
impl fmt::Debug for OpenAiTranscriber {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiTranscriber")
            .field("url", &self.url)
            .field("model", &self.settings.model)
            .field("timeout", &self.settings.timeout)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Transcriber for OpenAiTranscriber {
    fn wire(&self) -> &'static str {
        "openai"
    }

    async fn transcribe(
        &self,
        audio: &AudioFile,
        language: Option<&str>,
    ) -> Result<Transcript, LlmError> {
        let form = self.form(audio, language).await?;
        let http = self.client.post(&self.url).multipart(form);
        let http = match &self.settings.api_key {
            Some(key) => http.bearer_auth(key),
            None => http,
        };
        let answer: WireTranscription = send_for_json(http, self.settings.timeout)
            .await
            .map_err(|error| without_key(error, self.settings.api_key.as_deref()))?;
        Ok(Transcript { text: answer.text })
    }
}

/// `type/subtype`, as a multipart header takes it.
fn is_media_type(text: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&byte))
    };
    // A header value holds no control characters, parameters included.
    if text.bytes().any(|byte| byte.is_ascii_control()) {
        return false;
    }
    let essence = text.split(';').next().unwrap_or_default().trim();
    essence
        .split_once('/')
        .is_some_and(|(kind, subtype)| token(kind) && token(subtype))
}

#[derive(Deserialize)]
struct WireTranscription {
    text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_s_odd_media_type_is_sent_as_unknown() {
        for good in [
            "audio/ogg",
            "audio/ogg; codecs=opus",
            "audio/x-m4a",
            "audio/mp4",
        ] {
            assert!(is_media_type(good), "{good}");
        }
        for bad in ["", "ogg", "audio/", "/ogg", "audio ogg/x", "audio/ogg\n"] {
            assert!(!is_media_type(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_key_is_never_printed() {
        let transcriber = OpenAiTranscriber::new(
            ProviderSettings {
                base_url: "http://127.0.0.1:9/v1/".into(),
                model: "whisper-1".into(),
                api_key: Some("sk-very-secret".into()),
                timeout: std::time::Duration::from_secs(5),
                max_tokens: None,
            },
            reqwest::Client::new(),
        );
        let printed = format!("{transcriber:?}");
        assert!(!printed.contains("sk-very-secret"), "{printed}");
        assert!(printed.contains("http://127.0.0.1:9/v1/audio/transcriptions"));
    }
}
