//! What hearth reads of one calendar object at most, checked by one linear pass over its
//! text before `icalendar`'s parser sees it: components nested at most
//! [`MAX_NESTING`] deep (the parser recurses once per level, and a few thousand levels
//! overflow a thread's stack and abort the process), at most [`MAX_COMPONENTS`]
//! components, and no line longer than [`MAX_LINE_BYTES`]. A calendar someone else writes
//! (a school's feed, what a CalDAV server returns) cannot end or stall hearth.
//!
//! The pass reads the text exactly as the parser will: carriage returns taken out, folded
//! lines unfolded with the parser's own `unfold`, lines split at `\n`; the parser is then
//! given those lines each ended by CRLF, as RFC 5545 writes them (the parser looks for the
//! end of each property's value as `\r\n` first: on a text without any, that search runs
//! to the end of the text for every property, and reading grows with the square of its
//! length). Its count of the depth is never below the parser's:
//! - every line starting with `BEGIN:` (any case, after any blanks) counts one level down;
//! - only a line that is `END:` and a name (any case) and nothing else counts one level
//!   up; an `END:` line with more on it (`END:AXBEGIN:B`) counts nothing, since the parser
//!   may close one component there and open another;
//! - the parser's quoted parameter values run across lines (`X;P="...` up to the next
//!   `"`), so a line whose last `"` opens such a value (it follows `=` or `,`) is refused:
//!   RFC 5545 allows no line break inside quotes, and the lines it would hide could be
//!   `END:` lines this pass counted;
//! - the parser's unquoted parameter values run up to the next `;` or `:`, across lines
//!   (`X;P=v` then `END:VEVENT` is one property to it), so a line whose parameters are not
//!   ended by a `:` on that line is refused: every content line has one.

/// The deepest nesting read: a normal object nests three deep (VCALENDAR > VEVENT >
/// VALARM, VCALENDAR > VTIMEZONE > STANDARD).
pub const MAX_NESTING: usize = 8;
/// The most components one object holds: a family's busiest subscribed calendar, with
/// an alarm on every event, is far below it.
pub const MAX_COMPONENTS: usize = 25_000;
/// The longest line, once unfolded (an inline attachment can be long; nothing else is).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Why a calendar object was not read, in words for the member and the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "its components are nested more than {MAX_NESTING} deep (line {line}); a calendar nests 3"
    )]
    TooDeep { line: usize },
    #[error("it holds more than {MAX_COMPONENTS} components")]
    TooManyComponents,
    #[error("line {line} is longer than {} KB", MAX_LINE_BYTES / 1024)]
    LineTooLong { line: usize },
    #[error("line {line} opens a quoted value it does not close")]
    OpenQuote { line: usize },
    #[error("line {line} has parameters without a `:` and a value after them")]
    UnendedParameters { line: usize },
}

/// The text the parser is given: `text` without carriage returns, unfolded, each line
/// ended by CRLF; or why it is refused.
pub fn checked_for_parsing(text: &str) -> Result<String, Refused> {
    let unfolded = icalendar::parser::unfold(&text.replace('\r', ""));
    let mut depth: usize = 0;
    let mut components: usize = 0;
    for (index, line) in unfolded.split('\n').enumerate() {
        let number = index + 1;
        if line.len() > MAX_LINE_BYTES {
            return Err(Refused::LineTooLong { line: number });
        }
        if opens_a_quote_at_its_end(line) {
            return Err(Refused::OpenQuote { line: number });
        }
        if parameters_run_past_the_line(line) {
            return Err(Refused::UnendedParameters { line: number });
        }
        if starts_with_ignoring_case(line.trim_start(), "BEGIN:") {
            depth += 1;
            components += 1;
            if depth > MAX_NESTING {
                return Err(Refused::TooDeep { line: number });
            }
            if components > MAX_COMPONENTS {
                return Err(Refused::TooManyComponents);
            }
        } else if is_plain_end(line) {
            depth = depth.saturating_sub(1);
        }
    }
    Ok(unfolded.replace('\n', "\r\n"))
}

/// Whether the line's name is followed by parameters (`;` before any `:`) that no `:`
/// outside quotes ends on this line: the parser would read on into the next lines.
fn parameters_run_past_the_line(line: &str) -> bool {
    let Some(start) = line.find([';', ':']) else {
        return false;
    };
    if line.as_bytes()[start] == b':' {
        return false;
    }
    let mut quoted = false;
    for byte in &line.as_bytes()[start..] {
        match byte {
            b'"' => quoted = !quoted,
            b':' if !quoted => return false,
            _ => {}
        }
    }
    true
}

fn starts_with_ignoring_case(line: &str, prefix: &str) -> bool {
    line.len() >= prefix.len()
        && line.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// `END:` and a component's name, nothing more (the name as the parser reads one).
fn is_plain_end(line: &str) -> bool {
    if !starts_with_ignoring_case(line, "END:") {
        return false;
    }
    let name = &line["END:".len()..];
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | ',' | '/' | '_' | '-'))
}

/// Whether the line's last `"` may open a quoted parameter value, which the parser would
/// read on across the line's end.
fn opens_a_quote_at_its_end(line: &str) -> bool {
    let Some(last) = line.rfind('"') else {
        return false;
    };
    matches!(line[..last].chars().next_back(), Some('=' | ','))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        let mut text = String::new();
        for _ in 0..levels {
            text.push_str("BEGIN:VEVENT\r\n");
        }
        for _ in 0..levels {
            text.push_str("END:VEVENT\r\n");
        }
        text
    }

    const ORDINARY: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\nBEGIN:STANDARD\r\nDTSTART:19701025T030000\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\nBEGIN:VEVENT\r\nUID:a\r\nATTENDEE;CN=\"Alice, Mum\";ROLE=CHAIR:mailto:a@example.org\r\nSUMMARY:Swim\r\n ming\r\nBEGIN:VALARM\r\nTRIGGER:-PT5M\r\nEND:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    #[test]
    fn an_ordinary_calendar_passes_unfolded_with_each_line_ended_by_crlf() {
        let text = checked_for_parsing(ORDINARY).unwrap();
        assert!(text.contains("\r\nSUMMARY:Swimming\r\n"), "{text}");
        assert_eq!(text.matches('\r').count(), text.matches('\n').count());
        // Lone carriage returns and bare line feeds become CRLF line ends alike.
        let mixed = checked_for_parsing("BEGIN:VCALENDAR\nX-A:a\rb\r\nEND:VCALENDAR").unwrap();
        assert_eq!(mixed, "BEGIN:VCALENDAR\r\nX-A:ab\r\nEND:VCALENDAR");
        assert!(checked_for_parsing(&nested(MAX_NESTING)).is_ok());
    }

    #[test]
    fn nesting_past_the_bound_is_refused_naming_the_line() {
        assert_eq!(
            checked_for_parsing(&nested(MAX_NESTING + 1)),
            Err(Refused::TooDeep {
                line: MAX_NESTING + 1
            })
        );
        // The attack as it arrives: twelve thousand levels, about 110 KB.
        assert!(matches!(
            checked_for_parsing(&nested(12_000)),
            Err(Refused::TooDeep { .. })
        ));
    }

    #[test]
    fn case_folding_folds_and_blank_lines_do_not_hide_a_level() {
        let mut text = String::new();
        for level in 0..=MAX_NESTING {
            text.push_str(match level % 4 {
                0 => "begin:vevent\n",
                1 => "BEG\r\n IN:VEVENT\r\n",
                2 => "\r\n\r\nBeGiN:X-THING\r\n",
                _ => "BEGIN:\r\n\tVALARM\n",
            });
        }
        assert!(matches!(
            checked_for_parsing(&text),
            Err(Refused::TooDeep { .. })
        ));
    }

    #[test]
    fn an_end_line_with_more_on_it_does_not_count_as_closing() {
        // The parser closes A at `END:A` and opens another A from the rest of the line.
        let mut text = "BEGIN:VCALENDAR\n".to_owned();
        for _ in 0..MAX_NESTING {
            text.push_str("BEGIN:A\nEND:ABEGIN:A\n");
        }
        assert!(matches!(
            checked_for_parsing(&text),
            Err(Refused::TooDeep { .. })
        ));
        // Nor does a quoted value that would hide the closing line from the parser.
        let hidden = "BEGIN:VCALENDAR\nBEGIN:A\nX;P=\"\nEND:A\n\":v\nEND:A\nEND:VCALENDAR\n";
        assert_eq!(
            checked_for_parsing(hidden),
            Err(Refused::OpenQuote { line: 3 })
        );
        let listed = "BEGIN:A\nX;P=\"a\",\"\nEND:A\n\":v\n";
        assert_eq!(
            checked_for_parsing(listed),
            Err(Refused::OpenQuote { line: 2 })
        );
    }

    #[test]
    fn parameters_not_ended_on_their_line_are_refused() {
        // The parser reads `X;P=v` and the next line as one property: each `END:VEVENT`
        // hidden so, twelve thousand components nest (and overflow a thread's stack).
        let hiding = format!(
            "BEGIN:VCALENDAR\r\n{}END:VCALENDAR\r\n",
            "BEGIN:VEVENT\r\nX;P=v\r\nEND:VEVENT\r\n".repeat(12_000)
        );
        assert_eq!(
            checked_for_parsing(&hiding),
            Err(Refused::UnendedParameters { line: 3 })
        );
        let after_a_quote = "BEGIN:VEVENT\nX;A=\"p:q\";B=v\nEND:VEVENT\n";
        assert_eq!(
            checked_for_parsing(after_a_quote),
            Err(Refused::UnendedParameters { line: 2 })
        );
        // Parameters ended by their `:`, and `;`, `:` and quotes in values, are fine.
        let fine = "BEGIN:VEVENT\nDESCRIPTION;LANGUAGE=en:say \"hi\"; then go\nX;A=\"p:q\";B=v:w\nSUMMARY:a;b\nX-EMPTY\nEND:VEVENT\n";
        assert!(checked_for_parsing(fine).is_ok());
        assert!(checked_for_parsing(ORDINARY).is_ok());
    }

    #[test]
    fn quotes_closed_on_their_line_and_quotes_in_values_are_fine() {
        let text = "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDESCRIPTION:say \"hi\" and a=\"\nX;A=\"b\":\"c\nEND:VEVENT\nEND:VCALENDAR\n";
        // The first value's last quote follows `=`: refused though RFC text would allow it;
        // only an odd value is lost.
        assert!(checked_for_parsing(text).is_err());
        let fine = "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDESCRIPTION:say \"hi\"\nX;A=\"b\":\"c\nEND:VEVENT\nEND:VCALENDAR\n";
        assert!(checked_for_parsing(fine).is_ok());
    }

    #[test]
    fn too_many_components_and_too_long_lines_are_refused() {
        let mut many = "BEGIN:VCALENDAR\n".to_owned();
        for _ in 0..MAX_COMPONENTS {
            many.push_str("BEGIN:VEVENT\nEND:VEVENT\n");
        }
        assert_eq!(checked_for_parsing(&many), Err(Refused::TooManyComponents));
        let long = format!(
            "BEGIN:VCALENDAR\nX-LONG:{}\nEND:VCALENDAR\n",
            "a".repeat(MAX_LINE_BYTES)
        );
        assert_eq!(
            checked_for_parsing(&long),
            Err(Refused::LineTooLong { line: 2 })
        );
    }
}
