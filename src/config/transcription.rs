//! Voice notes in the configuration: `voice_notes` (how long a note may be, the language
//! spoken), what an `llms` entry is for (`kind: chat | transcription | embedding`; the
//! embedding entries' checks are memory's, `memory.rs`), and their checks:
//! the one transcription entry speaks the OpenAI-compatible `/v1/audio/transcriptions`, and
//! no key that names a chat model names it (profiles check their own keys, `profiles/`).

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::Problems;
use super::types::{HearthConfig, LlmProviderKind, named_enum_serde};

/// The longest voice note `voice_notes.max_duration_seconds` may allow: an hour of audio is
/// past what a family's message is, and past what hosted backends take in one file.
pub const MAX_VOICE_NOTE_SECONDS: u32 = 3_600;

/// What a model of `llms` is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LlmKind {
    /// Answers chat completions: a profile's model, its fallback, the intents classifier.
    #[default]
    Chat,
    /// Turns voice notes into text (`voice_notes`); at most one entry, named by nothing else.
    Transcription,
    /// Turns text into vectors for memory's search; `memory.embedding_model` names the one
    /// used, and no chat key may.
    Embedding,
}

impl LlmKind {
    const NAMES: &'static [&'static str] = &["chat", "transcription", "embedding"];

    /// The name used in the YAML file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Transcription => "transcription",
            Self::Embedding => "embedding",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "chat" => Some(Self::Chat),
            "transcription" => Some(Self::Transcription),
            "embedding" => Some(Self::Embedding),
            _ => None,
        }
    }

    /// What an entry of this kind does, said to whoever named it where a chat model belongs.
    pub(crate) fn what_it_does(self) -> &'static str {
        match self {
            Self::Chat => "answers a chat",
            Self::Transcription => "turns voice notes into text",
            Self::Embedding => "turns text into vectors for memory's search",
        }
    }
}

named_enum_serde!(LlmKind);

/// Voice notes: transcribed by the `llms` entry with `kind: transcription`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VoiceNotesConfig {
    /// Longer voice notes are refused with a message saying so, never sent to the backend.
    pub max_duration_seconds: u32,
    /// The language spoken (ISO 639-1, `en`), passed to the backend; unset: it guesses.
    pub language: Option<String>,
}

impl Default for VoiceNotesConfig {
    fn default() -> Self {
        Self {
            max_duration_seconds: 300,
            language: None,
        }
    }
}

impl HearthConfig {
    /// The `llms` entry voice notes are transcribed by, with its name; at most one after the
    /// checks.
    pub fn transcription_llm(&self) -> Option<(&str, &super::LlmModelConfig)> {
        self.llms
            .iter()
            .find(|(_, llm)| llm.kind == LlmKind::Transcription)
            .map(|(name, llm)| (name.as_str(), llm))
    }

    /// Why `name` cannot be the chat model a key names, when it is a transcription or an
    /// embedding entry.
    pub(crate) fn not_a_chat_model(&self, name: &str) -> Option<String> {
        let llm = self.llms.get(name)?;
        let the = match llm.kind {
            LlmKind::Chat => return None,
            LlmKind::Transcription => "the transcription entry",
            LlmKind::Embedding => "an embedding entry",
        };
        Some(format!(
            "{name:?} is {the} of llms (kind: {}), which {} and cannot answer a chat; name a \
             chat model here",
            llm.kind,
            llm.kind.what_it_does()
        ))
    }
}

/// The checks of `llms.<name>.kind`, `llms.<name>.cost_per_audio_minute` and `voice_notes`.
pub(crate) fn check_transcription(config: &HearthConfig, problems: &mut Problems) {
    let mut first: Option<&str> = None;
    for (name, llm) in &config.llms {
        let path = format!("llms.{name}");
        let cost = llm.cost_per_audio_minute;
        if !cost.is_finite() || cost < 0.0 {
            problems.push(
                format!("{path}.cost_per_audio_minute"),
                format!("must be a number of at least 0, found {cost}"),
            );
        }
        if llm.kind != LlmKind::Transcription {
            continue;
        }
        if llm.provider != LlmProviderKind::OpenAi {
            problems.push(
                format!("{path}.provider"),
                format!(
                    "{:?} cannot transcribe: a transcription entry speaks the OpenAI-compatible \
                     /v1/audio/transcriptions (OpenAI, Groq, a whisper.cpp or faster-whisper \
                     server); write provider: openai",
                    llm.provider.as_str()
                ),
            );
        }
        match first {
            None => first = Some(name),
            Some(first) => problems.push(
                format!("{path}.kind"),
                format!(
                    "llms.{first} is already the transcription entry; voice notes are \
                     transcribed by one entry, so write kind: transcription on only one of \
                     llms.{first} and llms.{name}"
                ),
            ),
        }
    }
    let voice = &config.voice_notes;
    if !(1..=MAX_VOICE_NOTE_SECONDS).contains(&voice.max_duration_seconds) {
        problems.push(
            "voice_notes.max_duration_seconds",
            format!(
                "{} is out of range: write a number of seconds from 1 to {MAX_VOICE_NOTE_SECONDS}",
                voice.max_duration_seconds
            ),
        );
    }
    if let Some(language) = &voice.language
        && !is_language_code(language)
    {
        problems.push(
            "voice_notes.language",
            format!(
                "{language:?} is not a language code: write its ISO 639 code in 2 or 3 \
                 lowercase letters (\"en\", \"de\"), or leave it out to let the backend guess"
            ),
        );
    }
}

fn is_language_code(language: &str) -> bool {
    (2..=3).contains(&language.len()) && language.bytes().all(|byte| byte.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_are_two_or_three_lowercase_letters() {
        for good in ["en", "de", "fil"] {
            assert!(is_language_code(good), "{good}");
        }
        for bad in ["", "e", "EN", "en-US", "engl", "é"] {
            assert!(!is_language_code(bad), "{bad}");
        }
    }
}
