//! The system prompt of a turn: the profile's prompt with `{current_time}` in
//! the profile's timezone, then what hearth knows about the family member; and the
//! member's message as the model reads it, with what came with it.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::images::Sight;
use crate::llm::Role;
use crate::ports::{AttachmentKind, HistoryEntry, InboundExtras, ProfileFacts};

/// The longest quoted message given to the model: enough context, bounded cost.
const MAX_QUOTED_CHARS: usize = 1_000;

pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful family assistant. Current time is {current_time}.";

/// The member's text as the model reads it: the message it replies to first, then the
/// text, then a line per attachment saying what it is and whether the model sees it
/// (`sights`, in attachment order, from `load_images`; missing ones count as described).
pub fn user_message_text(text: &str, extras: &InboundExtras, sights: &[Sight]) -> String {
    let mut parts = Vec::new();
    if let Some(quoted) = &extras.quoted {
        let mut quote: String = quoted.text.chars().take(MAX_QUOTED_CHARS).collect();
        if quote.len() < quoted.text.len() {
            quote.push('…');
        }
        parts.push(format!("(Replying to {}: “{quote}”)", quoted.author));
    }
    if !text.trim().is_empty() {
        parts.push(text.to_string());
    }
    for (index, attachment) in extras.attachments.iter().enumerate() {
        let what = match attachment.kind {
            AttachmentKind::Image => "an image",
            AttachmentKind::File => "a file",
            AttachmentKind::Audio => {
                parts.push(spoken_line(attachment));
                continue;
            }
        };
        let mut line = format!(
            "(Attached: {what}, {:?}, {} KB",
            attachment.file_name,
            attachment.size_bytes.div_ceil(1024)
        );
        if let Some(mime) = &attachment.mime_type {
            line.push_str(&format!(", {mime}"));
        }
        let sight = sights.get(index).unwrap_or(&Sight::Described);
        match (&attachment.note, sight, attachment.kind) {
            (Some(note), _, _) => line.push_str(&format!(". It could not be kept: {note}.)")),
            (None, Sight::Shown, _) => line.push_str(", shown below.)"),
            (None, Sight::WasShown, _) => {
                line.push_str(", shown with this message only; it cannot be seen again.)");
            }
            (None, Sight::NotShown(why), _) => {
                line.push_str(&format!(". It cannot be shown: {why}.)"));
            }
            (None, Sight::Described, AttachmentKind::Image) => {
                line.push_str(". This assistant cannot see images; say so if its contents matter.)")
            }
            (None, Sight::Described, AttachmentKind::File | AttachmentKind::Audio) => {
                line.push_str(". You cannot see its contents; say so if they matter.)");
            }
        }
        parts.push(line);
    }
    parts.join("\n")
}

/// What the model reads of a voice note: the member's text above is what it said (its
/// transcript is the message's text), so the history keeps both the words and that they
/// were spoken.
fn spoken_line(attachment: &crate::ports::Attachment) -> String {
    match (
        &attachment.transcript,
        &attachment.note,
        attachment.duration_seconds,
    ) {
        (Some(_), _, Some(seconds)) => {
            format!("(Spoken in a voice note of {seconds} s; the text above is its transcript.)")
        }
        (Some(_), _, None) => "(Spoken in a voice note; the text above is its transcript.)".into(),
        (None, Some(note), _) => format!("(A voice note that could not be kept: {note}.)"),
        (None, None, _) => "(A voice note that was not transcribed.)".into(),
    }
}

pub fn system_prompt(
    template: &str,
    timezone: Tz,
    now: DateTime<Utc>,
    member_name: &str,
    facts: &ProfileFacts,
) -> String {
    let local = now.with_timezone(&timezone);
    let current_time = local.format("%A %Y-%m-%d %H:%M %Z").to_string();
    let mut prompt = template.replace("{current_time}", &current_time);
    prompt.push_str("\n\n## About the user\n");
    prompt.push_str(&format!("- name: {member_name}\n"));
    for (key, value) in facts {
        if key != "name" {
            prompt.push_str(&format!("- {key}: {value}\n"));
        }
    }
    prompt
}

/// History as the model should see it: starting with a user message. A bounded read
/// can cut between a question and its answer, and some APIs (Anthropic's) refuse a
/// conversation that opens with the assistant.
pub fn starting_with_user(history: &[HistoryEntry]) -> &[HistoryEntry] {
    let first_user = history
        .iter()
        .position(|entry| entry.role == Role::User)
        .unwrap_or(history.len());
    &history[first_user..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(role: Role, content: &str) -> HistoryEntry {
        HistoryEntry {
            role,
            content: content.into(),
            profile_id: "p".into(),
            inbox_id: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at_ms: 0,
        }
    }

    #[test]
    fn history_cut_after_a_question_starts_at_the_next_question() {
        let history = [
            entry(Role::Assistant, "answer 1"),
            entry(Role::User, "question 2"),
            entry(Role::Assistant, "answer 2"),
        ];
        let trimmed = starting_with_user(&history);
        assert_eq!(trimmed.len(), 2);
        assert_eq!(trimmed[0].content, "question 2");
        assert!(starting_with_user(&history[..1]).is_empty());
    }
    use chrono::TimeZone;

    #[test]
    fn current_time_is_rendered_in_the_profile_timezone_and_facts_follow() {
        let now = Utc.with_ymd_and_hms(2026, 1, 2, 12, 0, 0).unwrap();
        let facts = ProfileFacts::from([("address".to_string(), "1 Elm St".to_string())]);
        let prompt = system_prompt(
            "Time: {current_time}.",
            chrono_tz::Europe::Berlin,
            now,
            "Alice",
            &facts,
        );
        assert!(
            prompt.starts_with("Time: Friday 2026-01-02 13:00 CET."),
            "{prompt}"
        );
        assert!(prompt.contains("## About the user\n- name: Alice\n- address: 1 Elm St\n"));
    }

    #[test]
    fn a_quote_and_attachments_come_with_the_text() {
        use crate::ports::{Attachment, QuotedMessage};
        let extras = InboundExtras {
            profile_id: None,
            quoted: Some(QuotedMessage {
                author: "Bob".into(),
                text: "x".repeat(1_200),
            }),
            attachments: vec![
                Attachment {
                    kind: AttachmentKind::Image,
                    file_name: "photo.jpg".into(),
                    mime_type: Some("image/jpeg".into()),
                    size_bytes: 2_048,
                    path: Some("data/attachments/1/photo.jpg".into()),
                    note: None,
                    duration_seconds: None,
                    transcript: None,
                },
                Attachment {
                    kind: AttachmentKind::File,
                    file_name: "scan.pdf".into(),
                    mime_type: None,
                    size_bytes: 90_000_000,
                    path: None,
                    note: Some("it is larger than 20 MB".into()),
                    duration_seconds: None,
                    transcript: None,
                },
            ],
        };
        let text = user_message_text("what is this?", &extras, &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("(Replying to Bob: “xxx"), "{text}");
        assert!(lines[0].ends_with("x…”)"), "{text}");
        assert_eq!(lines[1], "what is this?");
        assert_eq!(
            lines[2],
            "(Attached: an image, \"photo.jpg\", 2 KB, image/jpeg. This assistant cannot see images; say so if its contents matter.)"
        );
        assert_eq!(
            lines[3],
            "(Attached: a file, \"scan.pdf\", 87891 KB. It could not be kept: it is larger than 20 MB.)"
        );

        let shown = user_message_text("", &extras, &[Sight::Shown, Sight::Described]);
        assert_eq!(
            shown.lines().nth(1),
            Some("(Attached: an image, \"photo.jpg\", 2 KB, image/jpeg, shown below.)")
        );
        let later = user_message_text("", &extras, &[Sight::Shown.for_history()]);
        assert_eq!(
            later.lines().nth(1),
            Some(
                "(Attached: an image, \"photo.jpg\", 2 KB, image/jpeg, shown with this message only; it cannot be seen again.)"
            )
        );
        let gone = [Sight::NotShown("the file is no longer there".into())];
        let gone = user_message_text("", &extras, &gone);
        assert_eq!(
            gone.lines().nth(1),
            Some(
                "(Attached: an image, \"photo.jpg\", 2 KB, image/jpeg. It cannot be shown: the file is no longer there.)"
            )
        );
        assert_eq!(
            user_message_text("hi", &InboundExtras::default(), &[]),
            "hi"
        );
    }
}
