//! Real files of every format members send, made by the tools
//! `scripts/install-test-audio.sh` installs (espeak-ng, opusenc, ffmpeg), measured against
//! what ffprobe says; files cut short, damaged, empty or of no audio format refused.

use std::path::Path;
use std::process::Command;

use super::*;

/// Seconds of the tone every format is made from.
const TONE_SECONDS: f64 = 7.0;

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

/// A 440 Hz tone of `TONE_SECONDS` encoded by ffmpeg into `file_name` (its extension picks
/// the container) with `codec`.
fn tone(folder: &Path, file_name: &str, codec: &str) -> Vec<u8> {
    let path = folder.join(file_name);
    run(
        Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
            .arg(format!("sine=frequency=440:duration={TONE_SECONDS}"))
            .args(["-ac", "1", "-c:a", codec])
            .arg(&path),
        "ffmpeg",
    );
    std::fs::read(&path).expect("ffmpeg wrote the file")
}

/// How long ffprobe says `bytes` play.
fn ffprobe_seconds(folder: &Path, bytes: &[u8], file_name: &str) -> f64 {
    let path = folder.join(format!("probe-{file_name}"));
    std::fs::write(&path, bytes).unwrap();
    let said = run(
        Command::new("ffprobe")
            .args(["-v", "error", "-show_entries", "format=duration"])
            .args(["-of", "default=noprint_wrappers=1:nokey=1"])
            .arg(&path),
        "ffprobe",
    );
    String::from_utf8_lossy(&said)
        .trim()
        .parse()
        .expect("ffprobe printed seconds")
}

fn assert_close(measured: Duration, expected: f64, what: &str) {
    let measured = measured.as_secs_f64();
    assert!(
        (measured - expected).abs() < 0.1,
        "{what}: measured {measured} s, expected {expected} s"
    );
}

/// Every format, as ffmpeg makes it.
const FORMATS: &[(&str, &str)] = &[
    ("tone.opus.ogg", "libopus"),
    ("tone.vorbis.ogg", "libvorbis"),
    ("tone.wav", "pcm_s16le"),
    ("tone.mp3", "libmp3lame"),
    ("tone.m4a", "aac"),
    ("tone.flac", "flac"),
];

#[test]
fn every_format_is_measured_as_ffprobe_measures_it() {
    let folder = tempfile::tempdir().unwrap();
    for (file_name, codec) in FORMATS {
        let bytes = tone(folder.path(), file_name, codec);
        let reference = ffprobe_seconds(folder.path(), &bytes, file_name);
        assert_close(measure_audio_bytes(&bytes).unwrap(), reference, file_name);
        assert_close(
            measure_audio_file(&folder.path().join(file_name)).unwrap(),
            TONE_SECONDS,
            file_name,
        );
    }
}

#[test]
fn a_spoken_opus_voice_note_is_measured_as_opusinfo_would() {
    let folder = tempfile::tempdir().unwrap();
    let wav = folder.path().join("said.wav");
    let ogg = folder.path().join("said.ogg");
    run(
        Command::new("espeak-ng")
            .arg("-w")
            .arg(&wav)
            .arg("Please buy milk and bread on the way home"),
        "espeak-ng",
    );
    run(
        Command::new("opusenc").arg("--quiet").arg(&wav).arg(&ogg),
        "opusenc",
    );
    let wav_bytes = std::fs::read(&wav).unwrap();
    let ogg_bytes = std::fs::read(&ogg).unwrap();
    let reference = ffprobe_seconds(folder.path(), &wav_bytes, "said.wav");
    assert_close(measure_audio_bytes(&wav_bytes).unwrap(), reference, "wav");
    assert_close(measure_audio_bytes(&ogg_bytes).unwrap(), reference, "ogg");
}

#[test]
fn a_wav_file_written_here_lasts_its_samples_over_its_rate() {
    assert_close(
        measure_audio_bytes(&wav_of(8_000, 8_000 * 3)).unwrap(),
        3.0,
        "3 s",
    );
    assert_close(
        measure_audio_bytes(&wav_of(16_000, 4_000)).unwrap(),
        0.25,
        "a quarter second",
    );
}

/// A mono 16-bit PCM WAV file of `samples` samples at `rate`, as a recorder writes one.
fn wav_of(rate: u32, samples: u32) -> Vec<u8> {
    let data_bytes = samples * 2;
    let mut wav = b"RIFF".to_vec();
    wav.extend((36 + data_bytes).to_le_bytes());
    wav.extend(b"WAVEfmt ");
    wav.extend(16u32.to_le_bytes());
    wav.extend(1u16.to_le_bytes()); // PCM
    wav.extend(1u16.to_le_bytes()); // mono
    wav.extend(rate.to_le_bytes());
    wav.extend((rate * 2).to_le_bytes());
    wav.extend(2u16.to_le_bytes());
    wav.extend(16u16.to_le_bytes());
    wav.extend(b"data");
    wav.extend(data_bytes.to_le_bytes());
    wav.extend((0..samples).flat_map(|index| ((index % 200) as i16 * 100).to_le_bytes()));
    wav
}

#[test]
fn a_file_cut_short_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let measured: Vec<_> = FORMATS
        .iter()
        .map(|(file_name, codec)| {
            let bytes = tone(folder.path(), file_name, codec);
            let cut = &bytes[..bytes.len() * 6 / 10];
            (*file_name, measure_audio_bytes(cut))
        })
        .collect();
    // An M4A file's index (its `moov` box) comes last, as ffmpeg writes it: cut, no
    // reader takes the file at all.
    assert!(
        measured
            .iter()
            .all(|(file_name, measured)| match *file_name {
                "tone.m4a" => *measured == Err(AudioDurationError::UnknownFormat),
                _ => *measured == Err(AudioDurationError::Truncated),
            }),
        "every file cut short is refused: {measured:?}"
    );
    // A WAV header that says more than the file holds.
    let wav = wav_of(8_000, 8_000 * 10);
    assert_eq!(
        measure_audio_bytes(&wav[..8_000]),
        Err(AudioDurationError::Truncated)
    );
}

#[test]
fn garbage_empty_and_other_files_are_refused() {
    assert_eq!(measure_audio_bytes(b""), Err(AudioDurationError::Empty));
    let noise: Vec<u8> = (0..50_000u32)
        .map(|index| (index.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    assert!(measure_audio_bytes(&noise).is_err());
    assert_eq!(
        measure_audio_bytes(b"Hello, this is a text file and no audio at all.\n"),
        Err(AudioDurationError::UnknownFormat)
    );
    // A PNG's signature and header.
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    assert_eq!(
        measure_audio_bytes(png),
        Err(AudioDurationError::UnknownFormat)
    );
    // An Ogg page's magic followed by nothing that parses.
    let mut fake_ogg = b"OggS\0\x02".to_vec();
    fake_ogg.extend([0xab; 300]);
    assert!(measure_audio_bytes(&fake_ogg).is_err());
    let folder = tempfile::tempdir().unwrap();
    assert!(matches!(
        measure_audio_file(&folder.path().join("missing.ogg")),
        Err(AudioDurationError::Unreadable(_))
    ));
}

#[test]
fn measuring_stops_at_its_deadline_and_its_read_budget() {
    let wav = wav_of(8_000, 8_000 * 2);
    let past = Instant::now();
    assert_eq!(
        measure(std::io::Cursor::new(&wav[..]), wav.len() as u64, past),
        Err(AudioDurationError::TooSlow {
            limit: MEASURE_TIME_LIMIT
        })
    );
    // A source that says it is far shorter than it reads: the budget, from the length it
    // says, runs out.
    let huge = wav_of(8_000, 8_000 * 300);
    let later = Instant::now() + MEASURE_TIME_LIMIT;
    assert!(matches!(
        measure(std::io::Cursor::new(&huge[..]), 44, later),
        Err(AudioDurationError::ReadTooMuch { .. })
    ));
}

#[tokio::test]
async fn measuring_off_the_thread_gives_the_same_length() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("note.wav");
    std::fs::write(&path, wav_of(8_000, 8_000 * 5)).unwrap();
    let measured = measure_off_thread(path).await.unwrap();
    assert_close(measured, 5.0, "off the thread");
    assert_eq!(whole_seconds(measured), 5);
    assert_eq!(
        measure_off_thread(folder.path().join("gone.wav"))
            .await
            .map_err(|error| error.to_string()),
        Err("its file could not be read (entity not found)".to_string())
    );
}
