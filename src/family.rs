//! Who may talk to hearth: the family members of config, one identity across channels.
//!
//! Channel actors ask here before anything is accepted. A stranger gets no answer
//! and is logged once per channel and sender, so a noisy stranger cannot flood the log.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use crate::config::FamilyMember;

pub struct Family {
    members: BTreeMap<String, FamilyMember>,
    by_telegram_id: BTreeMap<i64, String>,
    by_matrix_id: BTreeMap<String, String>,
    strangers_logged: Mutex<HashSet<(String, String)>>,
}

impl Family {
    pub fn new(members: &[FamilyMember]) -> Self {
        Family {
            members: members
                .iter()
                .map(|member| (member.id.clone(), member.clone()))
                .collect(),
            by_telegram_id: members
                .iter()
                .filter_map(|member| Some((member.telegram_user_id?, member.id.clone())))
                .collect(),
            by_matrix_id: members
                .iter()
                .filter_map(|member| Some((member.matrix_user_id.clone()?, member.id.clone())))
                .collect(),
            strangers_logged: Mutex::new(HashSet::new()),
        }
    }

    /// The member with this hearth id, or `None` (and a one-time log line) for a stranger.
    pub fn by_id(&self, channel: &str, member_id: &str) -> Option<&FamilyMember> {
        let member = self.members.get(member_id);
        if member.is_none() {
            self.note_stranger(channel, member_id);
        }
        member
    }

    /// The member with this Telegram user id, or `None` (and a one-time log line).
    pub fn by_telegram_id(&self, user_id: i64) -> Option<&FamilyMember> {
        let member = self
            .by_telegram_id
            .get(&user_id)
            .and_then(|id| self.members.get(id));
        if member.is_none() {
            self.note_stranger("telegram", &user_id.to_string());
        }
        member
    }

    /// The member with this Matrix user id (`@name:server`), or `None` (and a one-time log line).
    pub fn by_matrix_id(&self, user_id: &str) -> Option<&FamilyMember> {
        let member = self
            .by_matrix_id
            .get(user_id)
            .and_then(|id| self.members.get(id));
        if member.is_none() {
            self.note_stranger("matrix", user_id);
        }
        member
    }

    /// A display name for prompts: the configured name, else the id.
    pub fn display_name(&self, member_id: &str) -> String {
        self.members
            .get(member_id)
            .and_then(|member| member.name.clone())
            .unwrap_or_else(|| member_id.to_string())
    }

    pub fn note_stranger(&self, channel: &str, sender: &str) {
        let mut logged = self
            .strangers_logged
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if logged.insert((channel.to_string(), sender.to_string())) {
            tracing::warn!(
                channel,
                sender,
                "message from someone who is not a family member ignored (logged once per sender)"
            );
        }
    }
}
