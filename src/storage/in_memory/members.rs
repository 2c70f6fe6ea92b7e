//! `Members` in memory, for tests: the same rules as the SQL adapters, one lock held
//! through each change so it is one step here too.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::{FamilyRole, MemberId};
use crate::ports::{
    ChangeRefused, ConfiguredMembers, InvitePurpose, JOIN_FAILURES_KEPT_MS, MemberChange,
    MemberChangeKind, Members, NewInvite, PlatformUser, Redeem, RedeemRefused, Redeemed,
    StorageError, StoredFamily, StoredMember, check_change, check_invite, join_locked,
    member_id_choices,
};

/// An invite as kept: what it is, when it was used, and the account waiting on it.
#[derive(Clone)]
struct KeptInvite {
    invite: NewInvite,
    used_at_ms: Option<i64>,
    switch_to: Option<PlatformUser>,
}

#[derive(Default)]
pub(super) struct MembersState {
    version: i64,
    members: BTreeMap<MemberId, StoredMember>,
    /// Code hash → the invite.
    invites: BTreeMap<String, KeptInvite>,
    /// Wrong codes: who tried, when.
    join_failures: Vec<(String, i64)>,
}

impl InMemoryStore {
    fn members_state(&self) -> MutexGuard<'_, MembersState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.members
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl MembersState {
    fn stored(&self) -> Vec<StoredMember> {
        self.members.values().cloned().collect()
    }

    fn owner_of(&self, user: &PlatformUser) -> Option<MemberId> {
        self.members
            .values()
            .find(|member| member.has_account(user))
            .map(|member| member.id.clone())
    }

    fn open_until(&self, now_ms: i64) -> Option<i64> {
        self.invites
            .values()
            .filter(|kept| {
                kept.used_at_ms.is_none()
                    && kept.invite.expires_at_ms > now_ms
                    && matches!(kept.invite.purpose, InvitePurpose::Join { .. })
            })
            .map(|kept| kept.invite.expires_at_ms)
            .max()
    }

    fn spend(&mut self, code_hash: &str, at_ms: i64) {
        if let Some(kept) = self.invites.get_mut(code_hash) {
            kept.used_at_ms = Some(at_ms);
        }
    }

    fn redeem(&mut self, redeem: &Redeem) -> Result<Redeemed, RedeemRefused> {
        let now = redeem.at_ms;
        self.join_failures
            .retain(|(_, at)| *at > now - JOIN_FAILURES_KEPT_MS);
        if let Some(locked) = join_locked(&self.join_failures, &redeem.source, now) {
            return Err(RedeemRefused::Limited(locked));
        }
        let stored = self.stored();
        let open = self
            .invites
            .get(&redeem.code_hash)
            .filter(|kept| kept.used_at_ms.is_none() && kept.invite.expires_at_ms > now)
            .map(|kept| kept.invite.clone());
        let open = match open {
            // Set-up's code yields once the family has a parent: spent for good.
            Some(invite)
                if invite.created_by.is_none()
                    && !redeem.configured.parents_in(&stored).is_empty() =>
            {
                if let Some(kept) = self.invites.get_mut(&redeem.code_hash) {
                    kept.invite.expires_at_ms = now;
                }
                None
            }
            open => open,
        };
        let Some(invite) = open else {
            self.join_failures.push((redeem.source.clone(), now));
            return Err(RedeemRefused::NoSuchCode);
        };
        let owner = self.owner_of(&redeem.user);
        match invite.purpose {
            InvitePurpose::Link { member, role, name } => {
                if owner.as_ref().is_some_and(|owner| *owner != member) {
                    return Err(RedeemRefused::AlreadyMember);
                }
                let stored = self
                    .members
                    .get(&member)
                    .cloned()
                    .unwrap_or_else(|| StoredMember::new(member, name, role, None, now));
                if stored.has_account(&redeem.user) {
                    self.spend(&redeem.code_hash, now);
                    return Ok(Redeemed::AlreadyTheirs(stored));
                }
                if stored.account_like(&redeem.user).is_some() {
                    if let Some(kept) = self.invites.get_mut(&redeem.code_hash) {
                        kept.switch_to = Some(redeem.user.clone());
                    }
                    return Ok(Redeemed::SwitchAsked(stored));
                }
                let linked = stored.with_account(&redeem.user);
                self.version += 1;
                self.members.insert(linked.id.clone(), linked.clone());
                self.spend(&redeem.code_hash, now);
                Ok(Redeemed::Linked(linked))
            }
            InvitePurpose::Join { role, name } => {
                if owner.is_some() {
                    return Err(RedeemRefused::AlreadyMember);
                }
                let name = name.or_else(|| redeem.name.clone());
                let reserved = redeem.configured.ids();
                let choices = member_id_choices(name.as_deref(), &redeem.user, &reserved);
                let id = choices
                    .into_iter()
                    .find(|id| !self.members.contains_key(id))
                    .ok_or(RedeemRefused::NoFreeId)?;
                let member = StoredMember::new(id, name, role, invite.created_by.clone(), now)
                    .with_account(&redeem.user);
                self.version += 1;
                self.members.insert(member.id.clone(), member.clone());
                self.spend(&redeem.code_hash, now);
                if role == FamilyRole::Parent {
                    for kept in self.invites.values_mut() {
                        if kept.invite.created_by.is_none()
                            && kept.used_at_ms.is_none()
                            && kept.invite.expires_at_ms > now
                        {
                            kept.invite.expires_at_ms = now;
                        }
                    }
                }
                Ok(Redeemed::Joined {
                    member,
                    invited_by: invite.created_by,
                })
            }
        }
    }

    fn confirm_switch(
        &mut self,
        member: &MemberId,
        channel: &str,
        at_ms: i64,
    ) -> Option<(StoredMember, PlatformUser)> {
        let (code_hash, user) = self
            .invites
            .iter()
            .filter(|(_, kept)| {
                kept.used_at_ms.is_none()
                    && kept.invite.expires_at_ms > at_ms
                    && matches!(&kept.invite.purpose,
                        InvitePurpose::Link { member: linked, .. } if linked == member)
            })
            .filter_map(|(hash, kept)| {
                let user = kept.switch_to.clone()?;
                (user.channel() == channel).then_some((kept.invite.created_at_ms, hash, user))
            })
            .max_by_key(|(created, _, _)| *created)
            .map(|(_, hash, user)| (hash.clone(), user))?;
        let row = self.members.get(member)?.clone();
        if self.owner_of(&user).is_some() {
            return None;
        }
        let switched = row.with_account(&user);
        self.version += 1;
        self.members.insert(switched.id.clone(), switched.clone());
        self.spend(&code_hash, at_ms);
        Some((switched, user))
    }

    fn change(&mut self, change: &MemberChange) -> Result<StoredMember, ChangeRefused> {
        let changed = check_change(change, &self.stored())?;
        self.version += 1;
        match change.kind {
            MemberChangeKind::SetRole(role) => {
                self.members.insert(changed.id.clone(), changed.clone());
                if role == FamilyRole::Child {
                    self.invites.retain(|_, kept| {
                        kept.used_at_ms.is_some()
                            || kept.invite.created_by.as_ref() != Some(&change.target)
                            || !matches!(
                                kept.invite.purpose,
                                InvitePurpose::Join {
                                    role: FamilyRole::Parent,
                                    ..
                                }
                            )
                    });
                }
            }
            MemberChangeKind::Remove => {
                self.invites.retain(|_, kept| {
                    kept.used_at_ms.is_some()
                        || kept.invite.created_by.as_ref() != Some(&change.target)
                });
                self.members.remove(&change.target);
            }
        }
        Ok(changed)
    }
}

#[async_trait]
impl Members for InMemoryStore {
    async fn family_version(&self) -> Result<i64, StorageError> {
        Ok(self.members_state().version)
    }

    async fn stored_family(&self) -> Result<StoredFamily, StorageError> {
        let state = self.members_state();
        Ok(StoredFamily {
            version: state.version,
            members: state.stored(),
            open_until_ms: state.open_until(i64::MIN),
        })
    }

    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError> {
        Ok(self.members_state().stored())
    }

    async fn create_invite(
        &self,
        invite: &NewInvite,
        configured: &ConfiguredMembers,
    ) -> Result<Result<(), ChangeRefused>, StorageError> {
        let mut state = self.members_state();
        if let Err(refused) = check_invite(invite, configured, &state.stored()) {
            return Ok(Err(refused));
        }
        if state.invites.contains_key(&invite.code_hash) {
            return Err(StorageError::Database("invite code stored twice".into()));
        }
        if matches!(invite.purpose, InvitePurpose::Join { .. }) {
            state.version += 1;
        }
        state.invites.insert(
            invite.code_hash.clone(),
            KeptInvite {
                invite: invite.clone(),
                used_at_ms: None,
                switch_to: None,
            },
        );
        Ok(Ok(()))
    }

    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError> {
        Ok(self.members_state().open_until(now_ms))
    }

    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
        Ok(self.members_state().redeem(redeem))
    }

    async fn confirm_switch(
        &self,
        member: &MemberId,
        channel: &str,
        at_ms: i64,
    ) -> Result<Option<(StoredMember, PlatformUser)>, StorageError> {
        Ok(self.members_state().confirm_switch(member, channel, at_ms))
    }

    async fn save_settings(
        &self,
        member: &MemberId,
        timezone: Option<&str>,
        preferred_channel: Option<&str>,
        new_row: &StoredMember,
    ) -> Result<(), StorageError> {
        let mut state = self.members_state();
        state.version += 1;
        let row = state
            .members
            .entry(member.clone())
            .or_insert_with(|| new_row.clone());
        row.timezone = timezone.map(str::to_string);
        row.preferred_channel = preferred_channel.map(str::to_string);
        Ok(())
    }

    async fn change_member(
        &self,
        change: &MemberChange,
    ) -> Result<Result<StoredMember, ChangeRefused>, StorageError> {
        let changed = self.members_state().change(change);
        if changed.is_ok() && change.kind == MemberChangeKind::Remove {
            // Whatever proved them on HTTP goes with them (as the SQL adapters do).
            self.forget_web_access_of(&change.target);
        }
        Ok(changed)
    }
}
