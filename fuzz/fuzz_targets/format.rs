//! The model's markdown rendered for the chat platforms (`hearth::format`).
//!
//! Properties: Telegram HTML uses only the tags and attributes Telegram accepts, properly
//! nested, links only to allowed schemes; so does Matrix HTML with the spec's tags. Split
//! into messages at several limits, each Telegram chunk is itself such HTML, within the
//! limit (or a single character, when the limit cannot hold one with its tags), and the
//! chunks joined give back the text: the same characters in the same order, each inside
//! the same tags as in the whole message (tags open at a cut are closed and reopened with
//! their attributes), except whitespace where a chunk of nothing but whitespace was
//! dropped. Plain text splits the same way. A reply that renders to nothing is sent as
//! written, and only then.
#![no_main]

use hearth::format::{
    TELEGRAM_MESSAGE_LIMIT, matrix_html, plain_text, shown_as_written, split_plain,
    split_telegram_html, telegram_html,
};
use hearth_fuzz_checks::html::{
    check_matrix, check_telegram, same_but_dropped_whitespace, styled_text,
};
use libfuzzer_sys::fuzz_target;

fn utf16_length(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The limits each input is split at: Telegram's own, and smaller ones that make many
/// cuts (down to limits too small for a tag and a character).
fn limits(markdown: &str) -> [usize; 3] {
    let length = markdown.len();
    [TELEGRAM_MESSAGE_LIMIT, 24 + length % 200, 1 + length % 13]
}

fn check_telegram_chunks(html: &str, limit: usize) {
    let chunks = split_telegram_html(html, limit);
    let whole = styled_text(html).expect("telegram html reads");
    let mut joined = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        if let Err(problem) = check_telegram(chunk) {
            panic!("chunk {index} at limit {limit} is not telegram html: {problem}\n{chunk:?}");
        }
        let text = styled_text(chunk).expect("a chunk reads");
        assert!(
            text.iter().any(|(c, _)| !c.is_whitespace()),
            "chunk {index} at limit {limit} shows nothing: {chunk:?}"
        );
        let length = utf16_length(chunk);
        assert!(
            length <= limit || text.len() == 1,
            "chunk {index} is {length} units, over the limit {limit}, with {} characters: {chunk:?}",
            text.len()
        );
        joined.extend(text);
    }
    if let Err(difference) =
        same_but_dropped_whitespace(&whole, &joined, |(c, _)| c.is_whitespace())
    {
        panic!(
            "the chunks at limit {limit} do not give back the text: {difference}\n{html:?}\n{chunks:?}"
        );
    }
}

fn check_plain_chunks(text: &str, limit: usize) {
    let chunks = split_plain(text, limit);
    let mut joined = Vec::new();
    for (index, chunk) in chunks.iter().enumerate() {
        assert!(
            chunk.chars().any(|c| !c.is_whitespace()),
            "plain chunk {index} at limit {limit} shows nothing: {chunk:?}"
        );
        let length = utf16_length(chunk);
        assert!(
            length <= limit || chunk.chars().count() == 1,
            "plain chunk {index} is {length} units, over the limit {limit}: {chunk:?}"
        );
        joined.extend(chunk.chars());
    }
    let whole: Vec<char> = text.chars().collect();
    if let Err(difference) = same_but_dropped_whitespace(&whole, &joined, |c| c.is_whitespace()) {
        panic!(
            "the plain chunks at limit {limit} do not give back the text: {difference}\n{text:?}\n{chunks:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(markdown) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let telegram = telegram_html(markdown);
    if let Err(problem) = check_telegram(&telegram) {
        panic!("not telegram html: {problem}\n{telegram:?}");
    }
    let matrix = matrix_html(markdown);
    if let Err(problem) = check_matrix(&matrix) {
        panic!("not matrix html: {problem}\n{matrix:?}");
    }
    let plain = plain_text(markdown);
    assert_eq!(plain, plain.trim_end(), "plain text ends in whitespace");
    match shown_as_written(markdown) {
        Some(written) => assert!(
            plain.trim().is_empty() && !written.trim().is_empty(),
            "sent as written although it renders: {plain:?}"
        ),
        None => assert!(
            !plain.trim().is_empty(),
            "renders to nothing but is not sent as written"
        ),
    }
    for limit in limits(markdown) {
        check_telegram_chunks(&telegram, limit);
        check_plain_chunks(&plain, limit);
    }
});
