//! What every chat platform says in the same words: `/help`, the busy reply, and how a
//! prompt its member answered ends (a reminder list's words are `reminder_lists.rs`'s).
//! An expired or cancelled prompt ends with the queue's words (`EXPIRED_OUTCOME`,
//! `CANCELLED_OUTCOME`), which the queue also sends itself.

/// The answer when the queue is full.
pub(crate) const BUSY_REPLY: &str = "I'm busy right now: please send that again in a minute.";

/// The line a prompt ends with once its member declined it.
pub(crate) const DECLINED_OUTCOME: &str = "❌ Cancelled.";

/// The line a prompt ends with once `name` approved it.
pub(crate) fn approved_outcome(name: &str) -> String {
    format!("✅ Confirmed by {name}.")
}

/// `/help` as markdown: what the default profile is for, each profile's command (written
/// also with `alternate_prefix`, e.g. `!` on Matrix), `/reminders` where `reminders` reach
/// the channel, `/cancel` and `/help`.
pub(crate) fn help_text(
    commands: &[(String, String)],
    default_description: &str,
    alternate_prefix: Option<char>,
    reminders: bool,
) -> String {
    let mut text = String::from("Just write to me, and I'll answer");
    let default = default_description.trim();
    if !default.is_empty() {
        text.push_str(&format!(" ({default})"));
    }
    text.push_str(".\n");
    for (command, description) in commands {
        match alternate_prefix {
            Some(prefix) => text.push_str(&format!(
                "\n- `/{command}` (or `{prefix}{command}`): {description}"
            )),
            None => text.push_str(&format!("\n- `/{command}`: {description}")),
        }
    }
    if reminders {
        text.push_str("\n- `/reminders`: your reminders, each with a way to cancel it");
    }
    text.push_str("\n- `/cancel`: cancel what is waiting for your answer");
    text.push_str("\n- `/help`: this list");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_and_the_two_of_every_channel() {
        let commands = vec![("focus".to_string(), "Short answers.".to_string())];
        let help = help_text(&commands, "The family assistant.", None, false);
        assert_eq!(
            help,
            "Just write to me, and I'll answer (The family assistant.).\n\n\
             - `/focus`: Short answers.\n- `/cancel`: cancel what is waiting for your answer\n\
             - `/help`: this list"
        );
        let help = help_text(&commands, "", Some('!'), true);
        assert!(help.contains("`/focus` (or `!focus`)"), "{help}");
        assert!(help.contains("\n- `/reminders`: your reminders"), "{help}");
    }
}
