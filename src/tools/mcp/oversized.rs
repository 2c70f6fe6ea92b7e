//! A message from an MCP server too large to keep (`OversizedMessage`): read through once,
//! byte by byte, never held. Only what hearth needs to answer the call it belongs to is kept:
//! the message's id, and for a tool result the start of the text of its text parts (at most
//! the bytes the model reads) and whether it is an error. `stand_in` then makes a small
//! message of the same id: the result cut (and saying so), or an error for any other answer.
//!
//! The reading follows JSON's structure (strings, escapes, nesting) without decoding values;
//! the kept text is decoded once, at the end, and a message that was not well-formed JSON
//! gets the error stand-in.

use serde_json::{Value, json};

/// Containers followed by their keys; deeper ones are only counted (nothing is kept there).
const TRACKED_DEPTH: usize = 8;
/// The longest id kept; a message with a longer one cannot be answered and is dropped.
const MAX_ID_BYTES: usize = 128;
/// The longest key told apart (every key that matters is shorter).
const MAX_KEY_BYTES: usize = 16;

/// The keys whose values matter, and every other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Result,
    Content,
    Text,
    IsError,
    Other,
}

impl Key {
    fn of(raw: &[u8]) -> Key {
        match raw {
            b"id" => Key::Id,
            b"method" => Key::Method,
            b"result" => Key::Result,
            b"content" => Key::Content,
            b"text" => Key::Text,
            b"isError" => Key::IsError,
            _ => Key::Other,
        }
    }
}

/// An open object or array, and in an object the key of the value being read.
#[derive(Debug, Clone, Copy)]
struct Container {
    object: bool,
    key: Key,
}

/// Where a value being read goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Nothing,
    Id,
    IsError,
    Text,
}

/// What an escape in a string still needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// A backslash was read.
    Started,
    /// `\u` and this many hex digits to come.
    Hex(u8),
}

pub(super) struct OversizedMessage {
    /// Bytes read, newline included.
    bytes: u64,
    /// Most bytes of text kept.
    text_limit: usize,
    containers: Vec<Container>,
    /// Containers open deeper than `TRACKED_DEPTH`.
    untracked: usize,
    /// In an object, before a key.
    before_key: bool,
    in_string: bool,
    /// The string being read is a key.
    in_key: bool,
    key: Vec<u8>,
    escape: Escape,
    /// Where the current escape began in `text`, to cut before it, never inside.
    escape_start: usize,
    /// A number or literal being read, and where it goes.
    in_literal: bool,
    keeping: Keep,
    id: Vec<u8>,
    id_too_long: bool,
    is_error: Vec<u8>,
    /// The raw (still escaped) text of the text parts, joined by `\n`.
    text: Vec<u8>,
    text_parts: usize,
    text_full: bool,
    /// `result.content` was an array: the message is a tool result.
    tool_result: bool,
    /// It has a `method`: a request or notification of the server's, answered by nobody.
    has_method: bool,
    /// Something did not fit JSON's structure.
    malformed: bool,
}

impl OversizedMessage {
    pub(super) fn new(text_limit: usize) -> Self {
        OversizedMessage {
            bytes: 0,
            text_limit,
            containers: Vec::with_capacity(TRACKED_DEPTH),
            untracked: 0,
            before_key: false,
            in_string: false,
            in_key: false,
            key: Vec::with_capacity(MAX_KEY_BYTES),
            escape: Escape::None,
            escape_start: 0,
            in_literal: false,
            keeping: Keep::Nothing,
            id: Vec::new(),
            id_too_long: false,
            is_error: Vec::new(),
            text: Vec::new(),
            text_parts: 0,
            text_full: false,
            tool_result: false,
            has_method: false,
            malformed: false,
        }
    }

    /// Bytes read so far.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Read the next bytes of the message.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        self.bytes = self.bytes.saturating_add(bytes.len() as u64);
        for &byte in bytes {
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if self.in_literal {
            if matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                self.in_literal = false;
                self.keeping = Keep::Nothing;
            } else {
                self.keep_byte(byte);
                return;
            }
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.before_key {
                    self.in_key = true;
                    self.key.clear();
                } else {
                    self.keeping = self.value_starts(false);
                    if self.keeping == Keep::Text {
                        self.text_part_starts();
                    } else {
                        self.keep_byte(byte);
                    }
                }
            }
            b'{' | b'[' => {
                let object = byte == b'{';
                self.value_starts(true);
                if self.untracked > 0 || self.containers.len() >= TRACKED_DEPTH {
                    self.untracked += 1;
                } else {
                    self.containers.push(Container {
                        object,
                        key: Key::Other,
                    });
                }
                self.before_key = object;
            }
            b'}' | b']' => {
                if self.untracked > 0 {
                    self.untracked -= 1;
                } else if self.containers.pop().is_none() {
                    self.malformed = true;
                }
                self.before_key = false;
            }
            b':' => self.before_key = false,
            b',' => {
                self.before_key =
                    self.untracked == 0 && self.containers.last().is_some_and(|c| c.object);
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                self.in_literal = true;
                self.keeping = self.value_starts(false);
                self.keep_byte(byte);
            }
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let in_escape = self.escape != Escape::None || byte == b'\\';
        let ends = match self.escape {
            Escape::Started => {
                self.escape = if byte == b'u' {
                    Escape::Hex(4)
                } else {
                    Escape::None
                };
                false
            }
            Escape::Hex(left) => {
                self.escape = if left > 1 {
                    Escape::Hex(left - 1)
                } else {
                    Escape::None
                };
                false
            }
            Escape::None if byte == b'\\' => {
                self.escape = Escape::Started;
                if self.keeping == Keep::Text {
                    self.escape_start = self.text.len();
                }
                false
            }
            Escape::None => byte == b'"',
        };
        if self.in_key {
            if ends {
                self.in_string = false;
                self.in_key = false;
                let key = if self.key.len() > MAX_KEY_BYTES {
                    Key::Other
                } else {
                    Key::of(&self.key)
                };
                if self.untracked == 0
                    && let Some(container) = self.containers.last_mut()
                {
                    container.key = key;
                }
            } else if self.key.len() <= MAX_KEY_BYTES {
                self.key.push(byte);
            }
            return;
        }
        if ends {
            self.in_string = false;
            if self.keeping != Keep::Text {
                self.keep_byte(byte);
            }
            self.keeping = Keep::Nothing;
            return;
        }
        if self.keeping == Keep::Text {
            self.keep_text_byte(byte, in_escape);
        } else {
            self.keep_byte(byte);
        }
    }

    /// A value starts where the containers are now: note what it means, and where it goes.
    fn value_starts(&mut self, container: bool) -> Keep {
        if self.untracked > 0 {
            return Keep::Nothing;
        }
        match self.containers.as_slice() {
            [top] if top.object => match top.key {
                Key::Id if !container => Keep::Id,
                Key::Method => {
                    self.has_method = true;
                    Keep::Nothing
                }
                _ => Keep::Nothing,
            },
            [top, result] if top.key == Key::Result && result.object => match result.key {
                Key::IsError if !container => Keep::IsError,
                Key::Content if container => {
                    self.tool_result = true;
                    Keep::Nothing
                }
                _ => Keep::Nothing,
            },
            [top, result, content, item]
                if top.key == Key::Result
                    && result.key == Key::Content
                    && !content.object
                    && item.object
                    && item.key == Key::Text
                    && !container =>
            {
                Keep::Text
            }
            _ => Keep::Nothing,
        }
    }

    fn keep_byte(&mut self, byte: u8) {
        match self.keeping {
            Keep::Id => {
                if self.id.len() < MAX_ID_BYTES {
                    self.id.push(byte);
                } else {
                    self.id_too_long = true;
                }
            }
            Keep::IsError => {
                if self.is_error.len() < 8 {
                    self.is_error.push(byte);
                }
            }
            Keep::Text | Keep::Nothing => {}
        }
    }

    fn text_part_starts(&mut self) {
        if self.text_parts > 0 && !self.text_full {
            if self.text.len() + 2 <= self.text_limit {
                self.text.extend_from_slice(b"\\n");
            } else {
                self.text_full = true;
            }
        }
        self.text_parts += 1;
    }

    fn keep_text_byte(&mut self, byte: u8, in_escape: bool) {
        if self.text_full {
            return;
        }
        if self.text.len() >= self.text_limit {
            self.text_full = true;
            if in_escape {
                // Never half an escape: the kept text must decode.
                self.text.truncate(self.escape_start);
            }
            return;
        }
        self.text.push(byte);
    }

    /// The message hearth reads instead, of the same id: the tool result with the start of
    /// its text, saying it was cut at `limit` bytes, or an error for any other answer.
    /// `None` when it has no id to answer (a request or notification of the server's, or a
    /// message hearth could not follow).
    pub(super) fn stand_in(self, limit: usize) -> Option<Vec<u8>> {
        if self.has_method || self.id_too_long {
            return None;
        }
        let id: Value = serde_json::from_slice(&self.id).ok()?;
        if !(id.is_number() || id.is_string()) {
            return None;
        }
        let well_formed = !self.malformed && self.containers.is_empty() && self.untracked == 0;
        let message = match self.kept_text() {
            Some(text) if self.tool_result && well_formed => {
                let shown = if text.is_empty() { "" } else { "\n" };
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": format!(
                        "{text}{shown}[result cut: the tool server answered with {} bytes, \
                         more than hearth reads ({limit}); this is the start of its text]",
                        self.bytes)}],
                    "isError": self.is_error == b"true",
                }})
            }
            _ => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32603,
                "message": format!(
                    "the tool server answered with {} bytes, more than hearth reads ({limit})",
                    self.bytes
                ),
            }}),
        };
        serde_json::to_vec(&message).ok()
    }

    /// The kept text decoded; `None` when it does not decode (the message was not JSON).
    fn kept_text(&self) -> Option<String> {
        let mut raw = self.text.as_slice();
        // Cut at the limit, the last character may be incomplete: it is left out.
        if let Err(error) = std::str::from_utf8(raw)
            && error.error_len().is_none()
        {
            raw = &raw[..error.valid_up_to()];
        }
        let mut quoted = Vec::with_capacity(raw.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(raw);
        quoted.push(b'"');
        serde_json::from_slice(&quoted).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(message: &str, text_limit: usize) -> Value {
        let mut oversized = OversizedMessage::new(text_limit);
        // Fed in small pieces, as a pipe gives it.
        for piece in message.as_bytes().chunks(7) {
            oversized.feed(piece);
        }
        oversized.feed(b"\n");
        serde_json::from_slice(&oversized.stand_in(1000).expect("a stand-in")).unwrap()
    }

    #[test]
    fn a_tool_result_keeps_its_id_the_start_of_its_text_and_its_error_flag() {
        let message = json!({"jsonrpc": "2.0", "result": {"isError": true, "content": [
            {"type": "text", "text": "first part"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x:/", "text": "not this"}},
            {"text": "sec\"ond \u{e9}\u{1F600} part", "type": "text"}]}, "id": 7})
        .to_string();
        let stand_in = read(&message, 1000);
        assert_eq!(stand_in["id"], 7);
        assert_eq!(stand_in["result"]["isError"], true);
        let text = stand_in["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("first part\nsec\"ond \u{e9}\u{1F600} part\n[result cut: the tool server answered with "),
            "{text}"
        );
        assert!(!text.contains("not this"), "{text}");
    }

    #[test]
    fn the_text_is_cut_at_its_limit_never_inside_an_escape_or_a_character() {
        for text in [
            "ab\\u00e9cdef",
            "abc\u{e9}\u{e9}\u{e9}",
            "a\\\"\\\"\\\"\\\"",
        ] {
            let message = format!(
                r#"{{"jsonrpc":"2.0","id":"call-1","result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
            );
            for limit in 0..12 {
                let stand_in = read(&message, limit);
                assert_eq!(stand_in["id"], "call-1", "{message} at {limit}");
                let kept = stand_in["result"]["content"][0]["text"].as_str().unwrap();
                assert!(kept.contains("[result cut: "), "{kept}");
            }
        }
    }

    #[test]
    fn an_answer_that_is_no_tool_result_becomes_an_error_of_its_id() {
        let listing = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "x"}]}});
        let stand_in = read(&listing.to_string(), 1000);
        assert_eq!(stand_in["id"], 3);
        assert!(
            stand_in["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than hearth reads (1000)")
        );
        // Not JSON at all: an error too, when its id could be read.
        let broken = r#"{"id": 4, "result": {"content": [{"text": "a"#;
        assert_eq!(read(broken, 1000)["error"]["code"], -32603);
    }

    #[test]
    fn a_request_of_the_server_or_a_message_without_id_gets_no_stand_in() {
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message"}),
            json!({"jsonrpc": "2.0", "id": {"nested": 1}, "result": {}}),
        ] {
            let mut oversized = OversizedMessage::new(100);
            oversized.feed(message.to_string().as_bytes());
            assert!(oversized.stand_in(1000).is_none(), "{message}");
        }
    }

    #[test]
    fn deep_nesting_is_counted_not_kept() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","result":{{"content":[{{"type":"text","text":"t"}}],"x":{}{}}},"id":9}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let mut oversized = OversizedMessage::new(100);
        oversized.feed(deep.as_bytes());
        assert!(oversized.containers.capacity() <= TRACKED_DEPTH);
        let stand_in: Value = serde_json::from_slice(&oversized.stand_in(10).unwrap()).unwrap();
        assert_eq!(stand_in["id"], 9);
        assert!(
            stand_in["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("t\n[result cut")
        );
    }
}
