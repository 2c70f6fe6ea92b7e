//! Markdown as Telegram Bot API HTML (`parse_mode: HTML`): only the tags Telegram
//! accepts, everything else escaped, with headings, lists, tables and rules laid out as
//! text lines since Telegram has no tags for them.

use super::layout::{RULE, list_item, list_marker, table_lines, task_marker};
use super::markdown::{
    Block, Inline, inline_text, link_is_allowed, parse, push_escaped, push_escaped_attribute,
    url_repeats_text,
};
use super::plain_text::plain_cells;

/// Renders markdown as Telegram HTML: `b`, `i`, `s`, `code`, `pre` (with
/// `<code class="language-x">` for fenced code), `a href` (http, https, tg, mailto only),
/// `blockquote` and `tg-spoiler` for `||spoiler||`. Headings become bold lines, lists "• " /
/// "1. " lines, tables monospace `<pre>` text. The model's own HTML is shown as text.
pub fn telegram_html(markdown: &str) -> String {
    let blocks = parse(markdown);
    let mut renderer = Renderer::default();
    renderer.blocks(&blocks, "\n\n").trim_end().to_owned()
}

/// Rendering state: which styles are open, because Telegram refuses a `<b>` inside a
/// `<b>` or a blockquote inside a blockquote, and those come up (`# **Title**`, `> > a`).
#[derive(Default)]
struct Renderer {
    in_quote: bool,
    bold: bool,
    italic: bool,
    strike: bool,
    spoiler: bool,
}

impl Renderer {
    fn blocks(&mut self, blocks: &[Block], separator: &str) -> String {
        let mut rendered = Vec::with_capacity(blocks.len());
        for block in blocks {
            let text = self.block(block);
            if !text.is_empty() {
                rendered.push(text);
            }
        }
        rendered.join(separator)
    }

    fn block(&mut self, block: &Block) -> String {
        let mut out = String::new();
        match block {
            Block::Paragraph(content) | Block::Plain(content) => self.inlines(&mut out, content),
            Block::Heading { content, .. } => {
                self.styled(&mut out, Style::Bold, content);
            }
            Block::Code { language, code } if !code.is_empty() => {
                out.push_str("<pre>");
                if let Some(language) = language {
                    out.push_str("<code class=\"language-");
                    push_escaped_attribute(&mut out, language);
                    out.push_str("\">");
                    push_escaped(&mut out, code);
                    out.push_str("</code>");
                } else {
                    push_escaped(&mut out, code);
                }
                out.push_str("</pre>");
            }
            Block::Code { .. } => {}
            Block::Quote(inner) if self.in_quote => out = self.blocks(inner, "\n\n"),
            Block::Quote(inner) => {
                self.in_quote = true;
                let body = self.blocks(inner, "\n\n");
                self.in_quote = false;
                if !body.is_empty() {
                    out = format!("<blockquote>{body}</blockquote>");
                }
            }
            Block::List { start, items } => {
                let mut lines = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let body = self.blocks(item, "\n");
                    lines.push(list_item(&list_marker(*start, index), &body, true));
                }
                out = lines.join("\n");
            }
            Block::Table {
                alignments,
                head,
                rows,
            } => {
                let (head, rows) = plain_cells(head, rows);
                out.push_str("<pre>");
                push_escaped(&mut out, &table_lines(alignments, &head, &rows).join("\n"));
                out.push_str("</pre>");
            }
            Block::Rule => out.push_str(RULE),
        }
        out
    }

    fn inlines(&mut self, out: &mut String, content: &[Inline]) {
        for node in content {
            match node {
                Inline::Text(text) => push_escaped(out, text),
                Inline::Code(code) => {
                    out.push_str("<code>");
                    push_escaped(out, code);
                    out.push_str("</code>");
                }
                Inline::Emphasis(inner) => self.styled(out, Style::Italic, inner),
                Inline::Strong(inner) => self.styled(out, Style::Bold, inner),
                Inline::Strikethrough(inner) => self.styled(out, Style::Strike, inner),
                Inline::Spoiler(inner) => self.styled(out, Style::Spoiler, inner),
                Inline::Link {
                    url,
                    content: inner,
                }
                | Inline::Image { url, alt: inner } => {
                    self.link(out, url, inner);
                }
                Inline::TaskMarker { done } => out.push_str(task_marker(*done)),
                Inline::LineBreak => out.push('\n'),
            }
        }
    }

    /// Wraps content in a style's tag, unless that style is already open.
    fn styled(&mut self, out: &mut String, style: Style, content: &[Inline]) {
        let flag = match style {
            Style::Bold => &mut self.bold,
            Style::Italic => &mut self.italic,
            Style::Strike => &mut self.strike,
            Style::Spoiler => &mut self.spoiler,
        };
        if *flag {
            self.inlines(out, content);
            return;
        }
        *flag = true;
        let tag = style.tag();
        out.push('<');
        out.push_str(tag);
        out.push('>');
        self.inlines(out, content);
        out.push_str("</");
        out.push_str(tag);
        out.push('>');
        match style {
            Style::Bold => self.bold = false,
            Style::Italic => self.italic = false,
            Style::Strike => self.strike = false,
            Style::Spoiler => self.spoiler = false,
        }
    }

    /// A link (or an image, shown as a link to it); a refused scheme is shown as text.
    fn link(&mut self, out: &mut String, url: &str, content: &[Inline]) {
        let text = inline_text(content);
        if link_is_allowed(url) {
            out.push_str("<a href=\"");
            push_escaped_attribute(out, url);
            out.push_str("\">");
            if text.is_empty() {
                push_escaped(out, url);
            } else {
                self.inlines(out, content);
            }
            out.push_str("</a>");
        } else if text.is_empty() {
            push_escaped(out, url);
        } else {
            self.inlines(out, content);
            if !url_repeats_text(url, &text) {
                out.push_str(" (");
                push_escaped(out, url);
                out.push(')');
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Style {
    Bold,
    Italic,
    Strike,
    Spoiler,
}

impl Style {
    fn tag(self) -> &'static str {
        match self {
            Style::Bold => "b",
            Style::Italic => "i",
            Style::Strike => "s",
            Style::Spoiler => "tg-spoiler",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telegram_escapes_raw_html_ampersands_and_quotes() {
        assert_eq!(
            telegram_html("Hi <script>alert(\"x\")</script> & \"bye\""),
            "Hi &lt;script&gt;alert(\"x\")&lt;/script&gt; &amp; \"bye\""
        );
        assert_eq!(
            telegram_html("<div onclick=\"x\">\nblock html\n</div>"),
            "&lt;div onclick=\"x\"&gt;\nblock html\n&lt;/div&gt;"
        );
        assert_eq!(
            telegram_html("[a](https://example.org/?q=\"x\"&y=<z>)"),
            "<a href=\"https://example.org/?q=&quot;x&quot;&amp;y=&lt;z&gt;\">a</a>"
        );
    }

    #[test]
    fn telegram_inline_styles_and_code() {
        assert_eq!(
            telegram_html("**bold**, *italic*, ~~gone~~, `a<b>` and ||hidden||"),
            "<b>bold</b>, <i>italic</i>, <s>gone</s>, <code>a&lt;b&gt;</code> and <tg-spoiler>hidden</tg-spoiler>"
        );
    }

    #[test]
    fn telegram_fenced_code_keeps_its_language() {
        assert_eq!(
            telegram_html("Run:\n\n```rust\nfn main() { if a < b {} }\n```\n\n```\nplain\n```"),
            "Run:\n\n<pre><code class=\"language-rust\">fn main() { if a &lt; b {} }</code></pre>\n\n<pre>plain</pre>"
        );
    }

    #[test]
    fn telegram_links_only_with_allowed_schemes() {
        assert_eq!(
            telegram_html(
                "[site](https://example.org) [mail](mailto:mum@example.org) [chat](tg://resolve?domain=x) <dad@example.org>"
            ),
            "<a href=\"https://example.org\">site</a> <a href=\"mailto:mum@example.org\">mail</a> <a href=\"tg://resolve?domain=x\">chat</a> <a href=\"mailto:dad@example.org\">dad@example.org</a>"
        );
        assert_eq!(
            telegram_html(
                "[click](javascript:alert(1)) [file](./notes.md) ![cat](data:image/png;base64,AAA)"
            ),
            "click (javascript:alert(1)) file (./notes.md) cat (data:image/png;base64,AAA)"
        );
        assert_eq!(
            telegram_html("![a cat](https://example.org/cat.png)"),
            "<a href=\"https://example.org/cat.png\">a cat</a>"
        );
    }

    #[test]
    fn telegram_link_inside_a_link_keeps_only_its_text() {
        // Found by the fuzz target `format`: Telegram refuses a link inside a link.
        assert_eq!(telegram_html("[<d@x>](http:)"), "<a href=\"http:\">d@x</a>");
        assert_eq!(
            telegram_html("[![build](https://ci.example.org/badge.svg)](https://ci.example.org)"),
            "<a href=\"https://ci.example.org\">build</a>"
        );
    }

    #[test]
    fn telegram_headings_become_bold_lines() {
        assert_eq!(
            telegram_html("# Plan for **today**\n\nText\n\n## Later\nmore"),
            "<b>Plan for today</b>\n\nText\n\n<b>Later</b>\n\nmore"
        );
    }

    #[test]
    fn telegram_nested_lists_are_indented_lines() {
        let markdown = "Shopping:\n\n- milk\n- fruit\n  - apples\n  - pears\n    1. green\n    2. red\n- bread\n\n3. third\n4. fourth";
        assert_eq!(
            telegram_html(markdown),
            "Shopping:\n\n• milk\n• fruit\n  • apples\n  • pears\n    1. green\n    2. red\n• bread\n\n3. third\n4. fourth"
        );
        assert_eq!(
            telegram_html("- [x] done\n- [ ] todo"),
            "• ☑ done\n• ☐ todo"
        );
    }

    #[test]
    fn telegram_blockquotes_do_not_nest() {
        assert_eq!(
            telegram_html("> Mum said:\n>\n> > be home by 6\n\nok"),
            "<blockquote>Mum said:\n\nbe home by 6</blockquote>\n\nok"
        );
    }

    #[test]
    fn telegram_table_is_monospace_text() {
        let markdown =
            "| Who | Chore |\n|:---|---:|\n| Ann | [dishes](https://x.org) |\n| Bo <3 | bins |";
        assert_eq!(
            telegram_html(markdown),
            "<pre>Who   |                  Chore\n------+-----------------------\nAnn   | dishes (https://x.org)\nBo &lt;3 |                   bins</pre>"
        );
    }

    #[test]
    fn telegram_rule_is_a_line() {
        assert_eq!(
            telegram_html("above\n\n---\n\nbelow"),
            format!("above\n\n{RULE}\n\nbelow")
        );
    }

    #[test]
    fn telegram_plain_text_with_stray_markers_stays_text() {
        let markdown =
            "2 * 3 = 6 and 4*5, snake_case_name, __init__ and *unclosed or _open\nnext ** line";
        let html = telegram_html(markdown);
        assert_eq!(
            html,
            "2 * 3 = 6 and 4*5, snake_case_name, <b>init</b> and *unclosed or _open\nnext ** line"
        );
    }

    #[test]
    fn telegram_output_has_no_trailing_whitespace() {
        let html = telegram_html("para  \n\n- item   \n\n> quote\n\n\n");
        assert!(html.lines().all(|line| line == line.trim_end()), "{html:?}");
        assert!(!html.ends_with(char::is_whitespace));
    }
}
