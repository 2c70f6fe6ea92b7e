//! Markdown as readable plain text: the fallback when Telegram refuses a message's
//! entities, and the `body` that goes with Matrix's `formatted_body`.

use super::layout::{RULE, list_item, list_marker, prefix_lines, table_lines, task_marker};
use super::markdown::{Block, Inline, inline_text, parse, url_repeats_text};

/// Renders markdown as text without markup: lists as "• " / "1. " lines, links as
/// "text (url)", code as it is, quotes with "> ", tables as aligned columns.
pub fn plain_text(markdown: &str) -> String {
    let blocks = parse(markdown);
    render_blocks(&blocks, "\n\n").trim_end().to_owned()
}

fn render_blocks(blocks: &[Block], separator: &str) -> String {
    blocks
        .iter()
        .map(render_block)
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(separator)
}

fn render_block(block: &Block) -> String {
    match block {
        Block::Paragraph(content) | Block::Plain(content) => plain_inlines(content),
        Block::Heading { content, .. } => plain_inlines(content),
        Block::Code { code, .. } => code.clone(),
        Block::Quote(inner) => prefix_lines("> ", &render_blocks(inner, "\n\n")),
        Block::List { start, items } => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                list_item(
                    &list_marker(*start, index),
                    &render_blocks(item, "\n"),
                    false,
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Block::Table {
            alignments,
            head,
            rows,
        } => {
            let (head, rows) = plain_cells(head, rows);
            table_lines(alignments, &head, &rows).join("\n")
        }
        Block::Rule => RULE.to_owned(),
    }
}

/// The cells of a table as plain text, for the text layout of tables.
pub(crate) fn plain_cells(
    head: &[Vec<Inline>],
    rows: &[Vec<Vec<Inline>>],
) -> (Vec<String>, Vec<Vec<String>>) {
    let cells = |row: &[Vec<Inline>]| row.iter().map(|cell| plain_inlines(cell)).collect();
    (cells(head), rows.iter().map(|row| cells(row)).collect())
}

/// Inline content as plain text; links keep their URL in parentheses.
pub(crate) fn plain_inlines(content: &[Inline]) -> String {
    let mut out = String::new();
    for node in content {
        match node {
            Inline::Text(text) | Inline::Code(text) => out.push_str(text),
            Inline::Emphasis(inner)
            | Inline::Strong(inner)
            | Inline::Strikethrough(inner)
            | Inline::Spoiler(inner) => out.push_str(&plain_inlines(inner)),
            Inline::Link {
                url,
                content: inner,
            }
            | Inline::Image { url, alt: inner } => {
                let text = plain_inlines(inner);
                if text.is_empty() {
                    out.push_str(url);
                } else if url_repeats_text(url, &inline_text(inner)) {
                    out.push_str(&text);
                } else {
                    out.push_str(&format!("{text} ({url})"));
                }
            }
            Inline::TaskMarker { done } => out.push_str(task_marker(*done)),
            Inline::LineBreak => out.push('\n'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_drops_markup_and_keeps_urls() {
        let markdown = "# Title\n\nSome **bold**, *italic* and `code`; see [the docs](https://example.org/docs) or <https://example.org>.";
        assert_eq!(
            plain_text(markdown),
            "Title\n\nSome bold, italic and code; see the docs (https://example.org/docs) or https://example.org."
        );
    }

    #[test]
    fn plain_text_lists_quotes_and_code() {
        let markdown = "- one\n- two\n  1. nested\n  2. again\n\n> quoted\n> text\n\n```sh\necho <hi> & bye\n```";
        assert_eq!(
            plain_text(markdown),
            "• one\n• two\n  1. nested\n  2. again\n\n> quoted\n> text\n\necho <hi> & bye"
        );
    }

    #[test]
    fn plain_text_keeps_raw_html_and_stray_markers_as_written() {
        assert_eq!(
            plain_text("2 * 3 = 6, snake_case_name, <b>not bold</b> & *unclosed"),
            "2 * 3 = 6, snake_case_name, <b>not bold</b> & *unclosed"
        );
    }

    #[test]
    fn plain_text_table_is_aligned() {
        let markdown = "| Who | Chore |\n|---|---|\n| Ann | dishes |\n| Bo | bins |";
        assert_eq!(
            plain_text(markdown),
            "Who | Chore\n----+-------\nAnn | dishes\nBo  | bins"
        );
    }
}
