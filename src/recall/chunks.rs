//! A text cut into the pieces recall indexes and finds: each short enough that a snippet of
//! it is worth showing and its words weigh in its rank, cut where the text itself breaks
//! (a blank line, then a line, then a sentence's end, then a space), never inside a
//! character.

/// The most characters one chunk holds: about a paragraph of a letter.
pub const MAX_CHUNK_CHARS: usize = 800;

/// The places a chunk may end, best first: after a blank line, a line, a sentence, a word.
const BREAKS: &[&str] = &["\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "];

/// `text` cut into chunks of at most `MAX_CHUNK_CHARS` characters, each trimmed, none
/// empty, in order. A text that fits is one chunk.
pub fn chunks_of(text: &str) -> Vec<String> {
    chunks_within(text, MAX_CHUNK_CHARS)
}

/// `chunks_of` with a bound of `max_chars` (at least 1).
pub fn chunks_within(text: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut chunks = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let cut = cut_at(rest, max_chars);
        let (chunk, after) = rest.split_at(cut);
        let chunk = chunk.trim();
        if !chunk.is_empty() {
            chunks.push(chunk.to_owned());
        }
        rest = after.trim_start();
    }
    chunks
}

/// Where the first chunk of `text` (trimmed at its start) ends: all of it when it fits,
/// else after the best break within `max_chars` characters, else at the bound itself.
fn cut_at(text: &str, max_chars: usize) -> usize {
    let Some((bound, _)) = text.char_indices().nth(max_chars) else {
        return text.len();
    };
    let window = &text[..bound];
    // A break in the window's first quarter would leave a chunk too small to be worth it.
    let least = window.len() / 4;
    BREAKS
        .iter()
        .find_map(|separator| {
            window
                .rfind(separator)
                .map(|at| at + separator.len())
                .filter(|end| *end > least)
        })
        .unwrap_or(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_one_chunk_trimmed() {
        assert_eq!(
            chunks_of("  Max needs size 32 shoes.\n"),
            vec!["Max needs size 32 shoes."]
        );
        assert!(chunks_of("   \n\t ").is_empty());
    }

    #[test]
    fn a_long_text_is_cut_at_paragraphs_first() {
        let first = "The school trip to the zoo is on 14 March. ".repeat(8);
        let second = "Please bring 12 euros in an envelope by Friday. ".repeat(8);
        let text = format!("{}\n\n{}", first.trim(), second.trim());
        let chunks = chunks_within(&text, 500);
        assert_eq!(
            chunks,
            vec![first.trim().to_owned(), second.trim().to_owned()]
        );
    }

    #[test]
    fn without_paragraphs_a_chunk_ends_after_a_sentence() {
        let text = "Erste Zeile über die Klassenfahrt. ".repeat(40);
        for chunk in chunks_within(&text, 200) {
            assert!(chunk.chars().count() <= 200, "{chunk:?}");
            assert!(chunk.ends_with('.'), "{chunk:?}");
        }
    }

    #[test]
    fn a_text_without_any_break_is_cut_at_the_bound_inside_no_character() {
        let text = "é".repeat(1000);
        let chunks = chunks_within(&text, 300);
        assert_eq!(chunks.len(), 4);
        assert!(chunks.iter().all(|chunk| chunk.chars().count() <= 300));
        assert_eq!(chunks.concat(), text);
    }

    #[test]
    fn nothing_is_lost_but_the_spaces_between_chunks() {
        let text = "Wifi at grandma's: the network is Sonnenblume and the password is \
                    kartoffel-42. "
            .repeat(30);
        let joined: String = chunks_of(&text).join(" ");
        let words = |text: &str| {
            text.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(words(&joined), words(&text));
    }
}
