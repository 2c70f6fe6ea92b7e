//! Tests of splitting, with a checker that every chunk is balanced HTML on its own.

use super::split::{TELEGRAM_MESSAGE_LIMIT, split_plain, split_telegram_html};
use super::{plain_text, telegram_html};

fn utf16_length(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Checks that `html` is a sequence of text, known entities and properly nested tags.
fn check_balanced(html: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let mut quote = None;
                let end = rest
                    .char_indices()
                    .find(|&(_, c)| match (quote, c) {
                        (Some(open), c) if c == open => {
                            quote = None;
                            false
                        }
                        (Some(_), _) => false,
                        (None, '"') => {
                            quote = Some('"');
                            false
                        }
                        (None, c) => c == '>',
                    })
                    .map(|(index, _)| index)
                    .ok_or_else(|| format!("unterminated tag in {rest:?}"))?;
                let tag = &rest[1..end];
                if let Some(name) = tag.strip_prefix('/') {
                    match stack.pop() {
                        Some(open) if open == name => {}
                        open => return Err(format!("</{name}> closes {open:?}")),
                    }
                } else {
                    let name = tag.split(' ').next().unwrap_or_default().to_owned();
                    if name.is_empty() {
                        return Err(format!("empty tag in {rest:?}"));
                    }
                    stack.push(name);
                }
                rest = &rest[end + 1..];
            }
            '&' => {
                let entity = ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .into_iter()
                    .find(|entity| rest.starts_with(entity))
                    .ok_or_else(|| format!("bare & in {rest:?}"))?;
                rest = &rest[entity.len()..];
            }
            '>' => return Err("bare >".to_owned()),
            c => rest = &rest[c.len_utf8()..],
        }
    }
    match stack.is_empty() {
        true => Ok(()),
        false => Err(format!("unclosed {stack:?}")),
    }
}

/// The text a reader sees: tags removed, entities decoded.
fn text_content(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    let mut in_quote = false;
    for c in html.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '"') => in_quote = !in_quote,
            (true, '>') if !in_quote => in_tag = false,
            (true, _) => {}
            (false, c) => text.push(c),
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn assert_chunks_valid(chunks: &[String], limit: usize) {
    for (index, chunk) in chunks.iter().enumerate() {
        let length = utf16_length(chunk);
        assert!(length <= limit, "chunk {index} is {length} > {limit} units");
        if let Err(problem) = check_balanced(chunk) {
            panic!("chunk {index} is not balanced: {problem}\n{chunk}");
        }
    }
}

/// A reply of about 10,000 characters: paragraphs with markup and a long code block.
fn long_reply() -> String {
    let mut markdown = String::from("# Weekly plan\n\n");
    for day in 0..20 {
        markdown.push_str(&format!(
            "Day {day}: **Mum** drives, *Dad* cooks & the kids <help> with [chores](https://example.org/chores?day={day}&x=\"y\"). ||Surprise {day}||\n\n"
        ));
    }
    markdown.push_str("```rust\n");
    for line in 0..120 {
        markdown.push_str(&format!(
            "    let value_{line} = if a < b && c > d {{ \"x\" }} else {{ \"y\" }};\n"
        ));
    }
    markdown.push_str("```\n\n- first item\n- second item with `code`\n  - nested <item>\n\n");
    for paragraph in 0..15 {
        markdown.push_str(&format!(
            "> Quote {paragraph}: remember the dentist at 10:00 and the cake 🎂 for grandma.\n\n"
        ));
    }
    markdown
}

#[test]
fn split_long_reply_keeps_limit_balance_and_text() {
    let markdown = long_reply();
    assert!(markdown.chars().count() >= 10_000, "{}", markdown.len());
    let html = telegram_html(&markdown);
    check_balanced(&html).expect("the whole reply is balanced");
    for limit in [TELEGRAM_MESSAGE_LIMIT, 1000, 333] {
        let chunks = split_telegram_html(&html, limit);
        assert!(chunks.len() > 1, "limit {limit}");
        assert_chunks_valid(&chunks, limit);
        let joined: String = chunks.iter().map(|chunk| text_content(chunk)).collect();
        assert_eq!(joined, text_content(&html), "limit {limit}");
    }
}

#[test]
fn split_long_code_block_reopens_pre_and_language() {
    let html = telegram_html(&long_reply());
    let chunks = split_telegram_html(&html, TELEGRAM_MESSAGE_LIMIT);
    let reopened = chunks
        .iter()
        .skip(1)
        .any(|chunk| chunk.starts_with("<pre><code class=\"language-rust\">"));
    assert!(reopened, "{chunks:#?}");
}

#[test]
fn split_plain_long_reply_keeps_limit_and_text() {
    let text = plain_text(&long_reply());
    let chunks = split_plain(&text, TELEGRAM_MESSAGE_LIMIT);
    assert!(chunks.len() > 1);
    assert!(
        chunks
            .iter()
            .all(|chunk| utf16_length(chunk) <= TELEGRAM_MESSAGE_LIMIT)
    );
    assert_eq!(chunks.concat(), text);
}

#[test]
fn split_reopens_tags_with_their_attributes() {
    let html = "<b>bold <a href=\"https://x.org/?a=1&amp;b=2\">some link text here</a> tail</b>";
    let limit = 60;
    let chunks = split_telegram_html(html, limit);
    assert_chunks_valid(&chunks, limit);
    assert!(chunks.len() > 1, "{chunks:?}");
    assert!(
        chunks[1].starts_with("<b><a href=\"https://x.org/?a=1&amp;b=2\">"),
        "{chunks:?}"
    );
    let joined: String = chunks.iter().map(|chunk| text_content(chunk)).collect();
    assert_eq!(joined, text_content(html));
}

#[test]
fn split_prefers_paragraph_then_line_then_space() {
    let paragraphs = format!("{}\n\n{}\nthird line", "a".repeat(30), "b".repeat(10));
    assert_eq!(
        split_plain(&paragraphs, 50),
        vec![
            format!("{}\n\n", "a".repeat(30)),
            format!("{}\nthird line", "b".repeat(10))
        ]
    );
    let lines = format!(
        "{} {}\n{} end",
        "a".repeat(20),
        "b".repeat(20),
        "c".repeat(10)
    );
    assert_eq!(
        split_plain(&lines, 50)[0],
        format!("{} {}\n", "a".repeat(20), "b".repeat(20))
    );
    let words = "word ".repeat(20);
    let chunks = split_plain(&words, 23);
    assert!(
        chunks.iter().all(|chunk| chunk.ends_with(' ')),
        "{chunks:?}"
    );
    assert_eq!(chunks.concat(), words);
}

#[test]
fn split_ignores_an_early_paragraph_break_for_a_fuller_chunk() {
    let text = format!("short\n\n{}", "word ".repeat(40));
    let chunks = split_plain(&text, 100);
    assert!(utf16_length(&chunks[0]) > 50, "{chunks:?}");
}

#[test]
fn split_never_cuts_entities_or_tags() {
    let html = format!("<i>{}</i>", "&amp;&lt;".repeat(50));
    for limit in [20, 21, 22, 23, 30] {
        let chunks = split_telegram_html(&html, limit);
        assert_chunks_valid(&chunks, limit);
        let joined: String = chunks.iter().map(|chunk| text_content(chunk)).collect();
        assert_eq!(joined, "&<".repeat(50));
    }
}

#[test]
fn split_counts_utf16_units_and_keeps_surrogate_pairs() {
    let text = "😀".repeat(3000);
    let chunks = split_plain(&text, TELEGRAM_MESSAGE_LIMIT);
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].chars().count(), TELEGRAM_MESSAGE_LIMIT / 2);
    assert_eq!(chunks.concat(), text);
    // An odd limit: the cut comes before the emoji that would straddle it.
    let chunks = split_telegram_html("<b>a😀😀😀</b>", 11);
    assert_eq!(chunks, vec!["<b>a😀</b>", "<b>😀😀</b>"]);
}

#[test]
fn split_keeps_emoji_sequences_together() {
    // 👍🏽 is two code points (thumbs up, skin tone), four UTF-16 units.
    let chunks = split_plain("ab👍🏽cd", 4);
    assert_eq!(chunks, vec!["ab", "👍🏽", "cd"]);
}

#[test]
fn split_single_word_longer_than_limit() {
    let word = "x".repeat(10_000);
    let chunks = split_telegram_html(&word, TELEGRAM_MESSAGE_LIMIT);
    let lengths: Vec<usize> = chunks.iter().map(|chunk| chunk.len()).collect();
    assert_eq!(lengths, vec![4096, 4096, 1808]);
    let html = format!("<code>{word}</code>");
    let chunks = split_telegram_html(&html, TELEGRAM_MESSAGE_LIMIT);
    assert_chunks_valid(&chunks, TELEGRAM_MESSAGE_LIMIT);
    assert_eq!(chunks.len(), 3);
}

#[test]
fn split_short_and_empty_texts() {
    assert_eq!(split_telegram_html("<b>hi</b>", 4096), vec!["<b>hi</b>"]);
    assert!(split_telegram_html("", 4096).is_empty());
    assert!(split_plain(" \n\n ", 4096).is_empty());
}

#[test]
fn tag_balance_checker_finds_problems() {
    assert!(check_balanced("<b>x <i>y</i></b> &amp;").is_ok());
    assert!(check_balanced("<b>x <i>y</b></i>").is_err());
    assert!(check_balanced("<b>x").is_err());
    assert!(check_balanced("a & b").is_err());
    assert!(check_balanced("<a href=\"x\">y").is_err());
}
