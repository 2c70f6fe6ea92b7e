//! Voice notes, the domain: which audio of a message is transcribed, how long it plays as
//! measured from its file (`audio_duration.rs`), the message's text once it is transcribed
//! (a spoken slash command read as typed), the quote of what was understood that goes
//! before the answer, and what the member is told when a voice note cannot be understood.
//! The request queue measures and transcribes (`actors/request_queue/transcribing.rs`);
//! this module decides everything it says and writes.

pub mod audio_duration;

use std::fmt::Write;
use std::path::PathBuf;

use crate::llm::{AudioFile, LlmError};
use crate::ports::{Attachment, AttachmentKind, Inbound};
use audio_duration::AudioDurationError;

/// The longest quote of a transcript shown before the answer; the model reads it all.
const MAX_QUOTE_CHARS: usize = 300;

/// What the member hears when a voice note cannot be transcribed now and is kept.
pub const TRANSCRIPTION_DELAYED: &str = "I can't listen to your voice note right now: \
    the transcription service is not answering. I've kept it and will try again soon.";

/// Why a voice note will not be transcribed, each told to the member as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VoiceRefusal {
    #[error(
        "That voice note is {} long, and I can only listen to voice notes up to {}. \
         Please send a shorter one, or type your message.",
        said_duration(*seconds),
        said_duration(*limit)
    )]
    TooLong { seconds: u32, limit: u32 },
    #[error(
        "I couldn't get that voice note: {note}. Please type your message, or send a shorter voice note."
    )]
    NotKept { note: String },
    #[error(
        "I couldn't tell how long that voice note plays: {reason}. Please record it again, \
         or type your message."
    )]
    Unmeasurable { reason: AudioDurationError },
    #[error(
        "I can't listen to voice notes here: no transcription service is set up. \
         Please type your message."
    )]
    NoBackend,
    #[error("I couldn't hear any words in that voice note. Please try again, or type it.")]
    Silent,
    #[error(
        "Sorry, I couldn't make out that voice note (the transcription service refused it). \
         Please try again, or type it."
    )]
    Refused,
    #[error(
        "Sorry, I still couldn't listen to your voice note: the transcription service \
         isn't answering. Please send it again later, or type it."
    )]
    GaveUp,
}

impl VoiceRefusal {
    /// The refusal of a transcription that failed for good (`transient` is false, or the
    /// attempts are used up).
    pub fn of_failure(error: &LlmError) -> Self {
        match error {
            LlmError::NoTranscription => VoiceRefusal::NoBackend,
            // Kept on another machine's disk, or removed: the file is what is missing.
            LlmError::AudioFile(_) => VoiceRefusal::NotKept {
                note: "its file could not be read".into(),
            },
            error if error.is_transient() => VoiceRefusal::GaveUp,
            _ => VoiceRefusal::Refused,
        }
    }
}

fn said_duration(seconds: u32) -> String {
    match (seconds / 60, seconds % 60) {
        (0, seconds) => format!("{seconds} s"),
        (minutes, 0) => format!("{minutes} min"),
        (minutes, seconds) => format!("{minutes} min {seconds} s"),
    }
}

/// The audio attachment of `inbound` still waiting for its transcript, with its index.
pub fn untranscribed(inbound: &Inbound) -> Option<(usize, &Attachment)> {
    inbound
        .extras
        .attachments
        .iter()
        .enumerate()
        .find(|(_, attachment)| {
            attachment.kind == AttachmentKind::Audio && attachment.transcript.is_none()
        })
}

/// Where the file of `attachment` is kept; why it is not, when the channel could not keep
/// it (too large, the download failed).
pub fn kept_file(attachment: &Attachment) -> Result<PathBuf, VoiceRefusal> {
    match &attachment.path {
        Some(path) => Ok(PathBuf::from(path)),
        None => {
            let note = attachment
                .note
                .as_deref()
                .unwrap_or("it was not downloaded");
            Err(VoiceRefusal::NotKept {
                note: note.to_string(),
            })
        }
    }
}

/// `attachment`, kept at `path`, as the transcription backend gets it, with the length
/// measured from its file: what the broker counts its cost on.
pub fn audio_file(attachment: &Attachment, path: PathBuf, measured_seconds: u32) -> AudioFile {
    AudioFile {
        path,
        file_name: attachment.file_name.clone(),
        mime_type: attachment.mime_type.clone(),
        size_bytes: attachment.size_bytes,
        duration_seconds: Some(measured_seconds),
    }
}

/// The refusal of a voice note measured at `seconds` when it plays longer than `limit`.
pub fn too_long(seconds: u32, limit: u32) -> Option<VoiceRefusal> {
    (seconds > limit).then_some(VoiceRefusal::TooLong { seconds, limit })
}

/// The message's text once its voice note is transcribed: the words spoken (a spoken
/// slash command written as typed), then a caption it came with; a typed slash command
/// in the caption stays first, so it still picks the profile.
pub fn text_with_transcript(
    caption: &str,
    transcript: &str,
    is_command: impl Fn(&str) -> bool,
) -> String {
    let spoken = spoken_command(transcript, &is_command).unwrap_or_else(|| transcript.to_string());
    let caption = caption.trim();
    if caption.is_empty() {
        spoken
    } else if caption.starts_with('/') {
        format!("{caption} {spoken}")
    } else {
        format!("{spoken}\n\n{caption}")
    }
}

/// "Slash focused, what's on today?" or "/Focused. What's on today?" as `/focused
/// what's on today?`, when `focused` is a command; `None` otherwise. Transcribers write
/// a spoken command either way, with the punctuation of speech.
fn spoken_command(transcript: &str, is_command: &impl Fn(&str) -> bool) -> Option<String> {
    let speech = transcript.trim_start();
    let (said_slash, after) = match speech.strip_prefix('/') {
        Some(after) => (true, after),
        None => {
            let (first, after) = speech.split_once(char::is_whitespace)?;
            (bare_word(first).eq_ignore_ascii_case("slash"), after)
        }
    };
    if !said_slash {
        return None;
    }
    let after = after.trim_start_matches(|c: char| c.is_whitespace() || is_pause(c));
    let (word, rest) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
    let command = bare_word(word).to_lowercase();
    if command.is_empty() || !is_command(&format!("/{command}")) {
        return None;
    }
    let rest = rest.trim();
    Some(if rest.is_empty() {
        format!("/{command}")
    } else {
        format!("/{command} {rest}")
    })
}

fn is_pause(c: char) -> bool {
    matches!(c, ',' | '.' | '!' | '?' | ':' | ';' | '-' | '…')
}

fn bare_word(word: &str) -> &str {
    word.trim_matches(is_pause)
}

/// The answer as the member sees it: what was understood, quoted and bounded, then the
/// answer.
pub fn quoted_answer(transcript: &str, answer: &str) -> String {
    let transcript = transcript.trim();
    let mut quote: String = transcript.chars().take(MAX_QUOTE_CHARS).collect();
    if quote.len() < transcript.len() {
        quote.push('…');
    }
    let mut said = String::new();
    let _ = write!(said, "🎤 “{quote}”\n\n{answer}");
    said
}

/// The transcript of `inbound`'s voice note, once transcribed.
pub fn transcript_of(inbound: &Inbound) -> Option<&str> {
    inbound
        .extras
        .attachments
        .iter()
        .find(|attachment| attachment.kind == AttachmentKind::Audio)
        .and_then(|attachment| attachment.transcript.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_command(command: &str) -> bool {
        matches!(command, "/focused" | "/secure")
    }

    #[test]
    fn a_spoken_slash_command_is_read_as_typed() {
        for (transcript, text) in [
            (
                "Slash focused, what's on today?",
                "/focused what's on today?",
            ),
            (
                "slash Focused. What's on today?",
                "/focused What's on today?",
            ),
            ("/Focused. What's on today?", "/focused What's on today?"),
            ("/focused what's on today?", "/focused what's on today?"),
            ("Slash, secure.", "/secure"),
        ] {
            assert_eq!(text_with_transcript("", transcript, is_command), text);
        }
    }

    #[test]
    fn words_that_only_look_like_a_command_stay_as_spoken() {
        for transcript in [
            "Slash the prices, focused on milk.",
            "slash unknown do it",
            "Remind me to buy milk.",
            "slash",
        ] {
            assert_eq!(text_with_transcript("", transcript, is_command), transcript);
        }
    }

    #[test]
    fn a_caption_follows_the_words_unless_it_is_a_command() {
        assert_eq!(
            text_with_transcript(" for Bob ", "Buy milk.", is_command),
            "Buy milk.\n\nfor Bob"
        );
        assert_eq!(
            text_with_transcript("/secure", "Delete the file.", is_command),
            "/secure Delete the file."
        );
    }

    #[test]
    fn the_quote_is_bounded_and_goes_first() {
        assert_eq!(
            quoted_answer(" Remind me to buy milk. ", "Done."),
            "🎤 “Remind me to buy milk.”\n\nDone."
        );
        let long = "word ".repeat(200);
        let quoted = quoted_answer(&long, "ok");
        assert!(quoted.contains("…”"), "{quoted}");
        assert!(quoted.chars().count() < MAX_QUOTE_CHARS + 20);
    }

    #[test]
    fn refusals_say_the_limits_in_words() {
        let refusal = VoiceRefusal::TooLong {
            seconds: 421,
            limit: 300,
        };
        assert_eq!(
            refusal.to_string(),
            "That voice note is 7 min 1 s long, and I can only listen to voice notes up to \
             5 min. Please send a shorter one, or type your message."
        );
        assert_eq!(
            VoiceRefusal::of_failure(&LlmError::NoTranscription),
            VoiceRefusal::NoBackend
        );
        assert_eq!(
            VoiceRefusal::of_failure(&LlmError::Timeout(std::time::Duration::from_secs(1))),
            VoiceRefusal::GaveUp
        );
        assert_eq!(
            VoiceRefusal::of_failure(&LlmError::Decode("x".into())),
            VoiceRefusal::Refused
        );
    }
}
