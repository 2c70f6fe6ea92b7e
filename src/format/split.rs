//! Splitting a long reply into messages a chat platform accepts: at most `limit` UTF-16
//! code units each (Telegram counts UTF-16 units), cut at the most natural boundary that
//! fits, with every HTML chunk valid on its own.

/// The most UTF-16 code units Telegram accepts in one text message.
pub const TELEGRAM_MESSAGE_LIMIT: usize = 4096;

/// Splits Telegram HTML into messages of at most `limit` UTF-16 code units.
///
/// Cuts preferably after a blank line, then after a line break, then after a space, and
/// only as a last resort inside a word; never inside a tag, an entity (`&amp;`) or a
/// character, and not inside an emoji sequence while another cut fits. Tags open at a cut
/// are closed at the end of the chunk and reopened, with the same attributes, at the start
/// of the next; the limit counts those added tags, and it counts tags and entities as
/// written, which is more than Telegram counts (it measures the text after parsing), so a
/// chunk is never too long. The whitespace a cut is made after stays at the end of its
/// chunk, so the chunks' text joined is the original text; chunks with no visible text
/// are dropped (Telegram refuses them). A limit smaller than a single tag or character
/// plus the tags around it cannot be kept: such a chunk holds one character, over the limit.
pub fn split_telegram_html(html: &str, limit: usize) -> Vec<String> {
    split(&html_pieces(html), limit)
}

/// Splits plain text into messages of at most `limit` UTF-16 code units, at the same
/// boundaries as [`split_telegram_html`] prefers.
pub fn split_plain(text: &str, limit: usize) -> Vec<String> {
    let pieces: Vec<Piece> = text
        .char_indices()
        .map(|(index, c)| Piece {
            raw: &text[index..index + c.len_utf8()],
            units: c.len_utf16(),
            kind: PieceKind::Char(c),
        })
        .collect();
    split(&pieces, limit)
}

/// The smallest thing a cut cannot go through.
struct Piece<'a> {
    raw: &'a str,
    /// Length of `raw` in UTF-16 code units.
    units: usize,
    kind: PieceKind<'a>,
}

#[derive(Clone, Copy)]
enum PieceKind<'a> {
    Char(char),
    /// A character reference such as `&amp;`: visible text, never cut.
    Entity,
    Open {
        name: &'a str,
    },
    Close {
        name: &'a str,
    },
    /// A self-closing tag.
    Void,
}

/// Cut boundaries from most to least natural.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Boundary {
    Paragraph = 0,
    Line = 1,
    Space = 2,
    /// Inside a word, between two characters that display apart.
    Word = 3,
    /// Inside an emoji sequence or before a combining mark; still never inside a character.
    Forced = 4,
}

fn html_pieces(html: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut index = 0;
    while let Some(c) = html[index..].chars().next() {
        let rest = &html[index..];
        let piece = match c {
            '<' => tag_piece(rest),
            '&' => entity_piece(rest),
            _ => None,
        }
        .unwrap_or(Piece {
            raw: &rest[..c.len_utf8()],
            units: c.len_utf16(),
            kind: PieceKind::Char(c),
        });
        index += piece.raw.len();
        pieces.push(piece);
    }
    pieces
}

/// A tag at the start of `rest`, if it is one (`<b>`, `</b>`, `<a href="x>y">`); a lone
/// `<` is a character.
fn tag_piece(rest: &str) -> Option<Piece<'_>> {
    let after = rest.strip_prefix('<')?;
    let (is_close, name_start) = match after.strip_prefix('/') {
        Some(name_start) => (true, name_start),
        None => (false, after),
    };
    let name_length = name_start
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(name_start.len());
    if !name_start.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let name = &name_start[..name_length];
    // The tag ends at the first `>` outside a quoted attribute value.
    let mut quote: Option<char> = None;
    let mut end = None;
    for (offset, c) in rest.char_indices().skip(1) {
        match (quote, c) {
            // A `<` cannot be in a tag (attribute values escape it): what looked like a
            // tag is text, and the scan stays short.
            (_, '<') => return None,
            (Some(open), c) if c == open => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => {
                end = Some(offset);
                break;
            }
            (None, _) => {}
        }
    }
    let raw = &rest[..=end?];
    let kind = if is_close {
        PieceKind::Close { name }
    } else if raw.ends_with("/>") {
        PieceKind::Void
    } else {
        PieceKind::Open { name }
    };
    Some(Piece {
        raw,
        units: raw.encode_utf16().count(),
        kind,
    })
}

/// A character reference at the start of `rest` (`&amp;`, `&#128512;`); a lone `&` is a
/// character.
fn entity_piece(rest: &str) -> Option<Piece<'_>> {
    let end = rest.char_indices().take(12).find(|&(_, c)| c == ';')?.0;
    let body = &rest[1..end];
    let plausible = !body.is_empty() && body.chars().all(|c| c.is_ascii_alphanumeric() || c == '#');
    plausible.then(|| Piece {
        raw: &rest[..=end],
        units: end + 1,
        kind: PieceKind::Entity,
    })
}

fn split(pieces: &[Piece], limit: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut open: Vec<&Piece> = Vec::new();
    let mut start = 0;
    while start < pieces.len() {
        let end = chunk_end(pieces, start, &open, limit);
        let mut chunk = String::new();
        for tag in &open {
            chunk.push_str(tag.raw);
        }
        let mut visible = false;
        for piece in &pieces[start..end] {
            chunk.push_str(piece.raw);
            match piece.kind {
                PieceKind::Char(c) => visible |= !c.is_whitespace(),
                PieceKind::Entity => visible = true,
                PieceKind::Open { .. } => open.push(piece),
                PieceKind::Close { name } => close(&mut open, name),
                PieceKind::Void => {}
            }
        }
        for tag in open.iter().rev() {
            chunk.push_str("</");
            chunk.push_str(tag_name(tag));
            chunk.push('>');
        }
        if visible {
            chunks.push(chunk);
        }
        start = end;
    }
    chunks
}

/// Where the chunk starting at `start` (with `open` tags to reopen) ends: the most natural
/// boundary within the limit, preferring a natural one in the chunk's second half over a
/// later but worse one.
fn chunk_end(pieces: &[Piece], start: usize, open: &[&Piece], limit: usize) -> usize {
    let mut stack: Vec<&str> = open.iter().map(|tag| tag_name(tag)).collect();
    let mut used: usize = open.iter().map(|tag| tag.units).sum();
    let mut closing: usize = stack.iter().map(|name| closing_units(name)).sum();
    // The latest fitting cut of each boundary kind: (end, chunk length in units).
    let mut latest: [Option<(usize, usize)>; 5] = [None; 5];
    let (mut last, mut before_last) = (None::<char>, None::<char>);
    for index in start..pieces.len() {
        let piece = &pieces[index];
        used += piece.units;
        match piece.kind {
            PieceKind::Open { name } => {
                stack.push(name);
                closing += closing_units(name);
            }
            PieceKind::Close { name } => {
                if let Some(position) = stack
                    .iter()
                    .rposition(|open| open.eq_ignore_ascii_case(name))
                {
                    for removed in stack.drain(position..) {
                        closing -= closing_units(removed);
                    }
                }
            }
            PieceKind::Char('\r') => {}
            PieceKind::Char(c) => (before_last, last) = (last, Some(c)),
            // An entity is text that is not whitespace; any such character will do.
            PieceKind::Entity => (before_last, last) = (last, Some('x')),
            PieceKind::Void => {}
        }
        // Tags are only ever added or balanced, so the length never shrinks: stop here.
        let total = used + closing;
        if total > limit {
            break;
        }
        let Some(next) = pieces.get(index + 1) else {
            return pieces.len();
        };
        // Cut after text or a closing tag, never just after an opening tag or before a
        // closing one: either would leave an empty element behind.
        let cuttable = !matches!(piece.kind, PieceKind::Open { .. })
            && !matches!(next.kind, PieceKind::Close { .. });
        if cuttable && last.is_some() {
            let boundary = boundary(last, before_last, &piece.kind, &next.kind);
            latest[boundary as usize] = Some((index + 1, total));
        }
    }
    let natural = [Boundary::Paragraph, Boundary::Line, Boundary::Space];
    let well_filled = natural
        .iter()
        .filter_map(|&kind| latest[kind as usize])
        .find(|&(_, total)| total >= limit / 2);
    let latest_natural = natural
        .iter()
        .filter_map(|&kind| latest[kind as usize])
        .max_by_key(|&(end, _)| end);
    let chosen = well_filled
        .or(latest_natural)
        .or(latest[Boundary::Word as usize])
        .or(latest[Boundary::Forced as usize]);
    match chosen {
        Some((end, _)) => end,
        None => smallest_chunk_end(pieces, start),
    }
}

/// When nothing fits, the chunk still takes one character (and the closing tags right
/// after it), so that splitting always ends.
fn smallest_chunk_end(pieces: &[Piece], start: usize) -> usize {
    let text = pieces[start..]
        .iter()
        .position(|piece| matches!(piece.kind, PieceKind::Char(_) | PieceKind::Entity));
    let Some(offset) = text else {
        return pieces.len();
    };
    let mut end = start + offset + 1;
    while let Some(Piece {
        kind: PieceKind::Close { .. },
        ..
    }) = pieces.get(end)
    {
        end += 1;
    }
    end
}

fn boundary(
    last: Option<char>,
    before_last: Option<char>,
    piece: &PieceKind,
    next: &PieceKind,
) -> Boundary {
    match (last, before_last) {
        (Some('\n'), Some('\n')) => Boundary::Paragraph,
        (Some('\n'), _) => Boundary::Line,
        (Some(c), _) if c.is_whitespace() => Boundary::Space,
        _ => {
            let joins_previous = matches!(next, PieceKind::Char(c) if joins_previous(*c));
            let after_joiner = matches!(piece, PieceKind::Char('\u{200D}'));
            if joins_previous || after_joiner {
                Boundary::Forced
            } else {
                Boundary::Word
            }
        }
    }
}

/// Characters that display as part of the character before them: cutting before one
/// would break a grapheme (an accent, an emoji's skin tone or variation, a joined emoji).
fn joins_previous(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{200D}'
        | '\u{1F3FB}'..='\u{1F3FF}'
        | '\u{E0020}'..='\u{E007F}')
}

fn tag_name<'a>(tag: &Piece<'a>) -> &'a str {
    match tag.kind {
        PieceKind::Open { name } | PieceKind::Close { name } => name,
        _ => "",
    }
}

fn close(open: &mut Vec<&Piece>, name: &str) {
    if let Some(position) = open
        .iter()
        .rposition(|tag| tag_name(tag).eq_ignore_ascii_case(name))
    {
        open.truncate(position);
    }
}

/// Length of `</name>` in UTF-16 units (tag names are ASCII).
fn closing_units(name: &str) -> usize {
    name.len() + 3
}
