//! Who may talk to hearth: the family members, one identity across channels. They are the
//! `family:` of the configuration and the members kept in the database (`ports::Members`:
//! joined by invite, or a configured member's account linked in chat); the configuration
//! wins where both name a member, its values over the stored ones, and a stored account
//! another member of the configuration has is not theirs. A member's own time zone chosen
//! on the web page is the one exception: it wins over the configuration's
//! (`family[].timezone`), being the later choice.
//!
//! The database is the one truth, for every worker sharing it: the roster here is a copy
//! of the stored family at one version. Whoever authorises a request (a channel reading a
//! message or an answer, an HTTP route reading who speaks) calls `refresh` first, which
//! reads the family's version (one small read) and the stored members again when it moved,
//! so a change made on any worker (a join, a link, a role, a removal, a setting, a code
//! opening joining) counts from the next request on. What derives from the roster here
//! (each member's own chats) is told each time it is read anew (`on_reload`).
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
use crate::ids::{FamilyRole, MemberId};
use crate::metrics::Metrics;
use crate::ports::{ConfiguredMembers, Members, StorageError, StoredMember};

pub use membership::{
    CODE_VALID_MS, Change, Issued, Joined, Membership, MembershipError, display, family_list,
    how_long,
};
pub use own_chats::OwnChats;

/// Strangers remembered as logged; past this the memory starts over (a stranger may then
/// be logged once more), so distinct senders cannot grow it without bound.
pub const STRANGERS_REMEMBERED: usize = 4096;

/// The members as they are now, with their accounts.
#[derive(Debug, Default)]
struct Roster {
    /// The stored rows it was made from.
    stored: Vec<StoredMember>,
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
            stored: stored.to_vec(),
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

/// What is told the roster each time it is read anew: every member, and the stored rows.
pub type RosterHook = Box<dyn Fn(&[FamilyMember], &[StoredMember]) + Send + Sync>;

/// The stored family's version the roster was read at, and until when a code adding a
/// member is open (as stored then).
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    version: Option<i64>,
    open_until_ms: Option<i64>,
}

pub struct Family {
    configured: Vec<FamilyMember>,
    roster: RwLock<Roster>,
    strangers_logged: Mutex<HashSet<(String, String)>>,
    metrics: Option<Arc<Metrics>>,
    /// Where the stored members are read from; `None`: the configuration's only.
    store: Option<Arc<dyn Members>>,
    held: Mutex<Held>,
    /// One reading at a time: requests finding the version moved wait for one reading.
    reading: tokio::sync::Mutex<()>,
    on_reload: Mutex<Vec<RosterHook>>,
}

impl Family {
    pub fn new(members: &[FamilyMember]) -> Self {
        Family {
            configured: members.to_vec(),
            roster: RwLock::new(Roster::new(members, &[])),
            strangers_logged: Mutex::new(HashSet::new()),
            metrics: None,
            store: None,
            held: Mutex::new(Held::default()),
            reading: tokio::sync::Mutex::new(()),
            on_reload: Mutex::new(Vec::new()),
        }
    }

    /// The same, its stored members read from `store` (by `reload` and `refresh`).
    pub fn stored_in(mut self, store: Arc<dyn Members>) -> Self {
        self.store = Some(store);
        self
    }

    /// Tell `hook` the roster each time it is read anew (and now).
    pub fn on_reload(&self, hook: RosterHook) {
        let stored = self.stored_rows();
        hook(&self.members(), &stored);
        self.on_reload
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(hook);
    }

    /// The stored rows of the roster as held (for a hook added late).
    fn stored_rows(&self) -> Vec<StoredMember> {
        self.roster().stored.clone()
    }

    fn held(&self) -> Held {
        *self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The stored family's version the roster holds (`None` before the first reading, or
    /// with no store).
    pub fn version(&self) -> Option<i64> {
        self.held().version
    }

    /// Read the stored family again if its version moved since the roster was read: what
    /// every request's authorisation starts with. One small read when nothing changed.
    pub async fn refresh(&self) -> Result<(), StorageError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let stored_version = store.family_version().await?;
        if self.held().version == Some(stored_version) {
            return Ok(());
        }
        self.reload().await
    }

    /// Read the stored family now (at start, and after a change made here).
    pub async fn reload(&self) -> Result<(), StorageError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let _turn = self.reading.lock().await;
        let stored = store.stored_family().await?;
        // A reading that waited for another may find the roster newer than what it read.
        if self
            .held()
            .version
            .is_some_and(|held| held >= stored.version)
        {
            return Ok(());
        }
        self.set_stored(&stored.members);
        *self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Held {
            version: Some(stored.version),
            open_until_ms: stored.open_until_ms,
        };
        let members = self.members();
        for hook in self
            .on_reload
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
        {
            hook(&members, &stored.members);
        }
        tracing::debug!(
            version = stored.version,
            members = members.len(),
            "family read"
        );
        Ok(())
    }

    /// Whether a code adding a member may be used at `now_ms` (as the roster was read).
    pub fn invites_open(&self, now_ms: i64) -> bool {
        self.held()
            .open_until_ms
            .is_some_and(|until| until > now_ms)
    }

    /// The configuration's members with their roles, which are the file's.
    pub fn configured_roles(&self) -> ConfiguredMembers {
        ConfiguredMembers(
            self.configured
                .iter()
                .map(|member| (member.id.clone(), member.role))
                .collect(),
        )
    }

    /// Whether the family has a parent (set-up is over once it has one).
    pub fn has_parent(&self) -> bool {
        self.roster()
            .members
            .values()
            .any(|member| member.role == FamilyRole::Parent)
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
    /// merge); for a roster with no store of its own (the command line's).
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

    /// The member with this Matrix user id, without noting a stranger.
    pub fn member_by_matrix_id(&self, user_id: &str) -> Option<FamilyMember> {
        let roster = self.roster();
        roster
            .by_matrix_id
            .get(user_id)
            .and_then(|id| roster.members.get(id))
            .cloned()
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
