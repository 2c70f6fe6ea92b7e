//! Changing the family from chat (and the CLI): invite codes for a new member (`/invite`)
//! or another account of a member (`/link`), redeeming one (`/join`), a role changed or a
//! member removed (`/family`). Each change is written to `ports::Members` first and the
//! roster replaced after (`Family::set_stored`), so what the database says is what hearth
//! answers by, at once and after a restart.
//!
//! Who may: only a parent invites, changes a role or removes a member, never themselves
//! and never the last parent; a member of the configuration is the file's to change. What
//! each refusal says is returned as `Refused(text)`, for the channel to say.

use std::sync::{Arc, Mutex};

use super::Family;
use super::invites::{self, CodeLimits};
use crate::config::FamilyMember;
use crate::ids::{FamilyRole, MemberId};
use crate::ports::{
    InvitePurpose, Members, NewInvite, PlatformUser, Redeem, RedeemRefused, Redeemed, StorageError,
    StoredMember,
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
    /// An existing member's account on another platform.
    Linked(FamilyMember),
}

pub struct Membership {
    family: Arc<Family>,
    store: Arc<dyn Members>,
    limits: Mutex<CodeLimits>,
    /// Strangers are told (once a day) to ask for an invite code.
    pub tell_strangers: bool,
    /// Until when a code adding a member may be used: a stranger's Matrix room invite is
    /// accepted only then.
    open_until_ms: Mutex<Option<i64>>,
}

impl Membership {
    pub fn new(family: Arc<Family>, store: Arc<dyn Members>, tell_strangers: bool) -> Self {
        Membership {
            family,
            store,
            limits: Mutex::new(CodeLimits::default()),
            tell_strangers,
            open_until_ms: Mutex::new(None),
        }
    }

    pub fn family(&self) -> &Arc<Family> {
        &self.family
    }

    /// Read the stored members into the roster, and whether codes are open.
    pub async fn load(&self, now_ms: i64) -> Result<(), StorageError> {
        let stored = self.store.stored_members().await?;
        self.family.set_stored(&stored);
        let open = self.store.open_invites_until(now_ms).await?;
        *self.open_until() = open;
        Ok(())
    }

    fn open_until(&self) -> std::sync::MutexGuard<'_, Option<i64>> {
        self.open_until_ms
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn limits(&self) -> std::sync::MutexGuard<'_, CodeLimits> {
        self.limits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a code adding a member may be used now.
    pub fn invites_open(&self, now_ms: i64) -> bool {
        self.open_until().is_some_and(|until| until > now_ms)
    }

    /// Whether stranger `user` is to be told how to join now (when on; once a day).
    pub fn tell_stranger(&self, user: &PlatformUser, now_ms: i64) -> bool {
        self.tell_strangers && self.limits().tell_stranger(&user_key(user), now_ms)
    }

    async fn issue(
        &self,
        purpose: InvitePurpose,
        created_by: Option<MemberId>,
        now_ms: i64,
    ) -> Result<Issued, MembershipError> {
        let code = invites::new_code()?;
        let plain = invites::read_code(&code).unwrap_or_default();
        let joins = matches!(purpose, InvitePurpose::Join { .. });
        let invite = NewInvite {
            code_hash: invites::code_hash(&plain),
            purpose,
            created_by,
            created_at_ms: now_ms,
            expires_at_ms: now_ms + CODE_VALID_MS,
        };
        self.store.create_invite(&invite).await?;
        if joins {
            let mut open = self.open_until();
            *open = Some(open.unwrap_or(0).max(invite.expires_at_ms));
        }
        Ok(Issued {
            code,
            expires_at_ms: invite.expires_at_ms,
        })
    }

    /// A code making the first person a parent (set-up: nobody is a member yet).
    pub async fn first_parent_code(&self, now_ms: i64) -> Result<Issued, MembershipError> {
        let purpose = InvitePurpose::Join {
            role: FamilyRole::Parent,
            name: None,
        };
        self.issue(purpose, None, now_ms).await
    }

    /// `by` invites someone as `role`, named `name` if given.
    pub async fn invite(
        &self,
        by: &FamilyMember,
        role: FamilyRole,
        name: Option<String>,
        now_ms: i64,
    ) -> Result<Change<Issued>, MembershipError> {
        if by.role != FamilyRole::Parent {
            return Ok(Change::Refused(
                "Only a parent can invite someone to the family.".into(),
            ));
        }
        let name = name
            .map(|name| name.trim().chars().take(MAX_NAME_CHARS).collect::<String>())
            .filter(|name| !name.is_empty());
        let purpose = InvitePurpose::Join { role, name };
        Ok(Change::Done(
            self.issue(purpose, Some(by.id.clone()), now_ms).await?,
        ))
    }

    /// A code that links another account to `member`.
    pub async fn link_code(
        &self,
        member: &FamilyMember,
        now_ms: i64,
    ) -> Result<Issued, MembershipError> {
        let purpose = InvitePurpose::Link {
            member: member.id.clone(),
            role: member.role,
            name: member.name.clone(),
        };
        self.issue(purpose, Some(member.id.clone()), now_ms).await
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
        let key = user_key(user);
        if !self.limits().may_try(&key, now_ms) {
            return Ok(Change::Refused(format!(
                "Too many wrong codes: try again in an hour (at most {} an hour).",
                invites::MAX_WRONG_CODES
            )));
        }
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
        let Some(code) = code else {
            self.limits().wrong_code(&key, now_ms);
            return Ok(Change::Refused(WRONG_CODE.into()));
        };
        let redeem = Redeem {
            code_hash: invites::code_hash(&code),
            user: user.clone(),
            reserved_ids: self.family.configured_ids(),
            name,
            at_ms: now_ms,
        };
        let redeemed = match self.store.redeem(&redeem).await? {
            Ok(redeemed) => redeemed,
            Err(RedeemRefused::NoSuchCode) => {
                self.limits().wrong_code(&key, now_ms);
                return Ok(Change::Refused(WRONG_CODE.into()));
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
        self.load(now_ms).await?;
        let member_of = |stored: &StoredMember| {
            self.family
                .member(stored.id.as_str())
                .ok_or_else(|| StorageError::Corrupt(format!("member {} not readable", stored.id)))
        };
        Ok(Change::Done(match redeemed {
            Redeemed::Joined { member, invited_by } => Joined::Member {
                member: member_of(&member)?,
                invited_by,
            },
            Redeemed::Linked(member) => Joined::Linked(member_of(&member)?),
        }))
    }

    /// The target of a change, or why not: `by` (`None`: whoever runs hearth, from its
    /// command line) must be a parent, `target` a member not in the configuration, other
    /// than `by`.
    fn changeable(&self, by: Option<&FamilyMember>, target: &str) -> Result<FamilyMember, String> {
        if by.is_some_and(|by| by.role != FamilyRole::Parent) {
            return Err("Only a parent can change the family.".into());
        }
        let target = target.trim().trim_start_matches('@').to_lowercase();
        let Some(member) = self.family.members().into_iter().find(|member| {
            member.id.as_str().to_lowercase() == target
                || member.name.as_deref().map(str::to_lowercase) == Some(target.clone())
        }) else {
            return Err(format!(
                "No family member is called {target:?}; /family lists them."
            ));
        };
        if by.is_some_and(|by| member.id == by.id) {
            return Err("You cannot change your own place in the family.".into());
        }
        if self.family.is_configured(&member.id) {
            return Err(format!(
                "{} is in the configuration file: change them there.",
                display(&member)
            ));
        }
        Ok(member)
    }

    /// Why `member` may not stop being a parent: they are the last one.
    fn last_parent(&self, member: &FamilyMember) -> Option<String> {
        let others = self
            .family
            .members()
            .into_iter()
            .filter(|other| other.role == FamilyRole::Parent && other.id != member.id)
            .count();
        (member.role == FamilyRole::Parent && others == 0).then(|| {
            format!(
                "{} is the family's last parent: make someone else a parent first.",
                display(member)
            )
        })
    }

    /// `member`'s own settings (checked by the caller): their time zone and preferred
    /// channel, kept in their row (a member of the configuration gets one for them); the
    /// member as the roster has them now.
    pub async fn save_settings(
        &self,
        member: &FamilyMember,
        timezone: Option<String>,
        preferred_channel: Option<String>,
        now_ms: i64,
    ) -> Result<FamilyMember, StorageError> {
        let stored = self.store.stored_members().await?;
        let mut row = stored
            .into_iter()
            .find(|row| row.id == member.id)
            .unwrap_or_else(|| {
                StoredMember::new(
                    member.id.clone(),
                    member.name.clone(),
                    member.role,
                    None,
                    now_ms,
                )
            });
        row.timezone = timezone;
        row.preferred_channel = preferred_channel;
        self.store.save_member(&row).await?;
        self.load(now_ms).await?;
        self.family
            .member(member.id.as_str())
            .ok_or_else(|| StorageError::Corrupt(format!("member {} not readable", member.id)))
    }

    /// The preferred channel each member chose, for `OwnChats` at start.
    pub async fn preferred_channels(&self) -> Result<Vec<(MemberId, String)>, StorageError> {
        Ok(self
            .store
            .stored_members()
            .await?
            .into_iter()
            .filter_map(|row| Some((row.id, row.preferred_channel?)))
            .collect())
    }

    /// `by` (`None`: the command line) gives `target` `role`.
    pub async fn set_role(
        &self,
        by: Option<&FamilyMember>,
        target: &str,
        role: FamilyRole,
        now_ms: i64,
    ) -> Result<Change<FamilyMember>, StorageError> {
        let member = match self.changeable(by, target) {
            Ok(member) => member,
            Err(text) => return Ok(Change::Refused(text)),
        };
        if role == FamilyRole::Child
            && let Some(text) = self.last_parent(&member)
        {
            return Ok(Change::Refused(text));
        }
        let Some(mut stored) = self
            .store
            .stored_members()
            .await?
            .into_iter()
            .find(|stored| stored.id == member.id)
        else {
            return Ok(Change::Refused(format!(
                "{} is no longer in the family.",
                display(&member)
            )));
        };
        stored.role = role;
        self.store.save_member(&stored).await?;
        self.load(now_ms).await?;
        Ok(match self.family.member(member.id.as_str()) {
            Some(member) => Change::Done(member),
            None => Change::Refused(format!("{} is no longer in the family.", display(&member))),
        })
    }

    /// `by` (`None`: the command line) removes `target`: a stranger again from the next
    /// message.
    pub async fn remove(
        &self,
        by: Option<&FamilyMember>,
        target: &str,
        now_ms: i64,
    ) -> Result<Change<FamilyMember>, StorageError> {
        let member = match self.changeable(by, target) {
            Ok(member) => member,
            Err(text) => return Ok(Change::Refused(text)),
        };
        if let Some(text) = self.last_parent(&member) {
            return Ok(Change::Refused(text));
        }
        self.store.remove_member(&member.id).await?;
        self.load(now_ms).await?;
        Ok(Change::Done(member))
    }

    /// The family as `/family` lists it.
    pub fn list(&self) -> String {
        family_list(&self.family)
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

/// How the limits name a platform user.
fn user_key(user: &PlatformUser) -> String {
    match user {
        PlatformUser::Telegram(id) => format!("telegram:{id}"),
        PlatformUser::Matrix(id) => format!("matrix:{id}"),
        PlatformUser::WebVisitor(address) => format!("web:{address}"),
    }
}

/// A member as said in chat: their name, else their id.
pub fn display(member: &FamilyMember) -> String {
    member.name.clone().unwrap_or_else(|| member.id.to_string())
}
