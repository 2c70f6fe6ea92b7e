//! A voice note transcribed before its turn: the audio goes to the transcription backend
//! (`Transcribe`, through the LLM broker), the transcript is stored as the message's text
//! with its attachment, and only then is the turn routed, so a spoken slash command picks
//! its profile and a retry or another worker reads the transcript instead of transcribing
//! again. Too long, silent or refused, the member is told why (`voice::VoiceRefusal`); a
//! backend that is down is a transient failure, retried like a model that is down.

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, Recipient};

use super::{QueuedTurn, RequestQueue};
use crate::config::VoiceNotesConfig;
use crate::ids::ConversationKey;
use crate::llm::{CallOrigin, LlmError, Transcribe};
use crate::ports::Inbound;
use crate::turn::TurnError;
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
        if let Some(refusal) = voice::too_long(attachment, limit) {
            return self.turn_finished(turn, Err(TurnError::Voice(refusal)), ctx);
        }
        let audio = match voice::audio_file(attachment) {
            Ok(audio) => audio,
            Err(refusal) => return self.turn_finished(turn, Err(TurnError::Voice(refusal)), ctx),
        };
        let request = Transcribe {
            audio,
            origin: CallOrigin {
                profile_id: None,
                conversation_key: Some(key.clone()),
                member_id: Some(turn.inbound.member_id.clone()),
            },
        };
        let transcriber = voice_notes.transcriber.clone();
        let inbox = self.inbox.clone();
        let router = self.router.clone();
        let mut inbound = turn.inbound.clone();
        let work = async move {
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
