//! How long an audio file plays, measured from the file itself with symphonia's demuxers
//! (OGG with Opus or Vorbis, WAV, MP3, M4A, FLAC), never taken from what a platform says.
//!
//! The container's own length (frames over its time base) is read first; then every packet
//! of the audio track is read to the end, without decoding, so a file cut short is refused
//! and a container that says nothing (or says less than it holds) is measured by its
//! packets: the longer of the two counts, since a backend hears every packet. A file that
//! cannot be measured is an `AudioDurationError`, never a guess. The work is bounded on
//! outside input: a deadline checked at every read and packet, and a budget of bytes read
//! (probing and the demuxers' scans of the end may read parts twice, never without limit).
//! `measure_audio_bytes` and `measure_audio_file` are the blocking entry points (tests and
//! fuzzing call them directly); `measure_off_thread` runs one on tokio's blocking pool.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use symphonia::core::errors::Error as DemuxError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, FormatReader, Track, TrackType};
use symphonia::core::io::{MediaSource, MediaSourceStream, MediaSourceStreamOptions};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::units::{Duration as Ticks, TimeBase};

/// How long measuring one file may take before it is refused: a voice note of the largest
/// size any channel keeps is demuxed in well under a second.
pub const MEASURE_TIME_LIMIT: Duration = Duration::from_secs(5);
/// Bytes read at most, as a multiple of the file's length (probing and the end scans read
/// some parts again), plus a fixed allowance for small files.
const READ_BUDGET_FACTOR: u64 = 4;
const READ_BUDGET_ALLOWANCE: u64 = 1 << 20;
/// Packets read at most: far more than any hour of audio holds (an hour of 20 ms Opus
/// packets is 180,000).
const MAX_PACKETS: u64 = 5_000_000;

/// Why a file's length could not be measured. Said to the member inside a refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudioDurationError {
    #[error("its file could not be read ({0})")]
    Unreadable(String),
    #[error("its file is empty")]
    Empty,
    #[error("its file is in no format I can read (OGG, WAV, MP3, M4A or FLAC)")]
    UnknownFormat,
    #[error("its file holds no audio")]
    NoAudio,
    #[error("its file is cut short")]
    Truncated,
    #[error("its file is damaged ({0})")]
    Malformed(String),
    #[error("its file does not say how long it plays")]
    NoDuration,
    #[error("measuring its file took longer than {} s", .limit.as_secs())]
    TooSlow { limit: Duration },
    #[error("measuring its file read more than {limit} bytes")]
    ReadTooMuch { limit: u64 },
}

/// How long the audio in `bytes` plays (blocking; for a whole file held in memory).
pub fn measure_audio_bytes(bytes: &[u8]) -> Result<Duration, AudioDurationError> {
    let source = std::io::Cursor::new(bytes);
    measure(
        source,
        bytes.len() as u64,
        Instant::now() + MEASURE_TIME_LIMIT,
    )
}

/// How long the audio file at `path` plays (blocking: run it off the actors' thread).
pub fn measure_audio_file(path: &Path) -> Result<Duration, AudioDurationError> {
    measure_file_until(path, Instant::now() + MEASURE_TIME_LIMIT)
}

/// `measure_audio_file` on tokio's blocking pool, refused once `MEASURE_TIME_LIMIT` has
/// passed (the blocking work stops itself at the same deadline).
pub async fn measure_off_thread(path: PathBuf) -> Result<Duration, AudioDurationError> {
    let deadline = Instant::now() + MEASURE_TIME_LIMIT;
    let work = tokio::task::spawn_blocking(move || measure_file_until(&path, deadline));
    let too_slow = AudioDurationError::TooSlow {
        limit: MEASURE_TIME_LIMIT,
    };
    match tokio::time::timeout(MEASURE_TIME_LIMIT, work).await {
        Ok(Ok(measured)) => measured,
        // A demuxer that panicked on this file: as damaged as one that said so.
        Ok(Err(join_error)) => Err(AudioDurationError::Malformed(join_error.to_string())),
        Err(_) => Err(too_slow),
    }
}

/// Whole seconds of `duration`, to the nearest (as platforms state them).
pub fn whole_seconds(duration: Duration) -> u32 {
    u32::try_from(duration.as_secs_f64().round() as u64).unwrap_or(u32::MAX)
}

fn measure_file_until(path: &Path, deadline: Instant) -> Result<Duration, AudioDurationError> {
    let file = std::fs::File::open(path)
        .map_err(|error| AudioDurationError::Unreadable(error.kind().to_string()))?;
    let length = file
        .metadata()
        .map_err(|error| AudioDurationError::Unreadable(error.kind().to_string()))?
        .len();
    measure(file, length, deadline)
}

/// Why a bounded read stopped, shared between the source and the caller that reads its
/// errors back (the demuxer wraps them as plain I/O errors).
const WITHIN: u8 = 0;
const PAST_DEADLINE: u8 = 1;
const PAST_BUDGET: u8 = 2;

/// A media source that refuses to read past a deadline or a budget of bytes.
struct Bounded<S> {
    inner: S,
    length: u64,
    read: u64,
    budget: u64,
    deadline: Instant,
    stopped: Arc<AtomicU8>,
}

impl<S: Read> Read for Bounded<S> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if Instant::now() >= self.deadline {
            self.stopped.store(PAST_DEADLINE, Ordering::Relaxed);
            return Err(std::io::Error::other("deadline passed"));
        }
        if self.read >= self.budget {
            self.stopped.store(PAST_BUDGET, Ordering::Relaxed);
            return Err(std::io::Error::other("read budget spent"));
        }
        let allowed = usize::try_from(self.budget - self.read).unwrap_or(usize::MAX);
        let take = buffer.len().min(allowed);
        let count = self.inner.read(&mut buffer[..take])?;
        self.read += count as u64;
        Ok(count)
    }
}

impl<S: Seek> Seek for Bounded<S> {
    fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(position)
    }
}

impl<S: Read + Seek + Send + Sync> MediaSource for Bounded<S> {
    fn is_seekable(&self) -> bool {
        true
    }

    fn byte_len(&self) -> Option<u64> {
        Some(self.length)
    }
}

fn measure<S: Read + Seek + Send + Sync>(
    source: S,
    length: u64,
    deadline: Instant,
) -> Result<Duration, AudioDurationError> {
    if length == 0 {
        return Err(AudioDurationError::Empty);
    }
    let budget = length
        .saturating_mul(READ_BUDGET_FACTOR)
        .saturating_add(READ_BUDGET_ALLOWANCE);
    let stopped = Arc::new(AtomicU8::new(WITHIN));
    let bounded = Bounded {
        inner: source,
        length,
        read: 0,
        budget,
        deadline,
        stopped: stopped.clone(),
    };
    let stream = MediaSourceStream::new(Box::new(bounded), MediaSourceStreamOptions::default());
    // A bound reached is the reason, whatever the demuxer made of the read it refused.
    let why = |error: DemuxError| match stopped.load(Ordering::Relaxed) {
        PAST_DEADLINE => AudioDurationError::TooSlow {
            limit: MEASURE_TIME_LIMIT,
        },
        PAST_BUDGET => AudioDurationError::ReadTooMuch { limit: budget },
        _ => demux_failure(error),
    };
    let mut reader = symphonia::default::get_probe()
        .probe(
            &Hint::new(),
            stream,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|error| match why(error) {
            // No reader took the file (a refused read makes the probe say so too).
            AudioDurationError::Malformed(_) => AudioDurationError::UnknownFormat,
            refused => refused,
        })?;
    let track = audio_track(reader.as_ref())?;
    let stated = stated_length(&track);
    let time_base = track.time_base.ok_or(AudioDurationError::NoDuration)?;
    let packets_end = packets_end(reader.as_mut(), track.id, deadline, &stopped).map_err(why)?;
    let heard = packets_end.and_then(|end| seconds_of(time_base, end));
    match (stated, heard) {
        // Packets that end well before the container's length: the file was cut (an MP3's
        // reader, say, ends quietly where its frames do).
        (Some(stated), heard) if heard.unwrap_or_default() + shortfall_allowed(stated) < stated => {
            Err(AudioDurationError::Truncated)
        }
        (Some(stated), Some(heard)) => Ok(stated.max(heard)),
        (Some(length), None) | (None, Some(length)) => Ok(length),
        (None, None) => Err(AudioDurationError::NoDuration),
    }
}

/// How much shorter the packets may end than the container says, for encoders' padding
/// and rounding: a quarter second, or 2 % of a long file.
fn shortfall_allowed(stated: Duration) -> Duration {
    (stated / 50).max(Duration::from_millis(250))
}

/// The track a player would play: the default audio track, else the first audio track.
fn audio_track(reader: &dyn FormatReader) -> Result<Track, AudioDurationError> {
    reader
        .default_track(TrackType::Audio)
        .or_else(|| reader.first_track(TrackType::Audio))
        .cloned()
        .ok_or(AudioDurationError::NoAudio)
}

/// What the container says the track lasts: its duration, or its playable frames, over its
/// time base.
fn stated_length(track: &Track) -> Option<Duration> {
    let time_base = track.time_base?;
    let ticks = track.duration.or(track.num_frames.map(Ticks::new))?;
    seconds_of(time_base, ticks)
}

fn seconds_of(time_base: TimeBase, ticks: Ticks) -> Option<Duration> {
    let nanos = time_base.calc_duration(ticks)?.as_nanos();
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

/// Where the last packet of track `track_id` ends, in its time base; `None` when it has no
/// packet. Every packet is read (not decoded), so a file cut short fails here.
fn packets_end(
    reader: &mut dyn FormatReader,
    track_id: u32,
    deadline: Instant,
    stopped: &AtomicU8,
) -> Result<Option<Ticks>, DemuxError> {
    let mut end: Option<i128> = None;
    let mut count = 0u64;
    while let Some(packet) = reader.next_packet()? {
        count += 1;
        if Instant::now() >= deadline {
            stopped.store(PAST_DEADLINE, Ordering::Relaxed);
            return Err(DemuxError::LimitError("deadline passed"));
        }
        if count > MAX_PACKETS {
            return Err(DemuxError::LimitError("too many packets"));
        }
        if packet.track_id != track_id {
            continue;
        }
        let packet_end = i128::from(packet.pts.get()) + i128::from(packet.dur.get())
            - i128::from(packet.trim_end.get());
        end = Some(end.map_or(packet_end, |end: i128| end.max(packet_end)));
    }
    Ok(end.map(|end| Ticks::new(u64::try_from(end.max(0)).unwrap_or(u64::MAX))))
}

fn demux_failure(error: DemuxError) -> AudioDurationError {
    match error {
        DemuxError::IoError(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => {
            AudioDurationError::Truncated
        }
        DemuxError::IoError(error) => AudioDurationError::Unreadable(error.kind().to_string()),
        DemuxError::Unsupported(what) => {
            AudioDurationError::Malformed(format!("unsupported: {what}"))
        }
        DemuxError::DecodeError(what) => AudioDurationError::Malformed(what.to_string()),
        DemuxError::LimitError(what) => AudioDurationError::Malformed(what.to_string()),
        DemuxError::ResetRequired => {
            AudioDurationError::Malformed("it chains several streams".into())
        }
        error => AudioDurationError::Malformed(error.to_string()),
    }
}

#[cfg(test)]
#[path = "audio_duration_tests.rs"]
mod tests;
