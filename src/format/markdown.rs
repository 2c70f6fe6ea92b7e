//! The LLM's markdown read into a small document tree that the renderers walk.
//!
//! Owns the parsing (pulldown-cmark with tables, strikethrough and task lists), the
//! `||spoiler||` extension, the bound on nesting depth, and the helpers every renderer
//! shares: which link schemes are allowed, HTML escaping, code-block languages.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, LinkType, Options, Parser, Tag};

/// Deeper nesting than this is flattened into the enclosing level, so that rendering (which
/// recurses over the tree) keeps a small stack whatever the model was talked into writing.
const MAX_NESTING: usize = 24;

/// Link schemes a chat client may follow; anything else (javascript:, data:, relative paths)
/// is shown as text.
const ALLOWED_LINK_SCHEMES: [&str; 4] = ["http", "https", "tg", "mailto"];

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// A paragraph of its own.
    Paragraph(Vec<Inline>),
    /// Text of a tight list item: a paragraph without the paragraph wrapper.
    Plain(Vec<Inline>),
    Heading {
        level: u8,
        content: Vec<Inline>,
    },
    Code {
        language: Option<String>,
        code: String,
    },
    Quote(Vec<Block>),
    List {
        /// The first number of an ordered list; `None` for a bullet list.
        start: Option<u64>,
        items: Vec<Vec<Block>>,
    },
    Table {
        alignments: Vec<Alignment>,
        head: Vec<Vec<Inline>>,
        rows: Vec<Vec<Vec<Inline>>>,
    },
    Rule,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Inline {
    /// Text as the reader sees it (not escaped); raw HTML from the model lands here too.
    Text(String),
    Code(String),
    Emphasis(Vec<Inline>),
    Strong(Vec<Inline>),
    Strikethrough(Vec<Inline>),
    Spoiler(Vec<Inline>),
    Link {
        url: String,
        content: Vec<Inline>,
    },
    Image {
        url: String,
        alt: Vec<Inline>,
    },
    TaskMarker {
        done: bool,
    },
    LineBreak,
}

/// Parses markdown into blocks. Never fails: whatever CommonMark does not recognise is text.
pub(crate) fn parse(markdown: &str) -> Vec<Block> {
    // Single tildes parse as subscript, which is rendered back as the literal `~text~`:
    // models write "~5 km" for "about 5 km", and that must not strike text through.
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_SUBSCRIPT
        | Options::ENABLE_TASKLISTS;
    let mut events = Parser::new_ext(markdown, options).peekable();
    let mut builder = Builder { depth: 0, links: 0 };
    let mut blocks = Vec::new();
    // A stray end event at the top level cannot come from the parser, but the loop must
    // make progress whatever it is handed.
    while events.peek().is_some() {
        blocks.extend(builder.blocks(&mut events));
        if let Some(Event::End(_)) = events.peek() {
            events.next();
        }
    }
    blocks
}

type Events<'a> = std::iter::Peekable<Parser<'a>>;

struct Builder {
    depth: usize,
    /// Links (and images) whose content is being read.
    links: usize,
}

impl Builder {
    /// Reads blocks until an end event (left unconsumed for the caller) or the end of input.
    fn blocks(&mut self, events: &mut Events) -> Vec<Block> {
        let mut blocks = Vec::new();
        // Containers opened past MAX_NESTING whose end events are still to come.
        let mut flattened = 0usize;
        while let Some(event) = events.peek() {
            match event {
                Event::End(_) if flattened > 0 => {
                    flattened -= 1;
                    events.next();
                }
                Event::End(_) => break,
                Event::Start(tag) if is_block_tag(tag) => {
                    let Some(Event::Start(tag)) = events.next() else {
                        unreachable!("peeked a start event")
                    };
                    if self.depth >= MAX_NESTING && is_container_tag(&tag) {
                        flattened += 1;
                        continue;
                    }
                    self.depth += 1;
                    blocks.extend(self.block(tag, events));
                    self.depth -= 1;
                }
                Event::Rule => {
                    events.next();
                    blocks.push(Block::Rule);
                }
                Event::DisplayMath(math) => {
                    let code = math.to_string();
                    events.next();
                    blocks.push(Block::Code {
                        language: None,
                        code,
                    });
                }
                // Inline content directly inside a container: a tight list item's text.
                _ => blocks.push(Block::Plain(self.inlines(events))),
            }
        }
        blocks
    }

    /// Reads the rest of a block whose start event was consumed, including its end event.
    fn block(&mut self, tag: Tag, events: &mut Events) -> Option<Block> {
        let block = match tag {
            Tag::Paragraph => Block::Paragraph(self.inlines(events)),
            Tag::Heading { level, .. } => Block::Heading {
                level: level as u8,
                content: self.inlines(events),
            },
            Tag::CodeBlock(kind) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => code_language(&info),
                    CodeBlockKind::Indented => None,
                };
                let mut code = String::new();
                while let Some(Event::Text(text)) = events.peek() {
                    code.push_str(text);
                    events.next();
                }
                let code = code.strip_suffix('\n').unwrap_or(&code).to_owned();
                Block::Code { language, code }
            }
            // The model's raw HTML is shown as the text it wrote, line by line.
            Tag::HtmlBlock => {
                let mut raw = String::new();
                while let Some(Event::Html(html) | Event::Text(html)) = events.peek() {
                    raw.push_str(html);
                    events.next();
                }
                let mut content = Vec::new();
                for (index, line) in raw.trim_end().lines().enumerate() {
                    if index > 0 {
                        content.push(Inline::LineBreak);
                    }
                    content.push(Inline::Text(line.to_owned()));
                }
                Block::Paragraph(content)
            }
            Tag::BlockQuote(_) => Block::Quote(self.blocks(events)),
            Tag::List(start) => {
                let mut items = Vec::new();
                while let Some(Event::Start(Tag::Item)) = events.peek() {
                    events.next();
                    items.push(self.blocks(events));
                    events.next(); // the item's end
                }
                Block::List { start, items }
            }
            Tag::Table(alignments) => self.table(alignments, events),
            // Footnotes, definition lists and metadata are not enabled; were they to appear,
            // their content is kept as a quote.
            _ => Block::Quote(self.blocks(events)),
        };
        events.next(); // the block's end
        match block {
            Block::Quote(content) if content.is_empty() => None,
            Block::Paragraph(content) if content.is_empty() => None,
            block => Some(block),
        }
    }

    /// Reads a table's head and rows, leaving the table's end event for the caller.
    fn table(&mut self, alignments: Vec<Alignment>, events: &mut Events) -> Block {
        let mut head = Vec::new();
        let mut rows = Vec::new();
        while let Some(Event::Start(_)) = events.peek() {
            // TableHead holds its cells directly; body rows are TableRow.
            let is_head = matches!(events.next(), Some(Event::Start(Tag::TableHead)));
            let mut cells = Vec::new();
            while let Some(Event::Start(Tag::TableCell)) = events.peek() {
                events.next();
                self.depth += 1;
                cells.push(self.inlines(events));
                self.depth -= 1;
                events.next(); // the cell's end
            }
            events.next(); // the row's end
            if is_head {
                head = cells;
            } else {
                rows.push(cells);
            }
        }
        Block::Table {
            alignments,
            head,
            rows,
        }
    }

    /// Reads inline content until an end event or a block start (both left unconsumed).
    fn inlines(&mut self, events: &mut Events) -> Vec<Inline> {
        let mut content = Vec::new();
        // Elements opened past MAX_NESTING whose end events are still to come.
        let mut flattened = 0usize;
        while let Some(event) = events.peek() {
            match event {
                Event::End(_) if flattened == 0 => break,
                Event::Start(tag) if is_block_tag(tag) => break,
                Event::Rule | Event::DisplayMath(_) => break,
                _ => {}
            }
            let Some(event) = events.next() else { break };
            match event {
                Event::End(_) => flattened -= 1,
                Event::Start(tag) if self.depth >= MAX_NESTING => {
                    // Too deep: keep the text, drop the styling.
                    flattened += 1;
                    if let Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } = tag {
                        content.push(Inline::Text(format!("({dest_url}) ")));
                    }
                }
                Event::Start(tag) => {
                    self.depth += 1;
                    self.inline(tag, events, &mut content);
                    self.depth -= 1;
                }
                Event::Text(text) | Event::InlineMath(text) => {
                    content.push(Inline::Text(text.to_string()));
                }
                Event::Code(code) => content.push(Inline::Code(code.to_string())),
                Event::Html(html) | Event::InlineHtml(html) => {
                    content.push(Inline::Text(html.to_string()));
                }
                Event::FootnoteReference(label) => {
                    content.push(Inline::Text(format!("[^{label}]")));
                }
                Event::SoftBreak | Event::HardBreak => content.push(Inline::LineBreak),
                Event::TaskListMarker(done) => content.push(Inline::TaskMarker { done }),
                Event::Rule | Event::DisplayMath(_) => {}
            }
        }
        with_spoilers(content)
    }

    /// Reads the rest of an inline element whose start event was consumed, with its end,
    /// and appends it to `content`.
    fn inline(&mut self, tag: Tag, events: &mut Events, content: &mut Vec<Inline>) {
        let is_link = matches!(tag, Tag::Link { .. } | Tag::Image { .. });
        self.links += usize::from(is_link);
        let inner = self.inlines(events);
        self.links -= usize::from(is_link);
        events.next(); // the element's end
        // A link within a link's text (an image as a link's text, an address written in
        // it) keeps only its text: no client opens a link inside a link, and Telegram
        // refuses the message.
        if is_link && self.links > 0 {
            content.extend(inner);
            return;
        }
        let element = match tag {
            Tag::Emphasis => Inline::Emphasis(inner),
            Tag::Strong => Inline::Strong(inner),
            Tag::Strikethrough => Inline::Strikethrough(inner),
            // An email autolink (`<mum@example.org>`) comes without its scheme.
            Tag::Link {
                link_type: LinkType::Email,
                dest_url,
                ..
            } => Inline::Link {
                url: format!("mailto:{dest_url}"),
                content: inner,
            },
            Tag::Link { dest_url, .. } => Inline::Link {
                url: dest_url.to_string(),
                content: inner,
            },
            Tag::Image { dest_url, .. } => Inline::Image {
                url: dest_url.to_string(),
                alt: inner,
            },
            // A single-tilde pair parses as subscript; give the tildes back (see `parse`).
            Tag::Subscript | Tag::Superscript => {
                let mark = if matches!(tag, Tag::Subscript) {
                    "~"
                } else {
                    "^"
                };
                content.push(Inline::Text(mark.to_owned()));
                content.extend(inner);
                content.push(Inline::Text(mark.to_owned()));
                return;
            }
            _ => {
                content.extend(inner);
                return;
            }
        };
        content.push(element);
    }
}

fn is_block_tag(tag: &Tag) -> bool {
    !matches!(
        tag,
        Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript
            | Tag::Link { .. }
            | Tag::Image { .. }
    )
}

/// Block tags whose content is more blocks, hence more depth.
fn is_container_tag(tag: &Tag) -> bool {
    matches!(
        tag,
        Tag::BlockQuote(_)
            | Tag::List(_)
            | Tag::Item
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
    )
}

/// The language of a fenced code block: the info string's first word, kept only when it
/// looks like a language name, since it ends up in a `class` attribute.
fn code_language(info: &str) -> Option<String> {
    let word = info.split_whitespace().next()?;
    let word = word.trim_start_matches('{').trim_start_matches('.');
    let word = word.trim_end_matches('}');
    let plausible = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '#' | '.'));
    (plausible && !word.is_empty()).then(|| word.to_owned())
}

/// One piece of inline content while `||spoiler||` markers are paired.
enum SpoilerPiece {
    Node(Inline),
    Marker { can_open: bool, can_close: bool },
}

/// Turns `||text||` into spoilers. Like emphasis, a marker opens only before a
/// non-space and closes only after one, so "a || b" stays as written; an unpaired marker
/// stays text. Pairs are found among siblings only, so spoilers never cross other markup.
fn with_spoilers(content: Vec<Inline>) -> Vec<Inline> {
    let content = merge_texts(content);
    if !content
        .iter()
        .any(|node| matches!(node, Inline::Text(text) if text.contains("||")))
    {
        return content;
    }
    let mut pieces = Vec::new();
    for (index, node) in content.iter().enumerate() {
        let Inline::Text(text) = node else {
            pieces.push(SpoilerPiece::Node(node.clone()));
            continue;
        };
        // Next to other markup counts as next to text; next to a line break, as a space.
        let text_around = |neighbour: Option<&Inline>| {
            neighbour.is_some_and(|node| !matches!(node, Inline::LineBreak))
        };
        let before_text = text_around(index.checked_sub(1).and_then(|i| content.get(i)));
        let after_text = text_around(content.get(index + 1));
        let parts: Vec<&str> = text.split("||").collect();
        for (part_index, part) in parts.iter().enumerate() {
            if part_index > 0 {
                let previous = parts[part_index - 1];
                let can_close = match previous.chars().next_back() {
                    Some(c) => !c.is_whitespace(),
                    None => part_index == 1 && before_text,
                };
                let can_open = match part.chars().next() {
                    Some(c) => !c.is_whitespace(),
                    None => part_index == parts.len() - 1 && after_text,
                };
                pieces.push(SpoilerPiece::Marker {
                    can_open,
                    can_close,
                });
            }
            if !part.is_empty() {
                pieces.push(SpoilerPiece::Node(Inline::Text((*part).to_owned())));
            }
        }
    }
    let mut result = Vec::new();
    let mut opened_at: Option<usize> = None;
    for piece in pieces {
        match piece {
            SpoilerPiece::Node(node) => result.push(node),
            SpoilerPiece::Marker { can_close, .. }
                if can_close && opened_at.is_some_and(|start| start < result.len()) =>
            {
                let start = opened_at.take().unwrap_or_default();
                let inner = result.split_off(start);
                result.push(Inline::Spoiler(merge_texts(inner)));
            }
            SpoilerPiece::Marker { can_open: true, .. } if opened_at.is_none() => {
                opened_at = Some(result.len());
            }
            SpoilerPiece::Marker { .. } => result.push(Inline::Text("||".to_owned())),
        }
    }
    if let Some(start) = opened_at {
        result.insert(start, Inline::Text("||".to_owned()));
    }
    merge_texts(result)
}

fn merge_texts(content: Vec<Inline>) -> Vec<Inline> {
    let mut merged: Vec<Inline> = Vec::with_capacity(content.len());
    for node in content {
        match (merged.last_mut(), node) {
            (Some(Inline::Text(previous)), Inline::Text(text)) => previous.push_str(&text),
            (_, node) => merged.push(node),
        }
    }
    merged
}

/// Whether a chat client may be given this URL as a link target.
pub(crate) fn link_is_allowed(url: &str) -> bool {
    let Some((scheme, _)) = url.split_once(':') else {
        return false;
    };
    // Control characters and spaces have no business in a link the model wrote; a client
    // might strip them and see a different scheme.
    !url.chars().any(|c| c.is_control() || c.is_whitespace())
        && ALLOWED_LINK_SCHEMES
            .iter()
            .any(|allowed| scheme.eq_ignore_ascii_case(allowed))
}

/// Escapes text for HTML content: `&`, `<`, `>`.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

/// Escapes text for a double-quoted HTML attribute: `&`, `<`, `>`, `"`.
pub(crate) fn push_escaped_attribute(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            c => push_escaped(out, c.encode_utf8(&mut [0; 4])),
        }
    }
}

/// The plain text of a link's content, to compare it with its URL.
pub(crate) fn inline_text(content: &[Inline]) -> String {
    let mut text = String::new();
    for node in content {
        match node {
            Inline::Text(part) | Inline::Code(part) => text.push_str(part),
            Inline::Emphasis(inner)
            | Inline::Strong(inner)
            | Inline::Strikethrough(inner)
            | Inline::Spoiler(inner)
            | Inline::Link { content: inner, .. }
            | Inline::Image { alt: inner, .. } => text.push_str(&inline_text(inner)),
            Inline::TaskMarker { .. } => {}
            Inline::LineBreak => text.push(' '),
        }
    }
    text
}

/// Whether showing the URL after the link text would only repeat it.
pub(crate) fn url_repeats_text(url: &str, text: &str) -> bool {
    let bare = url.strip_prefix("mailto:").unwrap_or(url);
    text == url || text == bare
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str) -> Inline {
        Inline::Text(value.to_owned())
    }

    #[test]
    fn spoiler_markers_pair_among_siblings() {
        let blocks = parse("a ||secret|| and ||**bold** one|| end");
        let expected = vec![Block::Paragraph(vec![
            text("a "),
            Inline::Spoiler(vec![text("secret")]),
            text(" and "),
            Inline::Spoiler(vec![Inline::Strong(vec![text("bold")]), text(" one")]),
            text(" end"),
        ])];
        assert_eq!(blocks, expected);
    }

    #[test]
    fn logical_or_and_unpaired_markers_stay_text() {
        assert_eq!(
            parse("a || b || c"),
            vec![Block::Paragraph(vec![text("a || b || c")])]
        );
        assert_eq!(
            parse("x ||open only"),
            vec![Block::Paragraph(vec![text("x ||open only")])]
        );
    }

    #[test]
    fn single_tildes_are_kept_literally() {
        assert_eq!(
            parse("about ~5km~ away"),
            vec![Block::Paragraph(vec![text("about ~5km~ away")])]
        );
    }

    #[test]
    fn deep_nesting_is_flattened() {
        let markdown = format!("{}deep", "> ".repeat(200));
        let blocks = parse(&markdown);
        let mut depth = 0;
        let mut current = &blocks;
        while let [Block::Quote(inner)] = current.as_slice() {
            depth += 1;
            current = inner;
        }
        assert!(depth <= MAX_NESTING, "depth {depth}");
        assert_eq!(current, &vec![Block::Paragraph(vec![text("deep")])]);
    }

    #[test]
    fn code_language_is_a_plain_word() {
        assert_eq!(code_language("rust ignore"), Some("rust".to_owned()));
        assert_eq!(code_language("{.python}"), Some("python".to_owned()));
        assert_eq!(code_language("x\"onload=\"y"), None);
        assert_eq!(code_language(""), None);
    }

    #[test]
    fn only_known_link_schemes_are_allowed() {
        assert!(link_is_allowed("https://example.org/a?b=c"));
        assert!(link_is_allowed("HTTP://example.org"));
        assert!(link_is_allowed("tg://user?id=1"));
        assert!(link_is_allowed("mailto:mum@example.org"));
        assert!(!link_is_allowed("javascript:alert(1)"));
        assert!(!link_is_allowed("data:text/html,hi"));
        assert!(!link_is_allowed("/relative/path"));
        assert!(!link_is_allowed("java\nscript:alert(1)"));
    }
}
