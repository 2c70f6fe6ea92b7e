//! Who may talk to hearth: the family members, one identity across channels. They are the
//! `family:` of the configuration and the members kept in the database (`ports::Members`:
//! joined by invite, or a configured member's account linked in chat); the configuration
//! wins where both name a member, its values over the stored ones, and a stored account
//! another member of the configuration has is not theirs. A change in chat replaces the
//! roster at once (`set_stored`), so a removed member is a stranger from the next message.
//! A member's own time zone chosen on the web page is the one exception: it wins over the
//! configuration's (`family[].timezone`), being the later choice.
//!
//! Channel actors ask here before anything is accepted. A stranger gets no answer
//! and is logged once per channel and sender, so a noisy stranger cannot flood the log;
//! the senders remembered for that are bounded (`STRANGERS_REMEMBERED`), so a flood of
//! distinct ones cannot grow memory either. Every stranger is counted in `/metrics`.
//! Each member's own chats with hearth are in `own_chats.rs`; invite codes and their limits
//! in `invites.rs`.

pub mod invites;
mod membership;
mod own_chats;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use crate::config::FamilyMember;
use crate::ids::MemberId;
use crate::metrics::Metrics;
use crate::ports::StoredMember;

pub use membership::{
    CODE_VALID_MS, Change, Issued, Joined, Membership, MembershipError, display, family_list,
};
pub use own_chats::OwnChats;

/// Strangers remembered as logged; past this the memory starts over (a stranger may then
/// be logged once more), so distinct senders cannot grow it without bound.
pub const STRANGERS_REMEMBERED: usize = 4096;

/// The members as they are now, with their accounts.
#[derive(Debug, Default)]
struct Roster {
    members: BTreeMap<MemberId, FamilyMember>,
    by_telegram_id: BTreeMap<i64, MemberId>,
    by_matrix_id: BTreeMap<String, MemberId>,
}

impl Roster {
    fn new(configured: &[FamilyMember], stored: &[StoredMember]) -> Self {
        let mut members: BTreeMap<MemberId, FamilyMember> = configured
            .iter()
            .map(|member| (member.id.clone(), member.clone()))
            .collect();
        let configured_telegram: HashSet<i64> = configured
            .iter()
            .filter_map(|member| member.telegram_user_id)
            .collect();
        let configured_matrix: HashSet<&str> = configured
            .iter()
            .filter_map(|member| member.matrix_user_id.as_deref())
            .collect();
        for row in stored {
            // An account the configuration gives to someone is theirs.
            let telegram = row
                .telegram_user_id
                .filter(|id| !configured_telegram.contains(id));
            let matrix = row
                .matrix_user_id
                .clone()
                .filter(|id| !configured_matrix.contains(id.as_str()));
            match members.get_mut(&row.id) {
                Some(member) => {
                    member.telegram_user_id = member.telegram_user_id.or(telegram);
                    member.matrix_user_id = member.matrix_user_id.clone().or(matrix);
                    // The member's own choice on the page is later than the file's.
                    member.timezone = row.timezone.clone().or(member.timezone.take());
                }
                None => {
                    members.insert(
                        row.id.clone(),
                        FamilyMember {
                            id: row.id.clone(),
                            name: row.name.clone(),
                            telegram_user_id: telegram,
                            matrix_user_id: matrix,
                            role: row.role,
                            timezone: row.timezone.clone(),
                        },
                    );
                }
            }
        }
        Roster {
            by_telegram_id: members
                .values()
                .filter_map(|member| Some((member.telegram_user_id?, member.id.clone())))
                .collect(),
            by_matrix_id: members
                .values()
                .filter_map(|member| Some((member.matrix_user_id.clone()?, member.id.clone())))
                .collect(),
            members,
        }
    }
}

pub struct Family {
    configured: Vec<FamilyMember>,
    roster: RwLock<Roster>,
    strangers_logged: Mutex<HashSet<(String, String)>>,
    metrics: Option<Arc<Metrics>>,
}

impl Family {
    pub fn new(members: &[FamilyMember]) -> Self {
        Family {
            configured: members.to_vec(),
            roster: RwLock::new(Roster::new(members, &[])),
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

    fn roster(&self) -> std::sync::RwLockReadGuard<'_, Roster> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.roster
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The members anew: the configuration's and `stored` (the module doc says how they
    /// merge).
    pub fn set_stored(&self, stored: &[StoredMember]) {
        let roster = Roster::new(&self.configured, stored);
        *self
            .roster
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = roster;
    }

    /// The ids the configuration gives.
    pub fn configured_ids(&self) -> Vec<MemberId> {
        self.configured
            .iter()
            .map(|member| member.id.clone())
            .collect()
    }

    /// Whether the configuration names `member_id` (its role and removal are the file's).
    pub fn is_configured(&self, member_id: &MemberId) -> bool {
        self.configured.iter().any(|member| member.id == *member_id)
    }

    /// The member with this hearth id, or `None` (and a one-time log line) for a stranger:
    /// where an id comes in as text (the HTTP API), the family's own is what it is read as.
    pub fn by_id(&self, channel: &str, member_id: &str) -> Option<FamilyMember> {
        let member = self.roster().members.get(member_id).cloned();
        if member.is_none() {
            self.note_stranger(channel, member_id);
        }
        member
    }

    /// The member with this Telegram user id, or `None` (and a one-time log line).
    pub fn by_telegram_id(&self, user_id: i64) -> Option<FamilyMember> {
        let member = {
            let roster = self.roster();
            roster
                .by_telegram_id
                .get(&user_id)
                .and_then(|id| roster.members.get(id))
                .cloned()
        };
        if member.is_none() {
            self.note_stranger("telegram", &user_id.to_string());
        }
        member
    }

    /// The member with this Matrix user id (`@name:server`), or `None` (and a one-time log line).
    pub fn by_matrix_id(&self, user_id: &str) -> Option<FamilyMember> {
        let member = {
            let roster = self.roster();
            roster
                .by_matrix_id
                .get(user_id)
                .and_then(|id| roster.members.get(id))
                .cloned()
        };
        if member.is_none() {
            self.note_stranger("matrix", user_id);
        }
        member
    }

    /// The member with this id, without noting a stranger: for ids hearth stored itself.
    pub fn member(&self, member_id: &str) -> Option<FamilyMember> {
        self.roster().members.get(member_id).cloned()
    }

    /// Every member, by id.
    pub fn members(&self) -> Vec<FamilyMember> {
        self.roster().members.values().cloned().collect()
    }

    /// Whether anyone is a member yet (set-up starts when nobody is).
    pub fn is_empty(&self) -> bool {
        self.roster().members.is_empty()
    }

    /// A display name for prompts: the configured name, else the id.
    pub fn display_name(&self, member_id: &MemberId) -> String {
        self.roster()
            .members
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
