//! What the note tools accept and say: the bounds of a title, a content and a search, and
//! every text the model reads (a saved note, a note read in full, search hits with a short
//! snippet, a list, the titles given each turn), each bounded.

use crate::family::Family;
use crate::format::snippet::{first_word_at, window_line};
use crate::ports::{Note, NoteList, NoteVisibility};

/// A title longer than this is refused.
pub const MAX_TITLE_CHARS: usize = 200;
/// A content longer than this is refused.
pub const MAX_CONTENT_CHARS: usize = 20_000;
/// A search longer than this is refused.
pub const MAX_QUERY_CHARS: usize = 200;
/// Most titles a list shows; it says how many more there are.
pub const LIST_LIMIT: usize = 50;
/// Most hits a search shows.
pub const SEARCH_LIMIT: usize = 10;
/// Most titles given to the model each turn, and the most characters they take.
pub const PROMPT_TITLES: usize = 50;
pub const PROMPT_CHARS: usize = 2_000;
/// A search hit's snippet: this many characters, starting this many before the first hit.
const SNIPPET_CHARS: usize = 120;
const SNIPPET_BEFORE: usize = 30;

/// Why a title, content or search was refused; each names the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundsError {
    #[error("the title is empty; give the note a short title")]
    EmptyTitle,
    #[error(
        "the title {title:?} is {chars} characters long, more than {MAX_TITLE_CHARS}; \
         give a shorter one"
    )]
    LongTitle { title: String, chars: usize },
    #[error("the content of {title:?} is empty; say what the note holds")]
    EmptyContent { title: String },
    #[error(
        "the content of {title:?} is {chars} characters long, more than {MAX_CONTENT_CHARS}; \
         keep it shorter or split it into several notes"
    )]
    LongContent { title: String, chars: usize },
    #[error("the search {query:?} is longer than {MAX_QUERY_CHARS} characters; use a few words")]
    LongQuery { query: String },
    #[error("visibility {0:?} is neither family nor private")]
    Visibility(String),
}

/// A title as stored: every run of spaces and line breaks made one space, trimmed, so a
/// title is always one line (it is shown in lists and in the prompt).
pub fn checked_title(title: &str) -> Result<String, BoundsError> {
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = title.chars().count();
    if chars == 0 {
        return Err(BoundsError::EmptyTitle);
    }
    if chars > MAX_TITLE_CHARS {
        let start: String = title.chars().take(40).collect();
        return Err(BoundsError::LongTitle {
            title: format!("{start}…"),
            chars,
        });
    }
    Ok(title)
}

pub fn checked_content(title: &str, content: &str) -> Result<(), BoundsError> {
    if content.trim().is_empty() {
        return Err(BoundsError::EmptyContent {
            title: title.to_string(),
        });
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return Err(BoundsError::LongContent {
            title: title.to_string(),
            chars,
        });
    }
    Ok(())
}

pub fn checked_query(query: &str) -> Result<(), BoundsError> {
    if query.chars().count() > MAX_QUERY_CHARS {
        let start: String = query.chars().take(40).collect();
        return Err(BoundsError::LongQuery {
            query: format!("{start}…"),
        });
    }
    Ok(())
}

/// `family` or `private`, in any case.
pub fn visibility(text: &str) -> Result<NoteVisibility, BoundsError> {
    match text.trim().to_lowercase().as_str() {
        "family" => Ok(NoteVisibility::Family),
        "private" => Ok(NoteVisibility::Private),
        _ => Err(BoundsError::Visibility(text.to_string())),
    }
}

/// `"Wifi" (#3, family)`: how a note is named in every answer.
fn named(note: &Note) -> String {
    format!(
        "#{} \"{}\" ({})",
        note.id,
        note.title,
        note.visibility.as_str()
    )
}

/// What a save says: `Saved the family note "Wifi" (updated). It is note #3.`
pub fn saved_text(note: &Note, updated: bool) -> String {
    format!(
        "Saved the {} note \"{}\" ({}). It is note #{}.",
        note.visibility.as_str(),
        note.title,
        if updated { "updated" } else { "added" },
        note.id
    )
}

/// A note read in full, with who wrote it.
pub fn note_text(note: &Note, family: &Family) -> String {
    let author = family.display_name(&note.author);
    let by = if note.updated_by == note.author {
        format!("written by {author}")
    } else {
        format!(
            "written by {author}, last changed by {}",
            family.display_name(&note.updated_by)
        )
    };
    format!("Note {}, {by}:\n{}", named(note), note.content)
}

pub fn deleted_text(note: &Note) -> String {
    format!(
        "Deleted the {} note \"{}\" (#{}).",
        note.visibility.as_str(),
        note.title,
        note.id
    )
}

/// Search hits, best first, each with a snippet of its content around the first word found.
pub fn hits_text(query: &str, hits: &[Note], words: &[String]) -> String {
    if hits.is_empty() {
        return format!("No note you can read matches {query:?}.");
    }
    let mut text = if hits.len() == 1 {
        format!("1 note matches {query:?} (get_note reads it in full):")
    } else {
        format!(
            "{} notes match {query:?}, best first (get_note reads one in full):",
            hits.len()
        )
    };
    for note in hits {
        text.push_str(&format!(
            "\n{}: {}",
            named(note),
            snippet(&note.content, words)
        ));
    }
    text
}

/// The list the member may read, at most `LIST_LIMIT` titles, newest first.
pub fn list_text(list: &NoteList, family: &Family) -> String {
    if list.notes.is_empty() {
        return "There are no notes you can read yet.".to_string();
    }
    let mut text = format!(
        "You can read {} note{}, last written first:",
        list.total,
        if list.total == 1 { "" } else { "s" }
    );
    for note in &list.notes {
        text.push_str(&format!(
            "\n{} by {}",
            named(note),
            family.display_name(&note.author)
        ));
    }
    let more = list.total.saturating_sub(list.notes.len() as u64);
    if more > 0 {
        text.push_str(&format!(
            "\n…and {more} more; search_notes finds them by their words."
        ));
    }
    text
}

/// The titles given to the model each turn: at most `PROMPT_TITLES` and `PROMPT_CHARS`,
/// saying how many more there are; `None` when the member may read no note.
pub fn prompt_titles(list: &NoteList) -> Option<String> {
    if list.notes.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Notes this member can read (titles only; get_note reads one, search_notes finds by words):",
    );
    let mut shown = 0u64;
    for note in list.notes.iter().take(PROMPT_TITLES) {
        let line = format!(" \"{}\";", note.title);
        if text.chars().count() + line.chars().count() > PROMPT_CHARS {
            break;
        }
        text.push_str(&line);
        shown += 1;
    }
    if text.ends_with(';') {
        text.pop();
    }
    let more = list.total.saturating_sub(shown);
    if more > 0 {
        text.push_str(&format!(" and {more} more."));
    } else {
        text.push('.');
    }
    Some(text)
}

/// About `SNIPPET_CHARS` of `content` on one line, from a little before its first word
/// among `words` (the last also as the start of a word), or from its start.
pub fn snippet(content: &str, words: &[String]) -> String {
    let chars: Vec<char> = content.chars().collect();
    let last = words.len().saturating_sub(1);
    let first_hit = first_word_at(&chars, |word| {
        let word = word.iter().collect::<String>().to_lowercase();
        words
            .iter()
            .enumerate()
            .any(|(index, wanted)| word == *wanted || (index == last && word.starts_with(wanted)))
    });
    let from = first_hit.map_or(0, |start| start.saturating_sub(SNIPPET_BEFORE));
    window_line(&chars, from, SNIPPET_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::NoteVisibility;

    fn note(id: i64, title: &str) -> Note {
        Note {
            id,
            title: title.to_string(),
            content: "c".to_string(),
            visibility: NoteVisibility::Family,
            author: "alice".parse().unwrap(),
            updated_by: "alice".parse().unwrap(),
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    #[test]
    fn titles_are_one_line_and_bounded() {
        assert_eq!(checked_title("  Wifi \n at home ").unwrap(), "Wifi at home");
        assert_eq!(checked_title(" \n "), Err(BoundsError::EmptyTitle));
        assert_eq!(
            checked_title(&"x".repeat(MAX_TITLE_CHARS)).unwrap().len(),
            200
        );
        let long = checked_title(&"é".repeat(MAX_TITLE_CHARS + 1)).unwrap_err();
        assert!(long.to_string().contains("201 characters"), "{long}");
        let content = checked_content("Wifi", &"a".repeat(MAX_CONTENT_CHARS + 1)).unwrap_err();
        assert!(content.to_string().contains("20001"), "{content}");
        assert!(checked_content("Wifi", " \n").is_err());
        assert!(checked_query(&"w ".repeat(101)).is_err());
        assert_eq!(visibility(" Private "), Ok(NoteVisibility::Private));
        assert_eq!(
            visibility("secret").unwrap_err().to_string(),
            "visibility \"secret\" is neither family nor private"
        );
    }

    #[test]
    fn a_snippet_starts_near_the_first_word_found() {
        let content = format!(
            "{} the wifi password is hearth {}",
            "x ".repeat(100),
            "y ".repeat(100)
        );
        let words = vec!["password".to_string()];
        let cut = snippet(&content, &words);
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.contains("wifi password is hearth"), "{cut}");
        assert!(cut.chars().count() <= SNIPPET_CHARS + 2, "{cut}");
        // The last word is also the start of a word.
        assert!(snippet(&content, &["hear".to_string()]).contains("hearth"));
        assert_eq!(snippet("short\nnote", &words), "short note");
    }

    #[test]
    fn the_prompt_titles_are_bounded_and_say_how_many_more() {
        let notes: Vec<Note> = (0..60).map(|n| note(n, &format!("Note {n}"))).collect();
        let list = NoteList {
            notes: notes[..PROMPT_TITLES].to_vec(),
            total: 60,
        };
        let text = prompt_titles(&list).unwrap();
        assert!(
            text.contains("\"Note 49\"") && text.ends_with(" and 10 more."),
            "{text}"
        );
        let long: Vec<Note> = (0..50).map(|n| note(n, &"t".repeat(199))).collect();
        let text = prompt_titles(&NoteList {
            notes: long,
            total: 50,
        })
        .unwrap();
        assert!(text.chars().count() <= PROMPT_CHARS + 20, "{}", text.len());
        assert!(text.ends_with(" and 41 more."), "{text}");
        assert_eq!(prompt_titles(&NoteList::default()), None);
    }
}
