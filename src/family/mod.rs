//! Who may talk to hearth: the family members of config, one identity across channels.
//!
//! Channel actors ask here before anything is accepted. A stranger gets no answer
//! and is logged once per channel and sender, so a noisy stranger cannot flood the log;
//! the senders remembered for that are bounded (`STRANGERS_REMEMBERED`), so a flood of
//! distinct ones cannot grow memory either. Every stranger is counted in `/metrics`.
//! Each member's own chats with hearth are in `own_chats.rs`.

mod own_chats;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::config::FamilyMember;
use crate::ids::MemberId;
use crate::metrics::Metrics;

pub use own_chats::OwnChats;

/// Strangers remembered as logged; past this the memory starts over (a stranger may then
/// be logged once more), so distinct senders cannot grow it without bound.
pub const STRANGERS_REMEMBERED: usize = 4096;

pub struct Family {
    members: BTreeMap<MemberId, FamilyMember>,
    by_telegram_id: BTreeMap<i64, MemberId>,
    by_matrix_id: BTreeMap<String, MemberId>,
    strangers_logged: Mutex<HashSet<(String, String)>>,
    metrics: Option<Arc<Metrics>>,
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
            metrics: None,
        }
    }

    /// The same, counting strangers in `metrics` (`hearth_strangers_ignored_total`).
    pub fn with_metrics(members: &[FamilyMember], metrics: Arc<Metrics>) -> Self {
        Family {
            metrics: Some(metrics),
            ..Family::new(members)
        }
    }

    /// The member with this hearth id, or `None` (and a one-time log line) for a stranger:
    /// where an id comes in as text (the HTTP API), the family's own is what it is read as.
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

    /// The member with this id, without noting a stranger: for ids hearth stored itself.
    pub fn member(&self, member_id: &str) -> Option<&FamilyMember> {
        self.members.get(member_id)
    }

    /// Every member, by id.
    pub fn members(&self) -> impl Iterator<Item = &FamilyMember> {
        self.members.values()
    }

    /// A display name for prompts: the configured name, else the id.
    pub fn display_name(&self, member_id: &MemberId) -> String {
        self.members
            .get(member_id)
            .and_then(|member| member.name.clone())
            .unwrap_or_else(|| member_id.to_string())
    }

    pub fn note_stranger(&self, channel: &str, sender: &str) {
        if let Some(metrics) = &self.metrics {
            metrics.increment("hearth_strangers_ignored_total", &[("channel", channel)]);
        }
        let mut logged = self
            .strangers_logged
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if logged.len() >= STRANGERS_REMEMBERED {
            logged.clear();
            logged.shrink_to(STRANGERS_REMEMBERED);
        }
        // A sender id is outside input: only so much of it is kept or logged.
        let sender: String = sender.chars().take(128).collect();
        if logged.insert((channel.to_string(), sender.clone())) {
            tracing::warn!(
                channel,
                sender,
                "message from someone who is not a family member ignored (logged once per sender)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_strangers_is_remembered_within_a_bound_and_counted() {
        let metrics = Arc::new(Metrics::default());
        let family = Family::with_metrics(&[], metrics.clone());
        for n in 0..(STRANGERS_REMEMBERED * 3) {
            assert!(family.by_id("http", &format!("stranger-{n}")).is_none());
            let remembered = family.strangers_logged.lock().unwrap().len();
            assert!(remembered <= STRANGERS_REMEMBERED, "{remembered}");
        }
        assert_eq!(
            metrics.value("hearth_strangers_ignored_total", &[("channel", "http")]),
            (STRANGERS_REMEMBERED * 3) as f64
        );
    }
}
