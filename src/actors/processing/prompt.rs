//! The system prompt of a turn: the profile's prompt with `{current_time}` in
//! the profile's timezone, then what hearth knows about the family member.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::llm::Role;
use crate::ports::{HistoryEntry, ProfileFacts};

pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful family assistant. Current time is {current_time}.";

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
}
