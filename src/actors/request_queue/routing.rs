//! Which profile answers a message: a leading slash command names one, else the
//! default profile. Every channel's messages are routed here, once.

use std::collections::HashMap;

use crate::config::{Engine, ResolvedProfile};

#[derive(Clone)]
pub struct Router {
    by_command: HashMap<String, String>,
    default_profile_id: String,
    /// Whether a profile runs the intents engine, the only one whose plans wait for a
    /// member's next message (`waiting_plans.rs`).
    plans_wait: bool,
}

impl Router {
    pub fn new(profiles: &[ResolvedProfile], default_profile_id: &str) -> Self {
        let mut by_command = HashMap::new();
        for profile in profiles {
            for command in &profile.slash_commands {
                by_command.insert(command.to_lowercase(), profile.id.clone());
            }
        }
        Router {
            by_command,
            default_profile_id: default_profile_id.to_string(),
            plans_wait: profiles
                .iter()
                .any(|profile| profile.processing.engine == Engine::Intents),
        }
    }

    /// Whether a new message may answer a plan waiting for its member: only when a profile
    /// runs the intents engine. Without one no plan is continued, so none is read.
    pub fn plans_wait(&self) -> bool {
        self.plans_wait
    }

    /// Whether `command` (`/focused`) picks a profile.
    pub fn is_command(&self, command: &str) -> bool {
        self.by_command.contains_key(&command.to_lowercase())
    }

    /// The profile id and the text it should see (without the command).
    /// `/cmd@botname` (Telegram groups) counts as `/cmd`; an unknown command is
    /// left in the text for the default profile.
    pub fn route<'a>(&self, text: &'a str) -> (&str, &'a str) {
        let (profile_id, text, _) = self.route_command(text);
        (profile_id, text)
    }

    /// As `route`, plus the slash command that chose the profile, if one did.
    pub fn route_command<'a>(&self, text: &'a str) -> (&str, &'a str, Option<String>) {
        let trimmed = text.trim_start();
        if trimmed.starts_with('/') {
            let (word, rest) = trimmed
                .split_once(char::is_whitespace)
                .unwrap_or((trimmed, ""));
            let command = word.split('@').next().unwrap_or(word).to_lowercase();
            if let Some(profile_id) = self.by_command.get(&command) {
                return (profile_id, rest.trim_start(), Some(command));
            }
        }
        (&self.default_profile_id, text, None)
    }
}
