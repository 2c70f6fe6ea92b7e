//! Markdown as Matrix `formatted_body` HTML (`format: org.matrix.custom.html`), within
//! the subset the Matrix spec suggests clients render; its `body` is `plain_text`.

use super::layout::task_marker;
use super::markdown::{
    Block, Inline, inline_text, link_is_allowed, parse, push_escaped, push_escaped_attribute,
    url_repeats_text,
};

/// Renders markdown as Matrix HTML: `p`, `h1`–`h6`, `strong`, `em`, `del`, `code`,
/// `pre><code class="language-x">`, `a href` (http, https, tg, mailto only), lists,
/// `blockquote`, tables, `br`, `hr` and `span data-mx-spoiler` for `||spoiler||`.
/// Images become links (Matrix `img` only takes `mxc://` sources). The model's own HTML
/// is shown as text.
pub fn matrix_html(markdown: &str) -> String {
    let blocks = parse(markdown);
    let mut out = String::new();
    render_blocks(&mut out, &blocks);
    out.trim_end().to_owned()
}

fn render_blocks(out: &mut String, blocks: &[Block]) {
    for (index, block) in blocks.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        render_block(out, block);
    }
}

fn render_block(out: &mut String, block: &Block) {
    match block {
        Block::Paragraph(content) => {
            out.push_str("<p>");
            render_inlines(out, content);
            out.push_str("</p>");
        }
        Block::Plain(content) => render_inlines(out, content),
        Block::Heading { level, content } => {
            let level = level.clamp(&1, &6);
            out.push_str(&format!("<h{level}>"));
            render_inlines(out, content);
            out.push_str(&format!("</h{level}>"));
        }
        Block::Code { language, code } => {
            out.push_str("<pre><code");
            if let Some(language) = language {
                out.push_str(" class=\"language-");
                push_escaped_attribute(out, language);
                out.push('"');
            }
            out.push('>');
            push_escaped(out, code);
            out.push_str("</code></pre>");
        }
        Block::Quote(inner) => {
            out.push_str("<blockquote>\n");
            render_blocks(out, inner);
            out.push_str("\n</blockquote>");
        }
        Block::List { start, items } => {
            match start {
                Some(1) => out.push_str("<ol>\n"),
                Some(first) => out.push_str(&format!("<ol start=\"{first}\">\n")),
                None => out.push_str("<ul>\n"),
            }
            for item in items {
                out.push_str("<li>");
                render_blocks(out, item);
                out.push_str("</li>\n");
            }
            out.push_str(if start.is_some() { "</ol>" } else { "</ul>" });
        }
        Block::Table { head, rows, .. } => {
            // Column alignment is dropped: the spec's attribute list has no `align`.
            out.push_str("<table>\n");
            if !head.is_empty() {
                out.push_str("<thead>\n");
                render_row(out, "th", head);
                out.push_str("</thead>\n");
            }
            if !rows.is_empty() {
                out.push_str("<tbody>\n");
                for row in rows {
                    render_row(out, "td", row);
                }
                out.push_str("</tbody>\n");
            }
            out.push_str("</table>");
        }
        Block::Rule => out.push_str("<hr>"),
    }
}

fn render_row(out: &mut String, cell_tag: &str, cells: &[Vec<Inline>]) {
    out.push_str("<tr>");
    for cell in cells {
        out.push_str(&format!("<{cell_tag}>"));
        render_inlines(out, cell);
        out.push_str(&format!("</{cell_tag}>"));
    }
    out.push_str("</tr>\n");
}

fn render_inlines(out: &mut String, content: &[Inline]) {
    for node in content {
        match node {
            // Only raw HTML the model spread over lines has newlines in a text.
            Inline::Text(text) => {
                for (index, line) in text.split('\n').enumerate() {
                    if index > 0 {
                        out.push_str("<br>");
                    }
                    push_escaped(out, line);
                }
            }
            Inline::Code(code) => {
                out.push_str("<code>");
                push_escaped(out, code);
                out.push_str("</code>");
            }
            Inline::Emphasis(inner) => wrap(out, "<em>", inner, "</em>"),
            Inline::Strong(inner) => wrap(out, "<strong>", inner, "</strong>"),
            Inline::Strikethrough(inner) => wrap(out, "<del>", inner, "</del>"),
            Inline::Spoiler(inner) => {
                wrap(out, "<span data-mx-spoiler>", inner, "</span>");
            }
            Inline::Link {
                url,
                content: inner,
            }
            | Inline::Image { url, alt: inner } => {
                render_link(out, url, inner);
            }
            Inline::TaskMarker { done } => out.push_str(task_marker(*done)),
            // A model's single newline means a new line in a chat, not a space.
            Inline::LineBreak => out.push_str("<br>"),
        }
    }
}

fn wrap(out: &mut String, open: &str, content: &[Inline], close: &str) {
    out.push_str(open);
    render_inlines(out, content);
    out.push_str(close);
}

fn render_link(out: &mut String, url: &str, content: &[Inline]) {
    let text = inline_text(content);
    if link_is_allowed(url) {
        out.push_str("<a href=\"");
        push_escaped_attribute(out, url);
        out.push_str("\">");
        if text.is_empty() {
            push_escaped(out, url);
        } else {
            render_inlines(out, content);
        }
        out.push_str("</a>");
    } else if text.is_empty() {
        push_escaped(out, url);
    } else {
        render_inlines(out, content);
        if !url_repeats_text(url, &text) {
            out.push_str(" (");
            push_escaped(out, url);
            out.push(')');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_escapes_raw_html_and_attributes() {
        assert_eq!(
            matrix_html("Hi <script>alert(1)</script> & [x](https://e.org/?a=\"1\"&b)"),
            "<p>Hi &lt;script&gt;alert(1)&lt;/script&gt; &amp; <a href=\"https://e.org/?a=&quot;1&quot;&amp;b\">x</a></p>"
        );
    }

    #[test]
    fn matrix_blocks_and_inlines() {
        let markdown = "## Title\n\n**b** *i* ~~s~~ `c` ||secret||\nnext line\n\n```py\nprint(1 < 2)\n```\n\n> quoted\n\n---";
        assert_eq!(
            matrix_html(markdown),
            "<h2>Title</h2>\n<p><strong>b</strong> <em>i</em> <del>s</del> <code>c</code> <span data-mx-spoiler>secret</span><br>next line</p>\n<pre><code class=\"language-py\">print(1 &lt; 2)</code></pre>\n<blockquote>\n<p>quoted</p>\n</blockquote>\n<hr>"
        );
    }

    #[test]
    fn matrix_link_inside_a_link_keeps_only_its_text() {
        assert_eq!(
            matrix_html(
                "[![build](https://ci.example.org/badge.svg)](https://ci.example.org) [<d@x>](http:)"
            ),
            "<p><a href=\"https://ci.example.org\">build</a> <a href=\"http:\">d@x</a></p>"
        );
    }

    #[test]
    fn matrix_nested_lists() {
        assert_eq!(
            matrix_html("- a\n  1. b\n  2. c\n- d\n\n5. five"),
            "<ul>\n<li>a\n<ol>\n<li>b</li>\n<li>c</li>\n</ol></li>\n<li>d</li>\n</ul>\n<ol start=\"5\">\n<li>five</li>\n</ol>"
        );
    }

    #[test]
    fn matrix_table() {
        assert_eq!(
            matrix_html("| a | b |\n|---|---|\n| 1 | **2** |"),
            "<table>\n<thead>\n<tr><th>a</th><th>b</th></tr>\n</thead>\n<tbody>\n<tr><td>1</td><td><strong>2</strong></td></tr>\n</tbody>\n</table>"
        );
    }

    #[test]
    fn matrix_refuses_unsafe_links() {
        assert_eq!(
            matrix_html("[x](javascript:alert(1)) ![y](https://e.org/y.png)"),
            "<p>x (javascript:alert(1)) <a href=\"https://e.org/y.png\">y</a></p>"
        );
    }
}
