//! The system prompt of a turn: the profile's prompt with `{current_time}` in
//! the profile's timezone, then what hearth knows about the family member.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::ports::ProfileFacts;

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

#[cfg(test)]
mod tests {
    use super::*;
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
