//! `Members` in memory, for tests: the same rules as the SQLite adapter, one lock held
//! through a redeem so it is one step here too.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::in_memory::InMemoryStore;
use crate::ids::MemberId;
use crate::ports::{
    InvitePurpose, Members, NewInvite, Redeem, RedeemRefused, Redeemed, StorageError, StoredMember,
    member_id_choices,
};

#[derive(Default)]
pub(super) struct MembersState {
    members: BTreeMap<MemberId, StoredMember>,
    /// Code hash → the invite and when it was used.
    invites: BTreeMap<String, (NewInvite, Option<i64>)>,
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
    fn redeem(&mut self, redeem: &Redeem) -> Result<Redeemed, RedeemRefused> {
        let Some((invite, None)) = self.invites.get(&redeem.code_hash) else {
            return Err(RedeemRefused::NoSuchCode);
        };
        if invite.expires_at_ms <= redeem.at_ms {
            return Err(RedeemRefused::NoSuchCode);
        }
        let invite = invite.clone();
        let owner = self
            .members
            .values()
            .find(|member| member.has_account(&redeem.user))
            .map(|member| member.id.clone());
        let redeemed = match invite.purpose {
            InvitePurpose::Link { member, role, name } => {
                if owner.as_ref().is_some_and(|owner| *owner != member) {
                    return Err(RedeemRefused::AlreadyMember);
                }
                let stored =
                    self.members.get(&member).cloned().unwrap_or_else(|| {
                        StoredMember::new(member, name, role, None, redeem.at_ms)
                    });
                Redeemed::Linked(stored.with_account(&redeem.user))
            }
            InvitePurpose::Join { role, name } => {
                if owner.is_some() {
                    return Err(RedeemRefused::AlreadyMember);
                }
                let name = name.or_else(|| redeem.name.clone());
                let choices =
                    member_id_choices(name.as_deref(), &redeem.user, &redeem.reserved_ids);
                let id = choices
                    .iter()
                    .find(|id| !self.members.contains_key(*id))
                    .ok_or(RedeemRefused::NoFreeId)?;
                let member = StoredMember::new(
                    id.clone(),
                    name,
                    role,
                    invite.created_by.clone(),
                    redeem.at_ms,
                );
                Redeemed::Joined {
                    member: member.with_account(&redeem.user),
                    invited_by: invite.created_by.clone(),
                }
            }
        };
        let (Redeemed::Joined { member, .. } | Redeemed::Linked(member)) = &redeemed;
        self.members.insert(member.id.clone(), member.clone());
        if let Some((_, used)) = self.invites.get_mut(&redeem.code_hash) {
            *used = Some(redeem.at_ms);
        }
        Ok(redeemed)
    }
}

#[async_trait]
impl Members for InMemoryStore {
    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError> {
        Ok(self.members_state().members.values().cloned().collect())
    }

    async fn create_invite(&self, invite: &NewInvite) -> Result<(), StorageError> {
        let mut state = self.members_state();
        if state.invites.contains_key(&invite.code_hash) {
            return Err(StorageError::Database("invite code stored twice".into()));
        }
        state
            .invites
            .insert(invite.code_hash.clone(), (invite.clone(), None));
        Ok(())
    }

    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError> {
        Ok(self
            .members_state()
            .invites
            .values()
            .filter(|(invite, used)| {
                used.is_none()
                    && invite.expires_at_ms > now_ms
                    && matches!(invite.purpose, InvitePurpose::Join { .. })
            })
            .map(|(invite, _)| invite.expires_at_ms)
            .max())
    }

    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
        Ok(self.members_state().redeem(redeem))
    }

    async fn save_member(&self, member: &StoredMember) -> Result<(), StorageError> {
        let mut state = self.members_state();
        // The same account on two rows is what SQLite's unique columns refuse.
        let taken = state.members.values().any(|other| {
            other.id != member.id
                && ((member.telegram_user_id.is_some()
                    && other.telegram_user_id == member.telegram_user_id)
                    || (member.matrix_user_id.is_some()
                        && other.matrix_user_id == member.matrix_user_id))
        });
        if taken {
            return Err(StorageError::Database(format!(
                "an account of member {} belongs to another member",
                member.id
            )));
        }
        state.members.insert(member.id.clone(), member.clone());
        Ok(())
    }

    async fn remove_member(&self, member: &MemberId) -> Result<bool, StorageError> {
        let removed = {
            let mut state = self.members_state();
            state.invites.retain(|_, (invite, used)| {
                used.is_some() || invite.created_by.as_ref() != Some(member)
            });
            state.members.remove(member).is_some()
        };
        // Whatever proved them on HTTP goes with them (as the SQLite adapter does).
        self.forget_web_access_of(member);
        Ok(removed)
    }
}
