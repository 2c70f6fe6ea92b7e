//! `Members`: the family members who joined by invite, and the links and roles changed in
//! chat, kept in the database beside the `family:` of the configuration (which wins where
//! both name a member, `family::Family` merges them); and the invite codes that add them.
//!
//! A code is stored only as its hash (`family::invites`), so neither the database nor a log
//! holds one that could be used. Redeeming it is one atomic step: the code is checked
//! (known, unused, unexpired) and marked used, and the member added or linked, together, so
//! a crash never leaves a used code without its member, nor a member with a code to use
//! again.
//!
//! The database is the one truth for who may do what, on every worker: every change moves
//! the family's version in its own transaction (`family_version`), which a worker reads
//! before it authorises a request, reading the members again when it moved. A change is
//! decided on the family as stored, in the transaction that makes it (`check_change`,
//! `check_invite`): who asks must be a parent as stored, and the family keeps a parent
//! however many change it at once. A write changes only the columns it is about (an
//! account, a role, the settings), never a whole row.

use async_trait::async_trait;

use super::StorageError;
use super::try_limits::{Limit, LockScope, Locked, first_lock};
use crate::ids::{FamilyRole, MemberId};

/// A member as the database keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMember {
    pub id: MemberId,
    pub name: Option<String>,
    pub role: FamilyRole,
    pub telegram_user_id: Option<i64>,
    pub matrix_user_id: Option<String>,
    /// Who invited them; `None` for the first parent of set-up.
    pub added_by: Option<MemberId>,
    pub added_at_ms: i64,
    /// Their own choice on the web page: their IANA time zone (over the configuration's).
    pub timezone: Option<String>,
    /// Their own choice on the web page: the channel (`telegram`, `matrix`) whose own chat
    /// hearth prefers for what goes to their own chat.
    pub preferred_channel: Option<String>,
}

impl StoredMember {
    /// A new row: `id` with `name` and `role`, added by `added_by` at `at_ms`, with no
    /// account yet (`with_account` gives one).
    pub fn new(
        id: MemberId,
        name: Option<String>,
        role: FamilyRole,
        added_by: Option<MemberId>,
        at_ms: i64,
    ) -> StoredMember {
        StoredMember {
            id,
            name,
            role,
            telegram_user_id: None,
            matrix_user_id: None,
            added_by,
            added_at_ms: at_ms,
            timezone: None,
            preferred_channel: None,
        }
    }

    /// This member with `user` as their account on its platform (a visitor of the web
    /// page has none: the member is as before).
    pub fn with_account(mut self, user: &PlatformUser) -> StoredMember {
        match user {
            PlatformUser::Telegram(id) => self.telegram_user_id = Some(*id),
            PlatformUser::Matrix(id) => self.matrix_user_id = Some(id.clone()),
            PlatformUser::WebVisitor(_) => {}
        }
        self
    }

    /// This member's account on `user`'s platform, if they have one there.
    pub fn account_like(&self, user: &PlatformUser) -> Option<PlatformUser> {
        match user {
            PlatformUser::Telegram(_) => self.telegram_user_id.map(PlatformUser::Telegram),
            PlatformUser::Matrix(_) => self.matrix_user_id.clone().map(PlatformUser::Matrix),
            PlatformUser::WebVisitor(_) => None,
        }
    }

    /// Whether `user` is this member's account.
    pub fn has_account(&self, user: &PlatformUser) -> bool {
        match user {
            PlatformUser::Telegram(id) => self.telegram_user_id == Some(*id),
            PlatformUser::Matrix(id) => self.matrix_user_id.as_deref() == Some(id.as_str()),
            PlatformUser::WebVisitor(_) => false,
        }
    }
}

/// Someone as a chat platform names them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PlatformUser {
    Telegram(i64),
    Matrix(String),
    /// Someone entering a code on the web page, known by the address they came from (for
    /// the wrong-code limit only): no account, so a code joins them without one, and a
    /// `/link` code signs them in as its member.
    WebVisitor(String),
}

impl PlatformUser {
    pub fn channel(&self) -> &'static str {
        match self {
            PlatformUser::Telegram(_) => "telegram",
            PlatformUser::Matrix(_) => "matrix",
            PlatformUser::WebVisitor(_) => "the web page",
        }
    }

    /// As the database keeps it (`telegram:<id>`, `matrix:<id>`, `web:<address>`): the
    /// account waiting on a `/link` code, and who tried a wrong code.
    pub fn key(&self) -> String {
        match self {
            PlatformUser::Telegram(id) => format!("telegram:{id}"),
            PlatformUser::Matrix(id) => format!("matrix:{id}"),
            PlatformUser::WebVisitor(address) => format!("web:{address}"),
        }
    }

    /// The one reader of `key`'s form.
    pub fn from_key(key: &str) -> Option<PlatformUser> {
        match key.split_once(':')? {
            ("telegram", id) => id.parse().ok().map(PlatformUser::Telegram),
            ("matrix", id) if !id.is_empty() => Some(PlatformUser::Matrix(id.to_string())),
            ("web", address) => Some(PlatformUser::WebVisitor(address.to_string())),
            _ => None,
        }
    }

    /// The account as said to a member: `Telegram 1001`, `Matrix @max:example.org`.
    pub fn describe(&self) -> String {
        match self {
            PlatformUser::Telegram(id) => format!("Telegram {id}"),
            PlatformUser::Matrix(id) => format!("Matrix {id}"),
            PlatformUser::WebVisitor(_) => "the web page".to_string(),
        }
    }
}

/// What a code does when redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvitePurpose {
    /// A new member with this role (and name, if the inviter gave one).
    Join {
        role: FamilyRole,
        name: Option<String>,
    },
    /// Another platform of an existing member (`/link`): their role and name are kept as
    /// they are when the code is used, here only as the row a member of the configuration
    /// gets (the configuration's values win over it).
    Link {
        member: MemberId,
        role: FamilyRole,
        name: Option<String>,
    },
}

/// An invite code to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInvite {
    /// The code's hash (`family::invites::code_hash`), never the code.
    pub code_hash: String,
    pub purpose: InvitePurpose,
    /// Who asked for it; `None` for set-up's first parent.
    pub created_by: Option<MemberId>,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

/// The configuration's members with their roles: a role there is the file's, whatever a
/// stored row says, and their ids are never given to a new member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfiguredMembers(pub Vec<(MemberId, FamilyRole)>);

impl ConfiguredMembers {
    /// `member`'s role, when the configuration names them.
    pub fn role_of(&self, member: &MemberId) -> Option<FamilyRole> {
        self.0
            .iter()
            .find(|(id, _)| id == member)
            .map(|(_, role)| *role)
    }

    pub fn ids(&self) -> Vec<MemberId> {
        self.0.iter().map(|(id, _)| id.clone()).collect()
    }

    /// `member`'s role as the family has it: the configuration's, else their stored
    /// row's; `None` for someone who is neither.
    pub fn role_in(&self, stored: &[StoredMember], member: &MemberId) -> Option<FamilyRole> {
        self.role_of(member).or_else(|| {
            stored
                .iter()
                .find(|row| row.id == *member)
                .map(|row| row.role)
        })
    }

    /// The family's parents: the configuration's, and the stored members it does not name
    /// whose stored role is parent.
    pub fn parents_in(&self, stored: &[StoredMember]) -> Vec<MemberId> {
        let mut parents: Vec<MemberId> = self
            .0
            .iter()
            .filter(|(_, role)| *role == FamilyRole::Parent)
            .map(|(id, _)| id.clone())
            .collect();
        parents.extend(
            stored
                .iter()
                .filter(|row| row.role == FamilyRole::Parent && self.role_of(&row.id).is_none())
                .map(|row| row.id.clone()),
        );
        parents
    }
}

/// A code redeemed by `user`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redeem {
    pub code_hash: String,
    pub user: PlatformUser,
    /// The configuration's members: ids a new member may not get, and parents set-up's
    /// first code yields to.
    pub configured: ConfiguredMembers,
    /// The name to give a new member when the invite named none.
    pub name: Option<String>,
    pub at_ms: i64,
    /// Who is trying (a chat account, a web page's client address), for the wrong-code
    /// limits (`JOIN_LIMITS`).
    pub source: String,
}

/// Wrong invite codes allowed per sender (`Redeem::source`) and overall, counted in the
/// database over every worker: 5 an hour and 10 a day from one account or address, 100 a
/// day from everyone.
pub const JOIN_LIMITS_PER_SOURCE: [Limit; 2] = [Limit::new(5, HOUR_MS), Limit::new(10, DAY_MS)];
pub const JOIN_LIMITS_OVERALL: [Limit; 1] = [Limit::new(100, DAY_MS)];
const HOUR_MS: i64 = 60 * 60 * 1000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Whether the wrong codes so far (`(source, at_ms)`) keep `source` from trying at
/// `now_ms`.
pub fn join_locked(failures: &[(String, i64)], source: &str, now_ms: i64) -> Option<Locked> {
    let from_source = failures
        .iter()
        .filter(|(from, _)| from == source)
        .map(|(_, at)| *at)
        .collect();
    let all = failures.iter().map(|(_, at)| *at).collect();
    first_lock(
        &[
            (LockScope::Source, from_source, &JOIN_LIMITS_PER_SOURCE),
            (LockScope::Everyone, all, &JOIN_LIMITS_OVERALL),
        ],
        now_ms,
    )
}

/// How far back wrong invite codes count.
pub const JOIN_FAILURES_KEPT_MS: i64 = DAY_MS;

/// The ids a new member called `name` with account `user` may get, best first (the first
/// no stored member has is taken): from their name, else their account, with `-2`...`-9`
/// after either; none of `reserved`.
pub fn member_id_choices(
    name: Option<&str>,
    user: &PlatformUser,
    reserved: &[MemberId],
) -> Vec<MemberId> {
    let from_name: String = name
        .unwrap_or_default()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() => Some(c.to_lowercase().next().unwrap_or(c)),
            ' ' | '-' | '_' | '.' => Some('-'),
            _ => None,
        })
        .collect::<String>()
        .trim_matches('-')
        .to_string();
    let from_account = match user {
        PlatformUser::WebVisitor(_) => "member".to_string(),
        PlatformUser::Telegram(id) => format!("telegram-{id}"),
        PlatformUser::Matrix(id) => id
            .trim_start_matches('@')
            .split(':')
            .next()
            .unwrap_or_default()
            .to_lowercase(),
    };
    let mut choices = Vec::new();
    for base in [from_name, from_account] {
        if base.is_empty() {
            continue;
        }
        choices.push(base.clone());
        choices.extend((2..10).map(|n| format!("{base}-{n}")));
    }
    choices
        .into_iter()
        .filter_map(|id| id.parse::<MemberId>().ok())
        .filter(|id| !reserved.contains(id))
        .collect()
}

/// What a redeemed code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// A new member, as stored; `invited_by` asked for the code.
    Joined {
        member: StoredMember,
        invited_by: Option<MemberId>,
    },
    /// `member` (as stored) is now also this platform user: an account on a platform they
    /// had none on, or the web page's visitor signed in as them.
    Linked(StoredMember),
    /// The account is `member`'s already; nothing changed (the code is spent).
    AlreadyTheirs(StoredMember),
    /// `member` has another account on this platform: the code waits for their yes from
    /// it (`Members::confirm_switch`) before this one replaces it; nothing changed yet.
    SwitchAsked(StoredMember),
}

/// Why a code did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RedeemRefused {
    /// Unknown, used or expired: one answer for all three, so a guess learns nothing.
    #[error("no such code, or it was used or has expired")]
    NoSuchCode,
    /// The platform user is a stored member already.
    #[error("this account belongs to a family member already")]
    AlreadyMember,
    /// None of the ids `member_id_choices` gives was free.
    #[error("no free member id for the new member")]
    NoFreeId,
    /// Too many wrong codes: no code is tried until then.
    #[error("too many wrong codes ({}): no code is tried until {}", .0.scope.as_str(), .0.until_ms)]
    Limited(Locked),
}

/// A change of a stored member, decided on the family as stored, in the change's own
/// transaction: who asks must be a parent as stored (or in the configuration), the
/// target a stored member the configuration does not name, other than who asks, and the
/// family keeps a parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberChange {
    /// Who asks; `None`: whoever runs hearth, from its command line.
    pub by: Option<MemberId>,
    pub target: MemberId,
    pub kind: MemberChangeKind,
    pub configured: ConfiguredMembers,
    pub at_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChangeKind {
    /// The target's role becomes this; a parent made a child loses their unused codes
    /// inviting a parent.
    SetRole(FamilyRole),
    /// The target leaves the family, with their unused codes and what proves them on
    /// HTTP (sessions, sign-in links and codes gone, tokens revoked).
    Remove,
}

/// Why a change of the family (a member changed, a code made) did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChangeRefused {
    #[error("only a parent may change the family")]
    NotAParent,
    #[error("no such stored member")]
    NoSuchMember,
    #[error("the configuration names this member")]
    Configured,
    #[error("nobody changes their own place in the family")]
    Yourself,
    #[error("the family's last parent")]
    LastParent,
    /// Set-up's code for the first parent, once the family has one.
    #[error("the family has a parent already")]
    HasParent,
}

/// The stored family at one moment: its version, its stored members, and until when a
/// code adding a member is open (the latest expiry of the unused ones, passed or not: the
/// reader compares it with its now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFamily {
    pub version: i64,
    pub members: Vec<StoredMember>,
    pub open_until_ms: Option<i64>,
}

#[async_trait]
pub trait Members: Send + Sync {
    /// The family's version: it moves with every change below (a member added, linked,
    /// changed or removed, a code adding a member made or spent), in the change's own
    /// transaction; 0 before the first.
    async fn family_version(&self) -> Result<i64, StorageError>;

    /// The stored family now, its version and what it numbers read together (one snapshot),
    /// so members are never kept under a version newer than theirs.
    async fn stored_family(&self) -> Result<StoredFamily, StorageError>;

    /// Every stored member, by id.
    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError>;

    /// Store `invite` (its hash must be new) when its maker may: a code adding a member
    /// only by a parent as stored (or the configuration's), set-up's first code only while
    /// the family has no parent; a `/link` code only for a member.
    async fn create_invite(
        &self,
        invite: &NewInvite,
        configured: &ConfiguredMembers,
    ) -> Result<Result<(), ChangeRefused>, StorageError>;

    /// The latest expiry of the unused codes that add a member, if any (a Matrix room
    /// invite from a stranger is only accepted while one is open).
    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError>;

    /// Redeem a code (see the module doc: one atomic step). A wrong one is counted for
    /// `redeem.source` and overall (`join_locked`); past the limits no code is tried.
    /// Set-up's first code adds a parent only while the family has none, and is spent
    /// for good once it has one.
    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError>;

    /// `member` said yes, from their account on `channel`, to the account waiting on their
    /// `/link` code (`Redeemed::SwitchAsked`): it replaces that account, and the code is
    /// spent. The member as stored, and the account now theirs; `None` when no code waits
    /// (used, expired, or the account joined someone else meanwhile).
    async fn confirm_switch(
        &self,
        member: &MemberId,
        channel: &str,
        at_ms: i64,
    ) -> Result<Option<(StoredMember, PlatformUser)>, StorageError>;

    /// `member`'s own settings (their time zone and preferred channel), and only them:
    /// `new_row` is the row made when they have none yet (a member of the configuration).
    async fn save_settings(
        &self,
        member: &MemberId,
        timezone: Option<&str>,
        preferred_channel: Option<&str>,
        new_row: &StoredMember,
    ) -> Result<(), StorageError>;

    /// Change a member (see `MemberChange`), deciding on the family as stored in the
    /// same transaction as the change: two parents demoting each other at once never
    /// leave the family without one. The member as stored after it.
    async fn change_member(
        &self,
        change: &MemberChange,
    ) -> Result<Result<StoredMember, ChangeRefused>, StorageError>;
}

/// Whether `change` may be made on the family as stored (`stored`); the target's row.
/// The one place of these rules for every adapter.
pub fn check_change(
    change: &MemberChange,
    stored: &[StoredMember],
) -> Result<StoredMember, ChangeRefused> {
    let configured = &change.configured;
    if let Some(by) = &change.by {
        match configured.role_in(stored, by) {
            Some(FamilyRole::Parent) => {}
            Some(FamilyRole::Child) => return Err(ChangeRefused::NotAParent),
            None => return Err(ChangeRefused::NoSuchMember),
        }
        if *by == change.target {
            return Err(ChangeRefused::Yourself);
        }
    }
    if configured.role_of(&change.target).is_some() {
        return Err(ChangeRefused::Configured);
    }
    let Some(target) = stored.iter().find(|row| row.id == change.target) else {
        return Err(ChangeRefused::NoSuchMember);
    };
    let stays_parent = change.kind == MemberChangeKind::SetRole(FamilyRole::Parent);
    let parents = configured.parents_in(stored);
    if target.role == FamilyRole::Parent
        && !stays_parent
        && !parents.iter().any(|parent| *parent != target.id)
    {
        return Err(ChangeRefused::LastParent);
    }
    let mut changed = target.clone();
    if let MemberChangeKind::SetRole(role) = change.kind {
        changed.role = role;
    }
    Ok(changed)
}

/// Whether `invite` may be made on the family as stored (`stored`).
pub fn check_invite(
    invite: &NewInvite,
    configured: &ConfiguredMembers,
    stored: &[StoredMember],
) -> Result<(), ChangeRefused> {
    match (&invite.purpose, &invite.created_by) {
        (InvitePurpose::Join { .. }, None) => {
            if configured.parents_in(stored).is_empty() {
                Ok(())
            } else {
                Err(ChangeRefused::HasParent)
            }
        }
        (InvitePurpose::Join { .. }, Some(by)) => match configured.role_in(stored, by) {
            Some(FamilyRole::Parent) => Ok(()),
            Some(FamilyRole::Child) => Err(ChangeRefused::NotAParent),
            None => Err(ChangeRefused::NoSuchMember),
        },
        (InvitePurpose::Link { member, .. }, _) => match configured.role_in(stored, member) {
            Some(_) => Ok(()),
            None => Err(ChangeRefused::NoSuchMember),
        },
    }
}
