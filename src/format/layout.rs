//! Line layout shared by the line-oriented renderers (Telegram HTML and plain text):
//! list markers and indentation, the text layout of tables, the horizontal rule.

use pulldown_cmark::Alignment;

/// A horizontal rule as a line of text.
pub(crate) const RULE: &str = "──────────";

/// The marker of a list item: a bullet, or the item's number for ordered lists.
pub(crate) fn list_marker(start: Option<u64>, index: usize) -> String {
    match start {
        Some(first) => format!("{}. ", first.saturating_add(index as u64)),
        None => "• ".to_owned(),
    }
}

pub(crate) fn task_marker(done: bool) -> &'static str {
    if done { "☑ " } else { "☐ " }
}

/// Puts `marker` before the first line of a list item's text and indents the following
/// lines by its width, so nested lists and continuation lines line up under the text.
/// Empty lines get no spaces (no trailing whitespace). With `skip_preformatted`, lines of
/// a `<pre>` element are left alone: indenting them would change the code they show.
pub(crate) fn list_item(marker: &str, body: &str, skip_preformatted: bool) -> String {
    let indent = " ".repeat(marker.chars().count());
    let mut out = String::with_capacity(body.len() + marker.len());
    let mut inside_pre = false;
    for (index, line) in body.split('\n').enumerate() {
        if index == 0 {
            // A `<pre>` on the marker's line would swallow the marker into the block.
            if skip_preformatted && line.starts_with("<pre") {
                out.push_str(marker.trim_end());
                out.push('\n');
            } else {
                out.push_str(if line.is_empty() {
                    marker.trim_end()
                } else {
                    marker
                });
            }
        } else {
            out.push('\n');
            let starts_pre = skip_preformatted && line.starts_with("<pre");
            if !line.is_empty() && !inside_pre && !starts_pre {
                out.push_str(&indent);
            }
        }
        out.push_str(line);
        if skip_preformatted {
            // Our own output escapes every `<` of text, so these are tags.
            let opened = line.matches("<pre").count();
            let closed = line.matches("</pre>").count();
            inside_pre = (inside_pre as usize + opened).saturating_sub(closed) > 0;
        }
    }
    out
}

/// Prefixes every line (blank lines with the prefix's trimmed form).
pub(crate) fn prefix_lines(prefix: &str, body: &str) -> String {
    body.split('\n')
        .map(|line| {
            if line.is_empty() {
                prefix.trim_end().to_owned()
            } else {
                format!("{prefix}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A table as aligned text lines: the head, a dashed separator, the rows. Cells are plain
/// text; widths count characters, which is right for the monospace `<pre>` of Telegram.
pub(crate) fn table_lines(
    alignments: &[Alignment],
    head: &[String],
    rows: &[Vec<String>],
) -> Vec<String> {
    let columns = std::iter::once(head.len())
        .chain(rows.iter().map(Vec::len))
        .max()
        .unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for row in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        for (column, cell) in row.iter().enumerate() {
            widths[column] = widths[column].max(cell.chars().count());
        }
    }
    let render_row = |row: &[String]| {
        let cells: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(column, &width)| {
                let cell = row.get(column).map(String::as_str).unwrap_or("");
                let alignment = alignments.get(column).copied().unwrap_or(Alignment::None);
                pad(cell, width, alignment)
            })
            .collect();
        cells.join(" | ").trim_end().to_owned()
    };
    let mut lines = Vec::with_capacity(rows.len() + 2);
    if !head.is_empty() {
        lines.push(render_row(head));
        let separator: Vec<String> = widths.iter().map(|&width| "-".repeat(width)).collect();
        lines.push(separator.join("-+-"));
    }
    lines.extend(rows.iter().map(|row| render_row(row)));
    lines
}

fn pad(cell: &str, width: usize, alignment: Alignment) -> String {
    let missing = width.saturating_sub(cell.chars().count());
    let (left, right) = match alignment {
        Alignment::Right => (missing, 0),
        Alignment::Center => (missing / 2, missing - missing / 2),
        Alignment::Left | Alignment::None => (0, missing),
    };
    format!("{}{cell}{}", " ".repeat(left), " ".repeat(right))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_item_indents_continuation_but_not_code() {
        let body = "first\nsecond\n\n<pre>code\n  kept\n</pre>\nafter";
        assert_eq!(
            list_item("1. ", body, true),
            "1. first\n   second\n\n<pre>code\n  kept\n</pre>\n   after"
        );
    }

    #[test]
    fn table_columns_are_aligned() {
        let head = vec!["Name".to_owned(), "Age".to_owned()];
        let rows = vec![
            vec!["Alice".to_owned(), "7".to_owned()],
            vec!["Bob".to_owned(), "42".to_owned()],
        ];
        let lines = table_lines(&[Alignment::Left, Alignment::Right], &head, &rows);
        assert_eq!(
            lines,
            vec!["Name  | Age", "------+----", "Alice |   7", "Bob   |  42"]
        );
    }
}
