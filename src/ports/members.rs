//! `Members`: the family members who joined by invite, and the links and roles changed in
//! chat, kept in the database beside the `family:` of the configuration (which wins where
//! both name a member, `family::Family` merges them); and the invite codes that add them.
//!
//! A code is stored only as its hash (`family::invites`), so neither the database nor a log
//! holds one that could be used. Redeeming it is one atomic step: the code is checked
//! (known, unused, unexpired) and marked used, and the member added or linked, together, so
//! a crash never leaves a used code without its member, nor a member with a code to use
//! again.

use async_trait::async_trait;

use super::StorageError;
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

/// A code redeemed by `user`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redeem {
    pub code_hash: String,
    pub user: PlatformUser,
    /// Ids a new member may not get (the configuration's members').
    pub reserved_ids: Vec<MemberId>,
    /// The name to give a new member when the invite named none.
    pub name: Option<String>,
    pub at_ms: i64,
}

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
    /// `member` (as stored) is now also this platform user.
    Linked(StoredMember),
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
}

#[async_trait]
pub trait Members: Send + Sync {
    /// Every stored member, by id.
    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError>;

    /// Store `invite`; its hash must be new.
    async fn create_invite(&self, invite: &NewInvite) -> Result<(), StorageError>;

    /// The latest expiry of the unused codes that add a member, if any (a Matrix room
    /// invite from a stranger is only accepted while one is open).
    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError>;

    /// Redeem a code (see the module doc: one atomic step).
    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError>;

    /// Add or replace `member`'s row.
    async fn save_member(&self, member: &StoredMember) -> Result<(), StorageError>;

    /// Remove `member`'s row and the unused codes they asked for, and end what proves them
    /// on HTTP (`WebAccess`: sessions, sign-in links and codes gone, tokens revoked), in one
    /// step; whether there was a row.
    async fn remove_member(&self, member: &MemberId) -> Result<bool, StorageError>;
}
