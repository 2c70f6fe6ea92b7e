//! `parse_mode: "HTML"` as Telegram parses it: a port of TDLib's `parse_html`, with its error
//! texts and byte offsets, producing the plain text and the Bot API `entities` Telegram would
//! return. One deliberate difference: in strict mode (the default) an `&` that starts no
//! entity is an error, where Telegram shows it literally, because a sender that fails to escape
//! `&` also turns a user's literal `&lt;` into `<`.

use serde_json::{Value, json};

const TAGS: &[&str] = &[
    "a",
    "b",
    "strong",
    "i",
    "em",
    "s",
    "strike",
    "del",
    "u",
    "ins",
    "tg-spoiler",
    "tg-emoji",
    "span",
    "pre",
    "code",
    "blockquote",
];

struct Open {
    tag: String,
    argument: String,
    /// Where the entity starts in the output, in UTF-16 code units.
    offset: usize,
    /// How many tags were opened before this one: ties sort outer first.
    opened: usize,
}

struct Entity {
    kind: &'static str,
    offset: usize,
    length: usize,
    /// `url`, `language` or `custom_emoji_id`, depending on the kind.
    extra: Option<(&'static str, String)>,
    opened: usize,
}

/// The text without markup and its entities, or the detail of Telegram's "can't parse entities".
pub(super) fn parse(text: &str, strict_ampersand: bool) -> Result<(String, Vec<Value>), String> {
    let bytes = text.as_bytes();
    // TDLib reads a NUL-terminated string; 0 past the end keeps its loop conditions intact.
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut out = String::new();
    let mut utf16 = 0;
    let mut open: Vec<Open> = Vec::new();
    let mut entities: Vec<Entity> = Vec::new();
    let mut opened = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'&' {
            match decode_entity(bytes, i)? {
                Some((ch, next)) => {
                    out.push(ch);
                    utf16 += ch.len_utf16();
                    i = next;
                    continue;
                }
                None if strict_ampersand => {
                    return Err(format!(
                        "Character \"&\" at byte offset {i} must be escaped as \"&amp;\""
                    ));
                }
                None => {}
            }
        }
        if c != b'<' {
            let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
            out.push(ch);
            utf16 += ch.len_utf16();
            i += ch.len_utf8();
            continue;
        }
        let begin = i;
        i += 1;
        if at(i) != b'/' {
            while !is_space(at(i)) && at(i) != b'>' {
                i += 1;
            }
            if at(i) == 0 {
                return Err(format!("Unclosed start tag at byte offset {begin}"));
            }
            let tag = text[begin + 1..i].to_ascii_lowercase();
            if !TAGS.contains(&tag.as_str()) {
                return Err(format!(
                    "Unsupported start tag \"{tag}\" at byte offset {begin}"
                ));
            }
            let (argument, next) = attributes(text, i, begin, &tag)?;
            i = next + 1;
            if tag == "span" && argument != "spoiler" {
                return Err(format!(
                    "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
                ));
            }
            open.push(Open {
                tag,
                argument,
                offset: utf16,
                opened,
            });
            opened += 1;
            continue;
        }
        let Some(entry) = open.pop() else {
            return Err(format!("Unexpected end tag at byte offset {begin}"));
        };
        i += 1;
        let name_begin = i;
        while !is_space(at(i)) && at(i) != b'>' {
            i += 1;
        }
        let end_tag = &text[name_begin..i];
        while is_space(at(i)) && at(i) != 0 {
            i += 1;
        }
        if at(i) != b'>' {
            return Err(format!("Unclosed end tag at byte offset {begin}"));
        }
        i += 1;
        // `</>` closes whatever is open, as in TDLib.
        if !end_tag.is_empty() && !end_tag.eq_ignore_ascii_case(&entry.tag) {
            return Err(format!(
                "Unmatched end tag at byte offset {begin}, expected \"</{}>\", found \"</{end_tag}>\"",
                entry.tag
            ));
        }
        close(entry, &out, utf16, &mut entities)?;
    }
    if let Some(entry) = open.last() {
        return Err(format!(
            "Can't find end tag corresponding to start tag \"{}\"",
            entry.tag
        ));
    }
    entities.sort_by(|a, b| (a.offset, b.length, a.opened).cmp(&(b.offset, a.length, b.opened)));
    let entities = entities
        .into_iter()
        .map(|entity| {
            let mut value = json!({
                "type": entity.kind,
                "offset": entity.offset,
                "length": entity.length,
            });
            if let Some((key, extra)) = entity.extra {
                value[key] = json!(extra);
            }
            value
        })
        .collect();
    Ok((out, entities))
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0 | 0x0b)
}

/// Parses the attributes of a start tag from `i` (just after the tag name) to its `>`;
/// returns the tag's argument and the position of the `>`.
fn attributes(
    text: &str,
    mut i: usize,
    begin: usize,
    tag: &str,
) -> Result<(String, usize), String> {
    let bytes = text.as_bytes();
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut argument = String::new();
    while at(i) != b'>' {
        while at(i) != 0 && is_space(at(i)) {
            i += 1;
        }
        if at(i) == b'>' {
            break;
        }
        let name_begin = i;
        while !is_space(at(i)) && at(i) != b'=' && at(i) != b'>' {
            i += 1;
        }
        let name = &text[name_begin..i];
        if name.is_empty() {
            return Err(format!(
                "Empty attribute name in the tag \"{tag}\" at byte offset {begin}"
            ));
        }
        while at(i) != 0 && is_space(at(i)) {
            i += 1;
        }
        if at(i) != b'=' {
            // The one attribute without a value Telegram knows.
            if tag == "blockquote" && name == "expandable" {
                argument = "1".to_string();
                continue;
            }
            return Err(format!(
                "Expected equal sign in declaration of an attribute of the tag \"{tag}\" at byte offset {begin}"
            ));
        }
        i += 1;
        while at(i) != 0 && is_space(at(i)) {
            i += 1;
        }
        if at(i) == 0 {
            return Err(format!(
                "Unclosed start tag \"{tag}\" at byte offset {begin}"
            ));
        }
        let value;
        if at(i) != b'\'' && at(i) != b'"' {
            // An unquoted name token: letters, digits, periods and hyphens, case-insensitive.
            let token_begin = i;
            while at(i).is_ascii_alphanumeric() || at(i) == b'.' || at(i) == b'-' {
                i += 1;
            }
            value = text[token_begin..i].to_ascii_lowercase();
            if !is_space(at(i)) && at(i) != b'>' {
                return Err(format!(
                    "Unexpected end of name token at byte offset {token_begin}"
                ));
            }
        } else {
            let quote = at(i);
            i += 1;
            let mut raw = String::new();
            while at(i) != quote && at(i) != 0 {
                if at(i) == b'&'
                    && let Some((ch, next)) = decode_entity(bytes, i)?
                {
                    raw.push(ch);
                    i = next;
                    continue;
                }
                let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                raw.push(ch);
                i += ch.len_utf8();
            }
            if at(i) == quote {
                i += 1;
            }
            value = raw;
        }
        if at(i) == 0 {
            return Err(format!("Unclosed start tag at byte offset {begin}"));
        }
        match (tag, name) {
            ("a", "href") | ("tg-emoji", "emoji-id") => argument = value,
            ("code", "class") => {
                if let Some(language) = value.strip_prefix("language-") {
                    argument = language.to_string();
                }
            }
            ("span", "class") => {
                if let Some(class) = value.strip_prefix("tg-") {
                    argument = class.to_string();
                }
            }
            _ => {}
        }
    }
    Ok((argument, i))
}

/// Decodes `&lt;` `&gt;` `&amp;` `&quot;` and numeric references (the `;` is optional, as in
/// TDLib). `Ok(None)` when `&` starts none of them.
fn decode_entity(bytes: &[u8], pos: usize) -> Result<Option<(char, usize)>, String> {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut end = pos + 1;
    let code: u32;
    if at(end) == b'#' {
        end += 1;
        let radix = if at(end) == b'x' || at(end) == b'X' {
            end += 1;
            16
        } else {
            10
        };
        let mut value: u32 = 0;
        while let Some(digit) = (at(end) as char).to_digit(radix) {
            value = value * radix + digit;
            end += 1;
            if value >= 0x10ffff {
                return Ok(None);
            }
        }
        if value == 0 {
            return Ok(None);
        }
        if (0xd800..=0xdfff).contains(&value) {
            return Err(
                "Text contains invalid Unicode characters after decoding HTML entities, \
                 check for unmatched surrogate code units"
                    .to_string(),
            );
        }
        code = value;
    } else {
        while at(end).is_ascii_alphabetic() {
            end += 1;
        }
        code = match &bytes[pos + 1..end] {
            b"lt" => '<' as u32,
            b"gt" => '>' as u32,
            b"amp" => '&' as u32,
            b"quot" => '"' as u32,
            _ => return Ok(None),
        };
    }
    if at(end) == b';' {
        end += 1;
    }
    Ok(char::from_u32(code).map(|ch| (ch, end)))
}

/// Turns a closed tag into its entity (empty ones vanish, as on Telegram).
fn close(entry: Open, out: &str, utf16: usize, entities: &mut Vec<Entity>) -> Result<(), String> {
    let length = utf16 - entry.offset;
    if length == 0 {
        return Ok(());
    }
    let mut extra = None;
    let kind = match entry.tag.as_str() {
        "b" | "strong" => "bold",
        "i" | "em" => "italic",
        "u" | "ins" => "underline",
        "s" | "strike" | "del" => "strikethrough",
        "tg-spoiler" | "span" => "spoiler",
        "blockquote" if entry.argument.is_empty() => "blockquote",
        "blockquote" => "expandable_blockquote",
        "tg-emoji" => {
            match entry.argument.parse::<i64>() {
                Ok(id) if id != 0 => {}
                _ => return Err("Invalid custom emoji identifier specified".to_string()),
            }
            extra = Some(("custom_emoji_id", entry.argument));
            "custom_emoji"
        }
        "a" => {
            // Without href the link text is the URL; an invalid URL leaves plain text.
            let target = if entry.argument.is_empty() {
                tail_utf16(out, entry.offset)
            } else {
                entry.argument
            };
            let Some(url) = normalize_url(&target) else {
                return Ok(());
            };
            extra = Some(("url", url));
            "text_link"
        }
        "pre" => {
            // `<pre><code class="language-x">` spanning the same text is one `pre` with language.
            if let Some(last) = entities.last_mut()
                && last.kind == "code"
                && last.offset == entry.offset
                && last.length == length
                && last.extra.is_some()
            {
                last.kind = "pre";
                return Ok(());
            }
            "pre"
        }
        "code" => {
            if entry.argument.is_empty() {
                "code"
            } else if let Some(last) = entities.last_mut()
                && last.kind == "pre"
                && last.offset == entry.offset
                && last.length == length
            {
                // `<code class="language-x"><pre>` is the same `pre` with language.
                last.extra = Some(("language", entry.argument));
                return Ok(());
            } else {
                extra = Some(("language", entry.argument));
                "code"
            }
        }
        _ => return Ok(()),
    };
    entities.push(Entity {
        kind,
        offset: entry.offset,
        length,
        extra,
        opened: entry.opened,
    });
    Ok(())
}

/// The output text from UTF-16 offset `from` to the end.
fn tail_utf16(out: &str, from: usize) -> String {
    let units: Vec<u16> = out.encode_utf16().skip(from).collect();
    String::from_utf16_lossy(&units)
}

/// Telegram's idea of a link target: schemeless hosts get `http://`, and the host needs a dot
/// unless the scheme is Telegram's own.
fn normalize_url(target: &str) -> Option<String> {
    // The URL parser would trim spaces that make Telegram refuse the link.
    if target.is_empty() || target.chars().any(char::is_whitespace) {
        return None;
    }
    let with_scheme = if target.contains("://") {
        target.to_string()
    } else {
        format!("http://{target}")
    };
    let url = reqwest::Url::parse(&with_scheme).ok()?;
    match url.scheme() {
        "tg" | "ton" => Some(url.to_string()),
        "http" | "https" if url.host_str().is_some_and(|host| host.contains('.')) => {
            Some(url.to_string())
        }
        _ => None,
    }
}
