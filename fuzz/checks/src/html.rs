//! Rendered HTML read strictly, the way a chat client reads what hearth sends: every `<` a
//! tag, every `&` one of the entities hearth writes. [`check_telegram`] and [`check_matrix`]
//! hold it to the tags and attributes each platform accepts (and to the link schemes
//! hearth allows); [`styled_text`] is the text a reader sees, each character with the tags
//! around it.

/// One piece of HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token<'a> {
    /// A character of text (an entity decoded).
    Char(char),
    Open {
        name: &'a str,
        /// The tag as written, attributes included: what reopens it.
        raw: &'a str,
        attributes: Vec<(&'a str, String)>,
    },
    Close {
        name: &'a str,
    },
}

/// The entities hearth's renderers write, and what they stand for.
const ENTITIES: [(&str, char); 4] = [
    ("&amp;", '&'),
    ("&lt;", '<'),
    ("&gt;", '>'),
    ("&quot;", '"'),
];

fn entity(rest: &str) -> Result<(char, usize), String> {
    ENTITIES
        .iter()
        .find(|(written, _)| rest.starts_with(written))
        .map(|(written, decoded)| (*decoded, written.len()))
        .ok_or_else(|| format!("a bare & in {:?}", head(rest)))
}

fn head(text: &str) -> &str {
    let end = text
        .char_indices()
        .nth(40)
        .map_or(text.len(), |(index, _)| index);
    &text[..end]
}

/// Reads `html` into tokens; an error says where it is not strict HTML.
pub fn tokens(html: &str) -> Result<Vec<Token<'_>>, String> {
    let mut tokens = Vec::new();
    let mut index = 0;
    while let Some(c) = html[index..].chars().next() {
        let rest = &html[index..];
        match c {
            '&' => {
                let (decoded, length) = entity(rest)?;
                tokens.push(Token::Char(decoded));
                index += length;
            }
            '>' => return Err(format!("a bare > in {:?}", head(rest))),
            '<' => {
                let (token, length) = tag(rest)?;
                tokens.push(token);
                index += length;
            }
            c => {
                tokens.push(Token::Char(c));
                index += c.len_utf8();
            }
        }
    }
    Ok(tokens)
}

/// The tag at the start of `rest`: `<name>`, `<name a="v" b>`, `</name>`.
fn tag(rest: &str) -> Result<(Token<'_>, usize), String> {
    let bad = |what: &str| format!("{what} in tag {:?}", head(rest));
    let after = &rest[1..];
    let (closing, body) = match after.strip_prefix('/') {
        Some(body) => (true, body),
        None => (false, after),
    };
    let name_length = body
        .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .unwrap_or(body.len());
    if name_length == 0 {
        return Err(bad("no name"));
    }
    let name = &body[..name_length];
    let mut position = name_length;
    let mut attributes = Vec::new();
    loop {
        let tail = &body[position..];
        if let Some(after_close) = tail.strip_prefix('>') {
            let consumed = rest.len() - after_close.len();
            let token = if closing {
                if !attributes.is_empty() {
                    return Err(bad("attributes on a closing tag"));
                }
                Token::Close { name }
            } else {
                Token::Open {
                    name,
                    raw: &rest[..consumed],
                    attributes,
                }
            };
            return Ok((token, consumed));
        }
        let Some(attribute) = tail.strip_prefix(' ') else {
            return Err(bad("no space before an attribute or no >"));
        };
        let key_length = attribute
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(attribute.len());
        if key_length == 0 {
            return Err(bad("an attribute without a name"));
        }
        let key = &attribute[..key_length];
        position += 1 + key_length;
        let Some(quoted) = body[position..].strip_prefix("=\"") else {
            attributes.push((key, String::new()));
            continue;
        };
        let end = quoted
            .find('"')
            .ok_or_else(|| bad("an unterminated value"))?;
        let written = &quoted[..end];
        if written.contains(['<', '>']) {
            return Err(bad("a bare < or > in a value"));
        }
        let mut value = String::new();
        let mut value_index = 0;
        while let Some(c) = written[value_index..].chars().next() {
            if c == '&' {
                let (decoded, length) = entity(&written[value_index..])?;
                value.push(decoded);
                value_index += length;
            } else {
                value.push(c);
                value_index += c.len_utf8();
            }
        }
        attributes.push((key, value));
        position += 2 + end + 1;
    }
}

/// What hearth allows as a link: http, https, tg and mailto, with no spaces or control
/// characters a client might strip to see another scheme.
pub fn link_allowed(url: &str) -> bool {
    let Some((scheme, _)) = url.split_once(':') else {
        return false;
    };
    !url.chars().any(|c| c.is_control() || c.is_whitespace())
        && ["http", "https", "tg", "mailto"]
            .iter()
            .any(|allowed| scheme.eq_ignore_ascii_case(allowed))
}

/// What a platform renders: its tags, those that stand alone (no closing tag), and the
/// check of one opening tag (its attributes) against the tags open around it.
struct Platform {
    name: &'static str,
    tags: &'static [&'static str],
    void: &'static [&'static str],
    check_open: fn(&str, &[&str], &[(&str, String)]) -> Result<(), String>,
}

/// Walks `html` holding it to `platform`: known tags only, each opening tag checked, each
/// closing tag closing the innermost open one, nothing left open.
fn check_tags(html: &str, platform: &Platform) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    for token in tokens(html)? {
        match token {
            Token::Char(_) => {}
            Token::Open {
                name, attributes, ..
            } => {
                if !platform.tags.contains(&name) {
                    return Err(format!("{} renders no tag <{name}>", platform.name));
                }
                (platform.check_open)(name, &open, &attributes)?;
                if !platform.void.contains(&name) {
                    open.push(name);
                }
            }
            Token::Close { name } => match open.pop() {
                Some(top) if top == name => {}
                top => return Err(format!("</{name}> closes {top:?}")),
            },
        }
    }
    match open.is_empty() {
        true => Ok(()),
        false => Err(format!("unclosed {open:?}")),
    }
}

/// A link's one attribute, `href`, to a scheme hearth allows.
fn check_link(href: &str) -> Result<(), String> {
    match link_allowed(href) {
        true => Ok(()),
        false => Err(format!("a link to {href:?}")),
    }
}

fn attribute_keys<'a>(attributes: &[(&'a str, String)]) -> Vec<&'a str> {
    attributes.iter().map(|(key, _)| *key).collect()
}

const TELEGRAM: Platform = Platform {
    name: "telegram",
    tags: &[
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "a",
        "tg-emoji",
        "code",
        "pre",
        "blockquote",
    ],
    void: &[],
    check_open: telegram_open,
};

fn telegram_open(name: &str, open: &[&str], attributes: &[(&str, String)]) -> Result<(), String> {
    let parent = open.last().copied();
    if parent == Some("code") || (parent == Some("pre") && name != "code") {
        return Err(format!("<{name}> inside <{}>", parent.unwrap_or_default()));
    }
    if open.contains(&name) {
        return Err(format!("<{name}> inside another <{name}>"));
    }
    let keys = attribute_keys(attributes);
    match (name, keys.as_slice()) {
        ("a", ["href"]) => check_link(&attributes[0].1),
        ("code", ["class"]) => {
            match parent == Some("pre") && attributes[0].1.starts_with("language-") {
                true => Ok(()),
                false => Err(format!("<code class={:?}> outside <pre>", attributes[0].1)),
            }
        }
        ("span", ["class"]) if attributes[0].1 == "tg-spoiler" => Ok(()),
        ("blockquote", [] | ["expandable"]) | ("tg-emoji", ["emoji-id"]) => Ok(()),
        ("a" | "span" | "tg-emoji", _) => Err(format!("<{name}> with attributes {keys:?}")),
        (_, []) => Ok(()),
        (_, _) => Err(format!("<{name}> with attributes {keys:?}")),
    }
}

/// Checks `html` against Telegram's `parse_mode: HTML`: only the tags it accepts, with
/// only their attributes, properly nested; nothing inside `pre` but its `code`, nothing
/// inside `code`, no link in a link, no blockquote in a blockquote, no style inside the
/// same style (Telegram refuses those); links only to the schemes hearth allows.
pub fn check_telegram(html: &str) -> Result<(), String> {
    check_tags(html, &TELEGRAM)
}

const MATRIX: Platform = Platform {
    name: "matrix",
    tags: &[
        "font",
        "del",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "p",
        "a",
        "ul",
        "ol",
        "sup",
        "sub",
        "li",
        "b",
        "i",
        "u",
        "strong",
        "em",
        "s",
        "code",
        "hr",
        "br",
        "div",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "pre",
        "span",
    ],
    void: &["br", "hr"],
    check_open: matrix_open,
};

fn matrix_open(name: &str, open: &[&str], attributes: &[(&str, String)]) -> Result<(), String> {
    if open.last() == Some(&"code") {
        return Err(format!("<{name}> inside <code>"));
    }
    if name == "a" && open.contains(&"a") {
        return Err("a link inside a link".to_string());
    }
    let keys = attribute_keys(attributes);
    match (name, keys.as_slice()) {
        ("a", ["href"]) => check_link(&attributes[0].1),
        ("ol", ["start"]) => match attributes[0].1.parse::<u64>() {
            Ok(_) => Ok(()),
            Err(_) => Err(format!("<ol start={:?}>", attributes[0].1)),
        },
        ("code", ["class"]) => match attributes[0].1.starts_with("language-") {
            true => Ok(()),
            false => Err(format!("<code class={:?}>", attributes[0].1)),
        },
        ("span", ["data-mx-spoiler"]) | (_, []) => Ok(()),
        (_, _) => Err(format!("<{name}> with attributes {keys:?}")),
    }
}

/// Checks `html` against the HTML the Matrix spec lets clients render: its tags, with the
/// attributes hearth writes (`a href`, `ol start`, `code class="language-…"`,
/// `span data-mx-spoiler`), properly nested (`br` and `hr` are void); links only to the
/// schemes hearth allows.
pub fn check_matrix(html: &str) -> Result<(), String> {
    check_tags(html, &MATRIX)
}

/// The text a reader sees in `html`, each character with the tags open around it, as
/// written (attributes included), outermost first.
pub fn styled_text(html: &str) -> Result<Vec<(char, Vec<String>)>, String> {
    let mut open: Vec<(&str, &str)> = Vec::new();
    let mut text = Vec::new();
    for token in tokens(html)? {
        match token {
            Token::Char(c) => text.push((c, open.iter().map(|(_, raw)| raw.to_string()).collect())),
            Token::Open { name, raw, .. } => open.push((name, raw)),
            Token::Close { name } => match open.pop() {
                Some((top, _)) if top == name => {}
                top => return Err(format!("</{name}> closes {top:?}")),
            },
        }
    }
    Ok(text)
}

/// Whether `joined` is `original` with some whitespace left out (the chunks of nothing but
/// whitespace that splitting drops) and nothing else changed; on a difference, where.
pub fn same_but_dropped_whitespace<T: PartialEq + std::fmt::Debug>(
    original: &[T],
    joined: &[T],
    is_whitespace: impl Fn(&T) -> bool,
) -> Result<(), String> {
    let mut kept = joined.iter().peekable();
    for (index, item) in original.iter().enumerate() {
        match kept.peek() {
            Some(next) if *next == item => {
                kept.next();
            }
            _ if is_whitespace(item) => {}
            next => {
                return Err(format!(
                    "at {index} the original has {item:?}, the chunks {next:?}"
                ));
            }
        }
    }
    match kept.next() {
        None => Ok(()),
        Some(extra) => Err(format!("the chunks have {extra:?} past the original's end")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telegram_html_is_held_to_telegram_s_tags() {
        assert_eq!(
            check_telegram("<b>a</b> &amp; <a href=\"https://x.org/?a=1&amp;b\">x</a>"),
            Ok(())
        );
        assert_eq!(
            check_telegram("<pre><code class=\"language-rust\">a &lt; b</code></pre>"),
            Ok(())
        );
        assert!(check_telegram("<b><b>a</b></b>").is_err());
        assert!(check_telegram("<p>a</p>").is_err());
        assert!(check_telegram("<b>a</i>").is_err());
        assert!(check_telegram("<b>a").is_err());
        assert!(check_telegram("a > b").is_err());
        assert!(check_telegram("a & b").is_err());
        assert!(check_telegram("<a href=\"javascript:x\">a</a>").is_err());
        assert!(check_telegram("<pre><b>a</b></pre>").is_err());
        assert!(check_telegram("<code class=\"language-x\">a</code>").is_err());
    }

    #[test]
    fn matrix_html_is_held_to_the_spec_s_tags() {
        assert_eq!(
            check_matrix("<p>a<br>b</p>\n<hr>\n<ol start=\"3\">\n<li>x</li>\n</ol>"),
            Ok(())
        );
        assert!(check_matrix("<script>x</script>").is_err());
        assert!(check_matrix("<p onclick=\"x\">a</p>").is_err());
    }

    #[test]
    fn styled_text_keeps_each_character_s_tags() {
        let text = styled_text("a<b>b&lt;</b>").unwrap();
        assert_eq!(
            text,
            vec![
                ('a', vec![]),
                ('b', vec!["<b>".into()]),
                ('<', vec!["<b>".into()])
            ]
        );
    }

    #[test]
    fn only_whitespace_may_be_dropped() {
        let space = |c: &char| c.is_whitespace();
        let chars = |text: &str| text.chars().collect::<Vec<_>>();
        assert_eq!(
            same_but_dropped_whitespace(&chars("a \n b"), &chars("a b"), space),
            Ok(())
        );
        assert!(same_but_dropped_whitespace(&chars("ab"), &chars("a"), space).is_err());
        assert!(same_but_dropped_whitespace(&chars("a"), &chars("ab"), space).is_err());
    }
}
