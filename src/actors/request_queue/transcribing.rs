//! A voice note transcribed before its turn: its file is measured first (on the blocking
//! pool, within a deadline: `voice::audio_duration`), and the measured length, never the
//! one the platform stated, is held against `voice_notes.max_duration_seconds` and sent
//! with the audio for its cost; then the audio goes to the transcription backend
//! (`Transcribe`, through the LLM broker), the transcript is stored as the message's text
//! with its attachment and measured length, and only then is the turn routed, so a spoken
//! slash command picks its profile and a retry or another worker reads the transcript
//! instead of transcribing again. Unmeasurable, too long, silent or refused, the member is
//! told why (`voice::VoiceRefusal`); a backend that is down is a transient failure, retried
//! like a model that is down.

use std::path::PathBuf;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, Recipient};

use super::{QueuedTurn, RequestQueue};
use crate::config::VoiceNotesConfig;
use crate::ids::ConversationKey;
use crate::llm::{CallOrigin, LlmError, Transcribe};
use crate::ports::{Attachment, Inbound};
use crate::turn::TurnError;
use crate::voice::audio_duration::{measure_off_thread, whole_seconds};
use crate::voice::{self, VoiceRefusal};

/// Where voice notes are transcribed, and their limits.
pub struct VoiceNotes {
    pub transcriber: Recipient<Transcribe>,
    pub settings: VoiceNotesConfig,
}

/// The answer to `inbound` as its member sees it: what was understood of a voice note
/// first. The history keeps the model's own words.
pub(super) fn as_heard(inbound: &Inbound, answer: String) -> String {
    match voice::transcript_of(inbound) {
        Some(transcript) => voice::quoted_answer(transcript, &answer),
        None => answer,
    }
}

/// How long the voice note `attachment` of `inbound`, kept at `path`, plays, measured from
/// its file on the blocking pool whatever the platform stated; a file that cannot be
/// measured is refused before anything is sent anywhere.
async fn measured_seconds(
    inbound: &Inbound,
    attachment: &Attachment,
    path: PathBuf,
) -> Result<u32, TurnError> {
    let measured = measure_off_thread(path).await.map_err(|reason| {
        tracing::info!(inbox_id = %inbound.id, conversation = %inbound.conversation,
            %reason, "voice note refused: its length cannot be measured");
        TurnError::Voice(VoiceRefusal::Unmeasurable { reason })
    })?;
    let seconds = whole_seconds(measured);
    let stated = attachment.duration_seconds;
    if stated.is_some_and(|stated| stated != seconds) {
        tracing::info!(inbox_id = %inbound.id, conversation = %inbound.conversation,
            stated_seconds = stated, measured_seconds = seconds,
            "voice note's stated length differs from its file's; the measured one counts");
    } else {
        tracing::debug!(inbox_id = %inbound.id, stated_seconds = stated,
            measured_ms = measured.as_millis() as u64, "voice note measured");
    }
    Ok(seconds)
}

impl RequestQueue {
    /// Voice notes transcribed by `voice_notes.transcriber` before their turn.
    pub fn with_voice_notes(mut self, voice_notes: VoiceNotes) -> Self {
        self.voice_notes = Some(voice_notes);
        self
    }

    /// Whether `turn` must be transcribed before it runs: a new message (not a resumed
    /// turn, not a scheduled task's) with a voice note not yet transcribed (one the channel
    /// could not keep is refused there, saying why).
    pub(super) fn needs_transcript(turn: &QueuedTurn) -> bool {
        turn.resume.is_none()
            && turn.inbound.extras.profile_id.is_none()
            && voice::untranscribed(&turn.inbound).is_some()
    }

    /// Transcribe `turn`'s voice note and store the transcript, then start the turn; or
    /// end it with the failure. The lane stays taken meanwhile: the conversation's order
    /// holds.
    pub(super) fn transcribe_first(
        &mut self,
        key: ConversationKey,
        mut turn: QueuedTurn,
        ctx: &mut Context<Self>,
    ) {
        let Some((index, attachment)) = voice::untranscribed(&turn.inbound) else {
            return self.start_turn(key, turn, ctx);
        };
        let Some(voice_notes) = &self.voice_notes else {
            let error = TurnError::Transcription(LlmError::NoTranscription);
            return self.turn_finished(turn, Err(error), ctx);
        };
        let limit = voice_notes.settings.max_duration_seconds;
        let path = match voice::kept_file(attachment) {
            Ok(path) => path,
            Err(refusal) => return self.turn_finished(turn, Err(TurnError::Voice(refusal)), ctx),
        };
        let attachment = attachment.clone();
        let origin = CallOrigin {
            profile_id: None,
            conversation_key: Some(key.clone()),
            member_id: Some(turn.inbound.member_id.clone()),
        };
        let transcriber = voice_notes.transcriber.clone();
        let inbox = self.inbox.clone();
        let router = self.router.clone();
        let mut inbound = turn.inbound.clone();
        let work = async move {
            let seconds = measured_seconds(&inbound, &attachment, path.clone()).await?;
            if let Some(refusal) = voice::too_long(seconds, limit) {
                return Err(TurnError::Voice(refusal));
            }
            // The length every later reading of the message sees, and the cost is counted on.
            inbound.extras.attachments[index].duration_seconds = Some(seconds);
            let request = Transcribe {
                audio: voice::audio_file(&attachment, path, seconds),
                origin,
            };
            let transcript = transcriber
                .send(request)
                .await
                .map_err(|error| TurnError::Mailbox(error.to_string()))?
                .map_err(TurnError::Transcription)?;
            let words = transcript.text.trim();
            if words.is_empty() {
                return Err(TurnError::Voice(VoiceRefusal::Silent));
            }
            inbound.text = voice::text_with_transcript(&inbound.text, words, |command| {
                router.is_command(command)
            });
            inbound.extras.attachments[index].transcript = Some(words.to_string());
            inbox
                .store_transcript(&inbound.id, &inbound.text, &inbound.extras)
                .await?;
            tracing::info!(inbox_id = %inbound.id, conversation = %inbound.conversation,
                chars = words.chars().count(), "voice note transcribed");
            Ok(inbound)
        };
        ctx.spawn(
            work.into_actor(self)
                .map(move |transcribed, act, ctx| match transcribed {
                    Ok(inbound) => {
                        turn.inbound = inbound;
                        act.start_turn(key, turn, ctx);
                    }
                    Err(error) => act.turn_finished(turn, Err(error), ctx),
                }),
        );
    }
}
