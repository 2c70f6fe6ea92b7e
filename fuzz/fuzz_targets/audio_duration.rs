//! A voice note's file as a member (or a platform) hands it to hearth, measured by
//! `hearth::voice::audio_duration` before it is sent anywhere: OGG (Opus, Vorbis), WAV,
//! MP3, M4A, FLAC through symphonia's demuxers.
//!
//! Input: the file's bytes.
//!
//! Properties: no input panics, overflows or hangs; the answer is a duration or a plain
//! refusal (one short line saying what is wrong with the file); a duration is bounded (its
//! whole seconds, as limits and bills count them, are exact, not a saturated maximum);
//! measuring ends within `MEASURE_TIME_LIMIT` (and a second's slack); the file measured from
//! disk gives the same answer as its bytes in memory.
#![no_main]

use std::time::{Duration, Instant};

use hearth::voice::audio_duration::{
    AudioDurationError, MEASURE_TIME_LIMIT, measure_audio_bytes, measure_audio_file, whole_seconds,
};
use libfuzzer_sys::fuzz_target;

/// The longest refusal said to the member.
const MAX_REFUSAL_CHARS: usize = 200;

fn check_refusal(error: &AudioDurationError) {
    let said = error.to_string();
    assert!(
        said.starts_with("its file ") && !said.contains('\n'),
        "not a plain refusal: {said:?}"
    );
    assert!(
        said.chars().count() <= MAX_REFUSAL_CHARS,
        "a refusal of {} characters: {said:?}",
        said.chars().count()
    );
}

fuzz_target!(|data: &[u8]| {
    let began = Instant::now();
    let measured = measure_audio_bytes(data);
    let took = began.elapsed();
    assert!(
        took <= MEASURE_TIME_LIMIT + Duration::from_secs(1),
        "measuring took {took:?}"
    );
    match &measured {
        Ok(duration) => {
            let seconds = whole_seconds(*duration);
            assert!(
                seconds < u32::MAX && u64::from(seconds) + 1 >= duration.as_secs(),
                "an unbounded duration: {duration:?}"
            );
        }
        Err(AudioDurationError::TooSlow { .. }) => {
            panic!("a file of {} bytes measured too slowly", data.len())
        }
        Err(error) => check_refusal(error),
    }
    let path = &hearth_fuzz_checks::scratch::folder().join("voice-note");
    std::fs::write(path, data).expect("the scratch file is written");
    assert_eq!(
        measure_audio_file(path),
        measured,
        "from disk the file measures otherwise"
    );
});
