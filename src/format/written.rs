//! A reply whose markdown renders to nothing a reader would see (only link reference
//! definitions, an empty code block): sent as written instead, or, when it is blank too,
//! as a note that the answer was empty, never as no message at all.

use super::markdown::push_escaped;
use super::plain_text::plain_text;

/// What is sent for an answer that was empty.
pub const EMPTY_ANSWER: &str = "(The answer was empty.)";

/// `None` when `markdown` shows something rendered; else the text to send instead.
pub fn shown_as_written(markdown: &str) -> Option<String> {
    if !plain_text(markdown).trim().is_empty() {
        return None;
    }
    let written = markdown.trim();
    Some(if written.is_empty() {
        EMPTY_ANSWER.to_string()
    } else {
        written.to_string()
    })
}

/// `text` escaped for HTML content (`&`, `<`, `>`): shown literally.
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    push_escaped(&mut escaped, text);
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_renders_to_nothing_is_sent_as_written() {
        assert_eq!(
            shown_as_written("[x]: http://ref\n"),
            Some("[x]: http://ref".to_string())
        );
        assert_eq!(shown_as_written("```\n```"), Some("```\n```".to_string()));
        assert_eq!(shown_as_written("  \n"), Some(EMPTY_ANSWER.to_string()));
        assert_eq!(shown_as_written("see [x]\n\n[x]: http://ref"), None);
        assert_eq!(shown_as_written("**hi**"), None);
        assert_eq!(escape_html("a < b & c"), "a &lt; b &amp; c");
    }
}
