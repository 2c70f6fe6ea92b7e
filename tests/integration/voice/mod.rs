//! Voice notes: transcription, a note's length measured from its file, a kill while
//! transcribing.

mod transcription;
mod voice_kill;
mod voice_measured;
mod voice_notes;
mod voice_transcribed;
