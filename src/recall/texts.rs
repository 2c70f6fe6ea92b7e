//! What the model reads of family memory: each hit as one short snippet saying where it
//! comes from (a chat, a note's title, a document's name), who said or wrote it ("you", a
//! member's name, "hearth") and on which day in the reader's zone, so the model can say
//! where an answer comes from. Every text is bounded: a snippet's characters, a list's hits
//! and characters (`search_memory`'s larger, `recall: auto`'s smaller).

use chrono::{DateTime, Utc};

use crate::family::Family;
use crate::format::snippet::{first_word_at, window_line};
use crate::ids::{ConversationKey, MemberId};
use crate::local_time::ZoneName;
use crate::local_time::phrasing::{say_day, today_in};
use crate::ports::{MemoryHit, MemoryKind, fold_for_search};

/// Most hits `search_memory` shows, and the most characters its lines take.
pub const TOOL_HITS: usize = 6;
pub const TOOL_CHARS: usize = 2_000;
/// Most hits `recall: auto` gives with a message, and the most characters they take.
pub const AUTO_HITS: usize = 3;
pub const AUTO_CHARS: usize = 1_200;
/// A snippet: this many characters of a chunk, starting this many before its first word
/// among the query's.
pub const SNIPPET_CHARS: usize = 240;
const SNIPPET_BEFORE: usize = 60;
/// A title (a note's, a document's name) is cut after this many characters.
const TITLE_CHARS: usize = 80;

/// Who reads and where: "you" is `reader`, days are said in `zone` as of `now`, and a chat
/// of `here` is "this conversation".
pub struct Reading<'a> {
    pub reader: &'a MemberId,
    pub family: &'a Family,
    pub zone: ZoneName,
    pub now: DateTime<Utc>,
    pub here: &'a ConversationKey,
}

impl Reading<'_> {
    /// Who said or wrote `hit`: "you", a member's name, "hearth" (the assistant's chat
    /// entries); `None` for a note or document that names nobody.
    fn who(&self, hit: &MemoryHit) -> Option<String> {
        match &hit.member {
            Some(member) if member == self.reader => Some("you".into()),
            Some(member) => Some(self.family.display_name(member)),
            None if hit.kind == MemoryKind::Chat => Some("hearth".into()),
            None => None,
        }
    }

    /// The day of `hit` in the reader's words: "Today", "Yesterday, Wed 25 Nov",
    /// "Mon 30 Nov 2025".
    fn day(&self, hit: &MemoryHit) -> String {
        let instant = DateTime::<Utc>::from_timestamp_millis(hit.created_at_ms).unwrap_or(self.now);
        let date = instant.with_timezone(&self.zone.tz()).date_naive();
        say_day(date, today_in(self.zone, self.now))
    }

    /// Where `hit` comes from: `chat in this conversation`, `chat on telegram` (`on the
    /// web` for HTTP's),
    /// `note "Wifi"`, `document "trip.pdf"`.
    fn source(&self, hit: &MemoryHit) -> String {
        match hit.kind {
            MemoryKind::Chat => match &hit.conversation {
                Some(conversation) if conversation == self.here.root() => {
                    "chat in this conversation".into()
                }
                Some(conversation) => match conversation.channel() {
                    "http" => "chat on the web".into(),
                    channel => format!("chat on {channel}"),
                },
                None => "chat".into(),
            },
            MemoryKind::Note => format!("note \"{}\"", bounded_title(&hit.title)),
            MemoryKind::Document => format!("document \"{}\"", bounded_title(&hit.title)),
        }
    }

    /// One hit as a line: `note "Wifi", Alice, Mon 2 Mar: “the password is …”`.
    pub fn line(&self, hit: &MemoryHit, words: &[String]) -> String {
        let mut line = self.source(hit);
        if let Some(who) = self.who(hit) {
            line.push_str(", ");
            line.push_str(&who);
        }
        format!("{line}, {}: “{}”", self.day(hit), snippet(said(hit), words))
    }

    /// At most `most` hits as numbered lines, within `chars` characters (the first always).
    fn lines(
        &self,
        hits: &[MemoryHit],
        words: &[String],
        most: usize,
        chars: usize,
    ) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        let mut used = 0;
        for hit in hits.iter().take(most) {
            let line = format!("{}. {}", lines.len() + 1, self.line(hit, words));
            let length = line.chars().count() + 1;
            if !lines.is_empty() && used + length > chars {
                break;
            }
            used += length;
            lines.push(line);
        }
        lines
    }

    /// `search_memory`'s answer: the hits best first, or a sentence saying nothing was
    /// found for `query` (`scope` says the filters: " among notes from 2026-03-01").
    pub fn tool_text(
        &self,
        query: &str,
        scope: &str,
        hits: &[MemoryHit],
        words: &[String],
    ) -> String {
        if hits.is_empty() {
            return format!("Nothing you can read in memory matches \"{query}\"{scope}.");
        }
        let lines = self.lines(hits, words, TOOL_HITS, TOOL_CHARS);
        format!(
            "From memory for \"{query}\"{scope}, best first (say where it comes from):\n{}",
            lines.join("\n")
        )
    }

    /// What `recall: auto` gives with a message; `None` when nothing was found.
    pub fn auto_text(&self, hits: &[MemoryHit], words: &[String]) -> Option<String> {
        if hits.is_empty() {
            return None;
        }
        let lines = self.lines(hits, words, AUTO_HITS, AUTO_CHARS);
        Some(format!(
            "(From hearth's memory, found for this message; use it only if it bears on it, \
             and say where it comes from:\n{})",
            lines.join("\n")
        ))
    }
}

/// What a hit says beyond its title: a note's first chunk starts with its title (it is
/// indexed so its title's words find it), which the line shows already.
fn said(hit: &MemoryHit) -> &str {
    if hit.title.is_empty() {
        return &hit.text;
    }
    match hit.text.strip_prefix(hit.title.as_str()) {
        Some(rest) if rest.starts_with(char::is_whitespace) && !rest.trim().is_empty() => {
            rest.trim_start()
        }
        _ => &hit.text,
    }
}

fn bounded_title(title: &str) -> String {
    let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= TITLE_CHARS {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(TITLE_CHARS).collect();
    cut.push('…');
    cut
}

/// About `SNIPPET_CHARS` of `text` on one line, from a little before its first word that
/// folds to one of `words` (accents and case aside), or from its start.
pub fn snippet(text: &str, words: &[String]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let first_hit = if words.is_empty() {
        None
    } else {
        first_word_at(&chars, |word| {
            words.contains(&fold_for_search(&word.iter().collect::<String>()))
        })
    };
    // Start early enough that the window is full when the word is near the end.
    let latest_start = chars.len().saturating_sub(SNIPPET_CHARS);
    let from = first_hit.map_or(0, |start| {
        start.saturating_sub(SNIPPET_BEFORE).min(latest_start)
    });
    window_line(&chars, from, SNIPPET_CHARS)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::config::{FamilyMember, FamilyRole};

    fn member(id: &str, name: Option<&str>) -> FamilyMember {
        FamilyMember {
            id: id.parse().unwrap(),
            name: name.map(str::to_owned),
            telegram_user_id: None,
            matrix_user_id: None,
            role: FamilyRole::Parent,
            timezone: None,
        }
    }

    fn hit(
        kind: MemoryKind,
        title: &str,
        text: &str,
        member: Option<&str>,
        at: DateTime<Utc>,
    ) -> MemoryHit {
        MemoryHit {
            chunk_id: 1,
            kind,
            reference: "1".into(),
            title: title.into(),
            text: text.into(),
            member: member.map(|id| id.parse().unwrap()),
            conversation: (kind == MemoryKind::Chat).then(|| "telegram:42".parse().unwrap()),
            created_at_ms: at.timestamp_millis(),
            score: 1.0,
        }
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn a_snippet_starts_a_little_before_the_first_word_accents_aside() {
        let text = format!(
            "{} Müller said the school trip is on Friday.",
            "word ".repeat(80)
        );
        let cut = snippet(&text, &words(&["muller"]));
        assert!(cut.starts_with('…'), "{cut}");
        assert!(
            cut.contains("Müller said the school trip is on Friday."),
            "{cut}"
        );
        assert!(cut.chars().count() <= SNIPPET_CHARS + 2, "{cut}");
        // No word found (a vector's hit): the start, on one line.
        let short = snippet("Dr Okafor,\n\nLinden Street", &words(&["dentist"]));
        assert_eq!(short, "Dr Okafor, Linden Street");
        let long = snippet(&"é".repeat(1_000), &[]);
        assert_eq!(long.chars().count(), SNIPPET_CHARS + 1);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn each_line_says_where_who_and_when_in_the_reader_s_zone() {
        let family = Family::new(&[member("alice", Some("Alice")), member("bob", None)]);
        let reader: MemberId = "bob".parse().unwrap();
        let here: ConversationKey = "http:bob".parse().unwrap();
        // 23:30 UTC on 1 March is already 2 March in Berlin.
        let now = Utc.with_ymd_and_hms(2026, 3, 3, 9, 0, 0).unwrap();
        let late = Utc.with_ymd_and_hms(2026, 3, 1, 23, 30, 0).unwrap();
        let reading = Reading {
            reader: &reader,
            family: &family,
            zone: ZoneName::parse("Europe/Berlin").unwrap(),
            now,
            here: &here,
        };
        let found = [
            hit(
                MemoryKind::Chat,
                "",
                "I moved the dentist to Friday",
                Some("bob"),
                late,
            ),
            hit(
                MemoryKind::Note,
                "Wifi",
                "the password is hearth-rocks",
                Some("alice"),
                late,
            ),
            hit(
                MemoryKind::Chat,
                "",
                "Noted: dentist on Friday at 10",
                None,
                now,
            ),
            hit(
                MemoryKind::Document,
                "trip.pdf",
                "Bring 12 euros",
                None,
                Utc.with_ymd_and_hms(2025, 1, 5, 12, 0, 0).unwrap(),
            ),
        ];
        let text = reading.tool_text("dentist", "", &found, &words(&["dentist"]));
        assert_eq!(
            text,
            "From memory for \"dentist\", best first (say where it comes from):\n\
             1. chat on telegram, you, Yesterday, Mon 2 Mar: “I moved the dentist to Friday”\n\
             2. note \"Wifi\", Alice, Yesterday, Mon 2 Mar: “the password is hearth-rocks”\n\
             3. chat on telegram, hearth, Today: “Noted: dentist on Friday at 10”\n\
             4. document \"trip.pdf\", Sun 5 Jan 2025: “Bring 12 euros”"
        );
        // A note's chunk holding its title says the rest; a title alone stays.
        let mut titled = found[1].clone();
        titled.text = "Wifi\n\nthe password is hearth-rocks".into();
        assert!(
            reading
                .line(&titled, &[])
                .ends_with(": “the password is hearth-rocks”")
        );
        titled.text = "Wifi".into();
        assert!(reading.line(&titled, &[]).ends_with(": “Wifi”"));
        titled.text = "Wifi-free weekend".into();
        assert!(
            reading
                .line(&titled, &[])
                .ends_with(": “Wifi-free weekend”")
        );
        let mut here_hit = found[0].clone();
        here_hit.conversation = Some(here.clone());
        assert!(
            reading
                .line(&here_hit, &[])
                .starts_with("chat in this conversation, you,")
        );
        assert_eq!(
            reading.tool_text("dentist", " among notes", &[], &[]),
            "Nothing you can read in memory matches \"dentist\" among notes."
        );
        let auto = reading.auto_text(&found, &[]).unwrap();
        assert!(auto.starts_with("(From hearth's memory"), "{auto}");
        assert_eq!(auto.lines().count(), 1 + AUTO_HITS, "{auto}");
        assert!(auto.ends_with("Friday at 10”)"), "{auto}");
        assert_eq!(reading.auto_text(&[], &[]), None);
    }

    #[test]
    fn lists_are_bounded_in_hits_and_characters() {
        let family = Family::new(&[member("alice", Some("Alice"))]);
        let reader: MemberId = "alice".parse().unwrap();
        let here: ConversationKey = "http:alice".parse().unwrap();
        let now = Utc.with_ymd_and_hms(2026, 3, 3, 9, 0, 0).unwrap();
        let reading = Reading {
            reader: &reader,
            family: &family,
            zone: ZoneName::parse("UTC").unwrap(),
            now,
            here: &here,
        };
        let long = "garden ".repeat(200);
        let many: Vec<MemoryHit> = (0..10)
            .map(|_| hit(MemoryKind::Note, &"t".repeat(300), &long, None, now))
            .collect();
        let text = reading.tool_text("garden", "", &many, &words(&["garden"]));
        let lines = text.lines().count() - 1;
        assert!((1..=TOOL_HITS).contains(&lines), "{text}");
        assert!(
            text.chars().count() <= TOOL_CHARS + 100,
            "{}",
            text.chars().count()
        );
        assert!(
            text.contains(&format!("{}…", "t".repeat(TITLE_CHARS))),
            "{text}"
        );
        let auto = reading.auto_text(&many, &words(&["garden"])).unwrap();
        assert!(
            auto.chars().count() <= AUTO_CHARS + 150,
            "{}",
            auto.chars().count()
        );
        assert!(auto.lines().count() - 1 <= AUTO_HITS);
    }
}
