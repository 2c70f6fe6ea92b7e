//! Changing the family from chat (and the CLI): invite codes for a new member (`/invite`)
//! or another account of a member (`/link`), redeeming one (`/join`), a role changed or a
//! member removed (`/family`). Each change is decided and written by `ports::Members` on
//! the family as stored, in one transaction (who asks must be a parent as stored; the
//! family keeps a parent); the roster is read again after (`Family::reload`), and every
//! other worker reads it before its next request (`Family::refresh`).
//!
//! Who may: only a parent invites, changes a role or removes a member, never themselves
//! and never the last parent; a member of the configuration is the file's to change. A
//! member removed loses what family memory kept as theirs alone (`FamilyMemory::
//! remove_member`: their private sources, their places among conversations' readers). A
//! `/link` code used from a second account of the platform where its member has one asks
//! the member first (`Joined::SwitchAsked`, `confirm_switch`). What each refusal says is
//! returned as `Refused(text)`, for the channel to say.

use std::sync::{Arc, Mutex};

use super::Family;
use super::invites::{self, StrangersTold};
use crate::config::FamilyMember;
use crate::ids::{FamilyRole, MemberId};
use crate::ports::{
    ChangeRefused, FamilyMemory, InvitePurpose, LockScope, MemberChange, MemberChangeKind, Members,
    NewInvite, PlatformUser, Redeem, RedeemRefused, Redeemed, StorageError, StoredMember,
};

/// How long a code can be used.
pub const CODE_VALID_MS: i64 = 24 * 60 * 60 * 1000;
/// The longest name a member is given.
const MAX_NAME_CHARS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    NoRandomness(#[from] invites::NoRandomness),
}

/// A code given out: show it once, it is not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub code: String,
    pub expires_at_ms: i64,
}

/// What a change did, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<T> {
    Done(T),
    /// Nothing changed; the text says why, for the one who asked.
    Refused(String),
}

impl<T> Change<T> {
    pub fn map<U>(self, done: impl FnOnce(T) -> U) -> Change<U> {
        match self {
            Change::Done(value) => Change::Done(done(value)),
            Change::Refused(text) => Change::Refused(text),
        }
    }
}

/// What `/join` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joined {
    /// A new member; `invited_by` asked for the code (`None`: set-up's first parent).
    Member {
        member: FamilyMember,
        invited_by: Option<MemberId>,
    },
    /// An existing member's account on a platform they had none on (or, from the web
    /// page, the member to sign in as).
    Linked(FamilyMember),
    /// The account is the member's already: nothing changed.
    AlreadyTheirs(FamilyMember),
    /// The member has `existing` on this platform: they are asked there before the new
    /// account replaces it.
    SwitchAsked {
        member: FamilyMember,
        existing: PlatformUser,
    },
}

/// Told after a change of the family made here (the new version): the other workers are
/// woken to read it.
pub type ChangeHook = Box<dyn Fn(i64) + Send + Sync>;

pub struct Membership {
    family: Arc<Family>,
    store: Arc<dyn Members>,
    /// What family memory keeps of a member: removed with them.
    memory: Arc<dyn FamilyMemory>,
    told: Mutex<StrangersTold>,
    /// Strangers are told (once a day) to ask for an invite code.
    pub tell_strangers: bool,
    on_change: Mutex<Vec<ChangeHook>>,
}

impl Membership {
    pub fn new(
        family: Arc<Family>,
        store: Arc<dyn Members>,
        memory: Arc<dyn FamilyMemory>,
        tell_strangers: bool,
    ) -> Self {
        Membership {
            family,
            store,
            memory,
            told: Mutex::new(StrangersTold::default()),
            tell_strangers,
            on_change: Mutex::new(Vec::new()),
        }
    }

    /// Tell `hook` each change of the family made here.
    pub fn on_change(&self, hook: ChangeHook) {
        self.on_change
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(hook);
    }

    /// The family changed here: read it again, and tell the hooks.
    async fn changed(&self) -> Result<(), StorageError> {
        self.family.reload().await?;
        let version = self.family.version().unwrap_or_default();
        for hook in self
            .on_change
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
        {
            hook(version);
        }
        Ok(())
    }

    pub fn family(&self) -> &Arc<Family> {
        &self.family
    }

    /// Read the stored family now, and whether codes are open.
    pub async fn load(&self) -> Result<(), StorageError> {
        self.family.reload().await
    }

    /// Whether a code adding a member may be used now (as last read).
    pub fn invites_open(&self, now_ms: i64) -> bool {
        self.family.invites_open(now_ms)
    }

    /// Whether stranger `user` is to be told how to join now (when on; once a day).
    pub fn tell_stranger(&self, user: &PlatformUser, now_ms: i64) -> bool {
        self.tell_strangers
            && self
                .told
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .tell(&user.key(), now_ms)
    }

    async fn issue(
        &self,
        purpose: InvitePurpose,
        created_by: Option<MemberId>,
        now_ms: i64,
    ) -> Result<Result<Issued, ChangeRefused>, MembershipError> {
        let code = invites::new_code()?;
        let plain = invites::read_code(&code).unwrap_or_default();
        let invite = NewInvite {
            code_hash: invites::code_hash(&plain),
            purpose,
            created_by,
            created_at_ms: now_ms,
            expires_at_ms: now_ms + CODE_VALID_MS,
        };
        let configured = self.family.configured_roles();
        if let Err(refused) = self.store.create_invite(&invite, &configured).await? {
            return Ok(Err(refused));
        }
        self.changed().await?;
        Ok(Ok(Issued {
            code,
            expires_at_ms: invite.expires_at_ms,
        }))
    }

    /// A code making the first person a parent (set-up: nobody is a parent yet).
    pub async fn first_parent_code(&self, now_ms: i64) -> Result<Change<Issued>, MembershipError> {
        let purpose = InvitePurpose::Join {
            role: FamilyRole::Parent,
            name: None,
        };
        Ok(match self.issue(purpose, None, now_ms).await? {
            Ok(issued) => Change::Done(issued),
            Err(refused) => Change::Refused(refusal(refused, None)),
        })
    }

    /// `by` invites someone as `role`, named `name` if given; `by` must be a parent as
    /// stored when the code is made.
    pub async fn invite(
        &self,
        by: &FamilyMember,
        role: FamilyRole,
        name: Option<String>,
        now_ms: i64,
    ) -> Result<Change<Issued>, MembershipError> {
        let name = name
            .map(|name| name.trim().chars().take(MAX_NAME_CHARS).collect::<String>())
            .filter(|name| !name.is_empty());
        let purpose = InvitePurpose::Join { role, name };
        Ok(
            match self.issue(purpose, Some(by.id.clone()), now_ms).await? {
                Ok(issued) => Change::Done(issued),
                Err(ChangeRefused::NotAParent) => {
                    Change::Refused("Only a parent can invite someone to the family.".into())
                }
                Err(refused) => Change::Refused(refusal(refused, None)),
            },
        )
    }

    /// A code that links another account to `member`.
    pub async fn link_code(
        &self,
        member: &FamilyMember,
        now_ms: i64,
    ) -> Result<Change<Issued>, MembershipError> {
        let purpose = InvitePurpose::Link {
            member: member.id.clone(),
            role: member.role,
            name: member.name.clone(),
        };
        Ok(
            match self.issue(purpose, Some(member.id.clone()), now_ms).await? {
                Ok(issued) => Change::Done(issued),
                Err(refused) => Change::Refused(refusal(refused, None)),
            },
        )
    }

    /// `user` sends `/join <text>`: a code, and for a new member perhaps their name
    /// (`platform_name` is the platform's, used when neither the invite nor they give one).
    pub async fn join(
        &self,
        user: &PlatformUser,
        text: &str,
        platform_name: Option<String>,
        now_ms: i64,
    ) -> Result<Change<Joined>, StorageError> {
        let mut words = text.split_whitespace();
        // A code may have been written with a space instead of its dash.
        let (code, rest) = match (words.next(), words.clone().next()) {
            (Some(first), Some(second)) if invites::read_code(first).is_none() => {
                words.next();
                (invites::read_code(&format!("{first}{second}")), words)
            }
            (first, _) => (first.and_then(invites::read_code), words),
        };
        let given_name = rest.collect::<Vec<_>>().join(" ");
        let name = Some(given_name)
            .filter(|name| !name.trim().is_empty())
            .or(platform_name)
            .map(|name| name.trim().chars().take(MAX_NAME_CHARS).collect::<String>());
        // Something that cannot be a code is tried as one that matches nothing: it counts.
        let code_hash = invites::code_hash(&code.unwrap_or_default());
        let redeem = Redeem {
            code_hash,
            user: user.clone(),
            configured: self.family.configured_roles(),
            name,
            at_ms: now_ms,
            source: user.key(),
        };
        let redeemed = match self.store.redeem(&redeem).await? {
            Ok(redeemed) => redeemed,
            Err(RedeemRefused::NoSuchCode) => return Ok(Change::Refused(WRONG_CODE.into())),
            Err(RedeemRefused::Limited(locked)) => {
                let whose = match locked.scope {
                    LockScope::Everyone => "from everyone today",
                    _ => "from you",
                };
                return Ok(Change::Refused(format!(
                    "Too many wrong codes {whose}: no code is tried for {}. At most {} wrong codes an hour and {} a day are tried from one account, and {} a day from everyone.",
                    how_long(locked.until_ms - now_ms),
                    crate::ports::JOIN_LIMITS_PER_SOURCE[0].max,
                    crate::ports::JOIN_LIMITS_PER_SOURCE[1].max,
                    crate::ports::JOIN_LIMITS_OVERALL[0].max,
                )));
            }
            Err(RedeemRefused::AlreadyMember) => {
                return Ok(Change::Refused(
                    "This account belongs to a family member already.".into(),
                ));
            }
            Err(RedeemRefused::NoFreeId) => {
                return Ok(Change::Refused(
                    "That name is taken in the family: send the code again with another name after it.".into(),
                ));
            }
        };
        self.changed().await?;
        Ok(Change::Done(match redeemed {
            Redeemed::Joined { member, invited_by } => Joined::Member {
                member: self.member_of(&member)?,
                invited_by,
            },
            Redeemed::Linked(member) => Joined::Linked(self.member_of(&member)?),
            Redeemed::AlreadyTheirs(member) => Joined::AlreadyTheirs(self.member_of(&member)?),
            Redeemed::SwitchAsked(member) => {
                let existing = member.account_like(user).ok_or_else(|| {
                    StorageError::Corrupt(format!("member {} has no account to switch", member.id))
                })?;
                Joined::SwitchAsked {
                    member: self.member_of(&member)?,
                    existing,
                }
            }
        }))
    }

    /// The roster's member of a stored row (a member of the configuration has the file's
    /// values).
    fn member_of(&self, stored: &StoredMember) -> Result<FamilyMember, StorageError> {
        self.family
            .member(stored.id.as_str())
            .ok_or_else(|| StorageError::Corrupt(format!("member {} not readable", stored.id)))
    }

    /// `member` said yes from their account on `channel` to the account waiting on their
    /// `/link` code: it replaces that account. The member now, and the new account.
    pub async fn confirm_switch(
        &self,
        member: &FamilyMember,
        channel: &str,
        now_ms: i64,
    ) -> Result<Option<(FamilyMember, PlatformUser)>, StorageError> {
        let Some((stored, account)) = self
            .store
            .confirm_switch(&member.id, channel, now_ms)
            .await?
        else {
            return Ok(None);
        };
        self.changed().await?;
        Ok(Some((self.member_of(&stored)?, account)))
    }

    /// The member `target` names (id or name, any case) in the roster as read now.
    fn find(&self, target: &str) -> Result<FamilyMember, String> {
        let target = target.trim().trim_start_matches('@').to_lowercase();
        self.family
            .members()
            .into_iter()
            .find(|member| {
                member.id.as_str().to_lowercase() == target
                    || member.name.as_deref().map(str::to_lowercase) == Some(target.clone())
            })
            .ok_or_else(|| format!("No family member is called {target:?}; /family lists them."))
    }

    /// `by` (`None`: the command line) changes `target`, decided on the family as stored.
    async fn change(
        &self,
        by: Option<&FamilyMember>,
        target: &str,
        kind: MemberChangeKind,
        now_ms: i64,
    ) -> Result<Change<FamilyMember>, StorageError> {
        self.family.refresh().await?;
        let member = match self.find(target) {
            Ok(member) => member,
            Err(text) => return Ok(Change::Refused(text)),
        };
        let change = MemberChange {
            by: by.map(|by| by.id.clone()),
            target: member.id.clone(),
            kind,
            configured: self.family.configured_roles(),
            at_ms: now_ms,
        };
        let changed = self.store.change_member(&change).await?;
        if changed.is_ok() {
            if kind == MemberChangeKind::Remove {
                self.forget_in_memory(&member.id).await;
            }
            self.changed().await?;
        } else {
            self.family.reload().await?;
        }
        Ok(match changed {
            Ok(_) if kind == MemberChangeKind::Remove => Change::Done(member),
            Ok(stored) => match self.family.member(stored.id.as_str()) {
                Some(member) => Change::Done(member),
                None => {
                    Change::Refused(format!("{} is no longer in the family.", display(&member)))
                }
            },
            Err(refused) => Change::Refused(refusal(refused, Some(&member))),
        })
    }

    /// A removed member's own sources and places among conversations' readers, gone from
    /// family memory. The removal stands when this fails: it is logged, and what they
    /// kept stays readable by their id alone, which nobody in the family has.
    async fn forget_in_memory(&self, member: &MemberId) {
        match self.memory.remove_member(member).await {
            Ok(removed) => {
                tracing::info!(member = %member, removed, "a removed member's memory removed")
            }
            Err(error) => tracing::error!(
                member = %member,
                %error,
                "a removed member's private memory was not removed"
            ),
        }
    }

    /// `by` (`None`: the command line) gives `target` `role`.
    pub async fn set_role(
        &self,
        by: Option<&FamilyMember>,
        target: &str,
        role: FamilyRole,
        now_ms: i64,
    ) -> Result<Change<FamilyMember>, StorageError> {
        self.change(by, target, MemberChangeKind::SetRole(role), now_ms)
            .await
    }

    /// `by` (`None`: the command line) removes `target`: a stranger again from the next
    /// message, on every worker.
    pub async fn remove(
        &self,
        by: Option<&FamilyMember>,
        target: &str,
        now_ms: i64,
    ) -> Result<Change<FamilyMember>, StorageError> {
        self.change(by, target, MemberChangeKind::Remove, now_ms)
            .await
    }

    /// `member`'s own settings (checked by the caller): their time zone and preferred
    /// channel, those columns of their row only (a member of the configuration gets one
    /// for them); the member as the roster has them now.
    pub async fn save_settings(
        &self,
        member: &FamilyMember,
        timezone: Option<String>,
        preferred_channel: Option<String>,
        now_ms: i64,
    ) -> Result<FamilyMember, StorageError> {
        let new_row = StoredMember::new(
            member.id.clone(),
            member.name.clone(),
            member.role,
            None,
            now_ms,
        );
        self.store
            .save_settings(
                &member.id,
                timezone.as_deref(),
                preferred_channel.as_deref(),
                &new_row,
            )
            .await?;
        self.changed().await?;
        self.family
            .member(member.id.as_str())
            .ok_or_else(|| StorageError::Corrupt(format!("member {} not readable", member.id)))
    }

    /// The family as `/family` lists it.
    pub fn list(&self) -> String {
        family_list(&self.family)
    }
}

/// `ms` from now in words, rounded up: `12 minutes`, `3 hours`.
pub fn how_long(ms: i64) -> String {
    let minutes = (ms.max(0) as u64).div_ceil(60_000).max(1);
    match minutes {
        1 => "a minute".to_string(),
        2..=90 => format!("{minutes} minutes"),
        _ => format!("{} hours", minutes.div_ceil(60)),
    }
}

/// What a refusal of the stored family says; `target` is the member it was about (`None`:
/// the one asking).
fn refusal(refused: ChangeRefused, target: Option<&FamilyMember>) -> String {
    let named = target.map(display).unwrap_or_else(|| "They".to_string());
    match refused {
        ChangeRefused::NotAParent => "Only a parent can change the family.".into(),
        ChangeRefused::NoSuchMember if target.is_none() => {
            "You are no longer in the family.".into()
        }
        ChangeRefused::NoSuchMember => format!("{named} is no longer in the family."),
        ChangeRefused::Configured => {
            format!("{named} is in the configuration file: change them there.")
        }
        ChangeRefused::Yourself => "You cannot change your own place in the family.".into(),
        ChangeRefused::LastParent => {
            format!("{named} is the family's last parent: make someone else a parent first.")
        }
        ChangeRefused::HasParent => {
            "The family has a parent already: ask them for an invite code.".into()
        }
    }
}

/// The family as `/family` and `hearth family list` show it.
pub fn family_list(family: &Family) -> String {
    let mut lines = vec!["The family:".to_string()];
    for member in family.members() {
        let mut accounts = Vec::new();
        if let Some(id) = member.telegram_user_id {
            accounts.push(format!("Telegram {id}"));
        }
        if let Some(id) = &member.matrix_user_id {
            accounts.push(format!("Matrix {id}"));
        }
        let from_file = if family.is_configured(&member.id) {
            ", in the configuration file"
        } else {
            ""
        };
        lines.push(format!(
            "- {} ({}, {}{from_file}){}",
            display(&member),
            member.id,
            member.role.as_str(),
            if accounts.is_empty() {
                String::new()
            } else {
                format!(": {}", accounts.join(", "))
            }
        ));
    }
    if lines.len() == 1 {
        lines.push("nobody yet".to_string());
    }
    lines.join("\n")
}

const WRONG_CODE: &str = "That code is not valid: it may be mistyped, used already or expired. Ask a parent for a new one.";

/// A member as said in chat: their name, else their id.
pub fn display(member: &FamilyMember) -> String {
    member.name.clone().unwrap_or_else(|| member.id.to_string())
}
