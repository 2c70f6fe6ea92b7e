//! How long a stored audio file plays, read from the file itself for a channel whose
//! platform does not say (an HTTP upload): OGG (Opus or Vorbis) from the granule position
//! of the stream's last page, WAV from its header. Only the file's head and tail are read,
//! whatever its size; any other format, or a file that does not parse, has no duration.

use std::io::SeekFrom;
use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncSeekExt};

/// Read from the start: an Ogg stream's first page with its codec header, a WAV header.
const HEAD_BYTES: u64 = 4096;
/// Read from the end: a whole Ogg page is at most 65,307 bytes, so the last one is in here.
const TAIL_BYTES: u64 = 65_536 + 1024;
/// Opus granule positions always count 48 kHz samples, whatever the input's rate.
const OPUS_GRANULE_RATE: u64 = 48_000;
/// An Ogg page's fixed header, before its segment table.
const OGG_PAGE_HEADER: usize = 27;

/// The whole seconds `path` plays (rounded to the nearest), or `None` when it is no OGG or
/// WAV file this can read.
pub async fn read_duration_seconds(path: &Path) -> Option<u32> {
    let mut file = tokio::fs::File::open(path).await.ok()?;
    let length = file.metadata().await.ok()?.len();
    let head = read_at(&mut file, 0, HEAD_BYTES.min(length)).await?;
    let seconds = if head.starts_with(b"OggS") {
        let tail_start = length.saturating_sub(TAIL_BYTES);
        let tail = read_at(&mut file, tail_start, length - tail_start).await?;
        ogg_duration(&head, &tail)?
    } else if head.starts_with(b"RIFF") {
        wav_duration(&head, length)?
    } else {
        return None;
    };
    u32::try_from(seconds.round() as u64).ok()
}

async fn read_at(file: &mut tokio::fs::File, start: u64, length: u64) -> Option<Vec<u8>> {
    file.seek(SeekFrom::Start(start)).await.ok()?;
    let mut bytes = vec![0u8; usize::try_from(length).ok()?];
    file.read_exact(&mut bytes).await.ok()?;
    Some(bytes)
}

/// The seconds of the Ogg stream whose first page opens `head`, from the last page of the
/// same stream in `tail` (the file's last bytes) that ends a packet.
pub(crate) fn ogg_duration(head: &[u8], tail: &[u8]) -> Option<f64> {
    let first = OggPage::parse(head)?;
    let codec = Codec::of(first.body)?;
    let granule = (0..tail.len())
        .rev()
        .filter(|&at| tail[at..].starts_with(b"OggS"))
        .filter_map(|at| OggPage::parse(&tail[at..]))
        // A page of another stream, or one on which no packet ends (granule -1), says nothing.
        .find(|page| page.serial == first.serial && page.granule != u64::MAX)?
        .granule;
    Some(codec.seconds(granule))
}

enum Codec {
    /// Opus: 48 kHz granules, less the pre-skip the decoder drops.
    Opus { pre_skip: u64 },
    /// Vorbis: granules are samples at the stream's own rate.
    Vorbis { rate: u64 },
}

impl Codec {
    /// The codec of the identification header that is the first page's body.
    fn of(body: &[u8]) -> Option<Codec> {
        if body.starts_with(b"OpusHead") && body.len() >= 19 {
            return Some(Codec::Opus {
                pre_skip: u64::from(u16::from_le_bytes([body[10], body[11]])),
            });
        }
        if body.starts_with(b"\x01vorbis") && body.len() >= 16 {
            let rate = u32::from_le_bytes(body[12..16].try_into().ok()?);
            return (rate > 0).then_some(Codec::Vorbis {
                rate: u64::from(rate),
            });
        }
        None
    }

    fn seconds(&self, granule: u64) -> f64 {
        match self {
            Codec::Opus { pre_skip } => {
                granule.saturating_sub(*pre_skip) as f64 / OPUS_GRANULE_RATE as f64
            }
            Codec::Vorbis { rate } => granule as f64 / *rate as f64,
        }
    }
}

/// One Ogg page, taken only when it is whole and its checksum matches: four bytes `OggS`
/// inside compressed audio are no page.
struct OggPage<'a> {
    granule: u64,
    serial: u32,
    body: &'a [u8],
}

impl<'a> OggPage<'a> {
    fn parse(bytes: &'a [u8]) -> Option<OggPage<'a>> {
        if bytes.len() < OGG_PAGE_HEADER || !bytes.starts_with(b"OggS") || bytes[4] != 0 {
            return None;
        }
        let segments = usize::from(bytes[26]);
        let table = bytes.get(OGG_PAGE_HEADER..OGG_PAGE_HEADER + segments)?;
        let header_length = OGG_PAGE_HEADER + segments;
        let body_length: usize = table.iter().map(|&lacing| usize::from(lacing)).sum();
        let page = bytes.get(..header_length + body_length)?;
        let stated = u32::from_le_bytes(page[22..26].try_into().ok()?);
        if ogg_crc(page) != stated {
            return None;
        }
        Some(OggPage {
            granule: u64::from_le_bytes(page[6..14].try_into().ok()?),
            serial: u32::from_le_bytes(page[14..18].try_into().ok()?),
            body: &page[header_length..],
        })
    }
}

/// The page checksum Ogg uses: CRC-32 with polynomial 0x04c11db7, not reflected, starting
/// at zero, over the page with its checksum field read as zero.
fn ogg_crc(page: &[u8]) -> u32 {
    let mut crc = 0u32;
    for (index, &byte) in page.iter().enumerate() {
        let byte = if (22..26).contains(&index) { 0 } else { byte };
        crc ^= u32::from(byte) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The seconds of a WAV file from its `fmt ` chunk's byte rate and its `data` chunk's size
/// (or the rest of the file, when a recorder streaming it never wrote the size).
pub(crate) fn wav_duration(head: &[u8], file_length: u64) -> Option<f64> {
    if head.len() < 12 || &head[..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return None;
    }
    let mut at = 12usize;
    let mut byte_rate = None;
    while let Some(chunk) = head.get(at..at + 8) {
        let size = u32::from_le_bytes(chunk[4..8].try_into().ok()?);
        let body = at + 8;
        match &chunk[..4] {
            b"fmt " => {
                let rate = head.get(body + 8..body + 12)?;
                byte_rate = Some(u32::from_le_bytes(rate.try_into().ok()?)).filter(|&r| r > 0);
            }
            b"data" => {
                let rest = file_length.saturating_sub(body as u64);
                let data = u64::from(size).min(rest);
                return Some(data as f64 / f64::from(byte_rate?));
            }
            _ => {}
        }
        // Chunks are padded to an even length.
        at = body + usize::try_from(size).ok()? + (size as usize & 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole Ogg page of stream `serial` with `body` in it, its checksum right.
    fn page(serial: u32, granule: u64, body: &[u8]) -> Vec<u8> {
        let mut lacing = vec![255u8; body.len() / 255];
        lacing.push((body.len() % 255) as u8);
        let mut page = b"OggS\0\0".to_vec();
        page.extend(granule.to_le_bytes());
        page.extend(serial.to_le_bytes());
        page.extend(0u32.to_le_bytes());
        page.extend(0u32.to_le_bytes());
        page.push(lacing.len() as u8);
        page.extend(&lacing);
        page.extend(body);
        let crc = ogg_crc(&page);
        page[22..26].copy_from_slice(&crc.to_le_bytes());
        page
    }

    fn opus_head(pre_skip: u16) -> Vec<u8> {
        let mut head = b"OpusHead\x01\x01".to_vec();
        head.extend(pre_skip.to_le_bytes());
        head.extend(22_050u32.to_le_bytes());
        head.extend([0, 0, 0]);
        head
    }

    #[test]
    fn an_opus_stream_lasts_its_last_granule_less_the_pre_skip() {
        let head = page(7, 0, &opus_head(312));
        let mut tail = vec![0x4f; 300];
        tail.extend(page(7, 48_000, &[1; 400]));
        tail.extend(page(7, 312 + 3 * 48_000 + 24_000, &[2; 600]));
        assert_eq!(ogg_duration(&head, &tail), Some(3.5));
    }

    #[test]
    fn a_vorbis_stream_counts_samples_at_its_own_rate() {
        let mut identification = b"\x01vorbis".to_vec();
        identification.extend(0u32.to_le_bytes());
        identification.push(1);
        identification.extend(16_000u32.to_le_bytes());
        identification.extend([0; 14]);
        let head = page(3, 0, &identification);
        let tail = page(3, 80_000, &[5; 100]);
        assert_eq!(ogg_duration(&head, &tail), Some(5.0));
    }

    #[test]
    fn pages_of_other_streams_without_a_packet_end_or_cut_short_are_passed_over() {
        let head = page(7, 0, &opus_head(0));
        let mut tail = page(7, 96_000, &[1; 50]);
        tail.extend(page(9, 480_000, &[1; 50]));
        tail.extend(page(7, u64::MAX, &[1; 50]));
        // A page whose end is missing (a file cut short) does not count.
        let cut = page(7, 960_000, &[1; 500]);
        tail.extend(&cut[..cut.len() - 10]);
        assert_eq!(ogg_duration(&head, &tail), Some(2.0));
    }

    #[test]
    fn ogg_s_inside_compressed_audio_is_no_page() {
        let head = page(7, 0, &opus_head(0));
        let mut tail = page(7, 48_000, &[1; 50]);
        // `OggS`, a version byte and a plausible header, but a wrong checksum.
        let mut fake = page(7, 4_800_000, &[1; 20]);
        fake[22] ^= 0xff;
        tail.extend(fake);
        assert_eq!(ogg_duration(&head, &tail), Some(1.0));
    }

    #[test]
    fn an_ogg_stream_of_an_unknown_codec_or_no_page_has_no_duration() {
        let head = page(7, 0, b"\x80theora");
        assert_eq!(ogg_duration(&head, &page(7, 48_000, &[1; 10])), None);
        let head = page(7, 0, &opus_head(0));
        assert_eq!(ogg_duration(&head, &[0; 100]), None);
    }

    fn wav(byte_rate: u32, data_size: u32, extra_chunk: bool) -> Vec<u8> {
        let mut wav = b"RIFF\0\0\0\0WAVE".to_vec();
        if extra_chunk {
            wav.extend(b"LIST\x03\0\0\0abc\0");
        }
        wav.extend(b"fmt \x10\0\0\0\x01\0\x01\0");
        wav.extend((byte_rate / 2).to_le_bytes());
        wav.extend(byte_rate.to_le_bytes());
        wav.extend([2, 0, 16, 0]);
        wav.extend(b"data");
        wav.extend(data_size.to_le_bytes());
        wav
    }

    #[test]
    fn a_wav_file_lasts_its_data_over_its_byte_rate() {
        let head = wav(44_100, 441_000, true);
        assert_eq!(wav_duration(&head, head.len() as u64 + 441_000), Some(10.0));
        // A streamed recording's unknown size: the rest of the file.
        let head = wav(32_000, u32::MAX, false);
        assert_eq!(wav_duration(&head, head.len() as u64 + 64_000), Some(2.0));
        assert_eq!(wav_duration(b"RIFF\0\0\0\0AVI LIST", 100), None);
    }

    #[tokio::test]
    async fn a_file_is_read_by_its_head_and_tail_only() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("note.ogg");
        let mut file = page(7, 0, &opus_head(312));
        // Far more than the tail read: the middle is never looked at.
        for index in 1..400u64 {
            file.extend(page(7, 312 + index * 4_800, &[3; 1000]));
        }
        file.extend(page(7, 312 + 61 * 48_000 + 20_000, &[4; 200]));
        std::fs::write(&path, &file).unwrap();
        assert_eq!(read_duration_seconds(&path).await, Some(61));
        std::fs::write(&path, b"ID3\x04 not a format read here").unwrap();
        assert_eq!(read_duration_seconds(&path).await, None);
    }
}
