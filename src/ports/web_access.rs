//! `WebAccess`: how a member proves who they are on HTTP: sign-in codes sent to their own
//! chat, the web page's sessions, one-time sign-in links (`hearth web-link`), and per-member
//! API tokens (`hearth token`).
//!
//! Every secret is stored only as its hash (`identity::secret_hash`): a database copy opens
//! no session and speaks as nobody. Using a code or a link is one atomic step (checked and
//! spent together), so a code works once and a wrong try always counts. None of these rows
//! is cached by any adapter: the command line may add a token or a link beside a running
//! hearth, and several workers may share them.

use async_trait::async_trait;

use super::StorageError;
use super::try_limits::{Limit, LockScope, Locked, first_lock};
use crate::ids::MemberId;

const HOUR_MS: i64 = 60 * 60 * 1000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Wrong sign-in codes allowed, counted in the database over every worker and every code:
/// for one member 5 an hour and 10 a day, from one client address the same, and 20 a day
/// from everyone. Past a limit no code is checked (the right one neither) until it lifts.
pub const SIGN_IN_LIMITS_PER_MEMBER: [Limit; 2] = [Limit::new(5, HOUR_MS), Limit::new(10, DAY_MS)];
pub const SIGN_IN_LIMITS_PER_ADDRESS: [Limit; 2] = [Limit::new(5, HOUR_MS), Limit::new(10, DAY_MS)];
pub const SIGN_IN_LIMITS_OVERALL: [Limit; 1] = [Limit::new(20, DAY_MS)];
/// How far back wrong sign-in codes count.
pub const SIGN_IN_FAILURES_KEPT_MS: i64 = DAY_MS;

/// A wrong sign-in code as counted: for whom, from which address, when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInFailure {
    pub member_id: MemberId,
    pub address: String,
    pub at_ms: i64,
}

/// Whether the wrong codes so far keep `address` from trying a code for `member_id` at
/// `now_ms`: the lock lasting longest of the member's, the address's and everyone's.
pub fn sign_in_locked(
    failures: &[SignInFailure],
    member_id: &MemberId,
    address: &str,
    now_ms: i64,
) -> Option<Locked> {
    let times = |keep: &dyn Fn(&SignInFailure) -> bool| -> Vec<i64> {
        failures
            .iter()
            .filter(|failure| keep(failure))
            .map(|failure| failure.at_ms)
            .collect()
    };
    first_lock(
        &[
            (
                LockScope::Member,
                times(&|failure| failure.member_id == *member_id),
                &SIGN_IN_LIMITS_PER_MEMBER,
            ),
            (
                LockScope::Source,
                times(&|failure| failure.address == address),
                &SIGN_IN_LIMITS_PER_ADDRESS,
            ),
            (
                LockScope::Everyone,
                times(&|_| true),
                &SIGN_IN_LIMITS_OVERALL,
            ),
        ],
        now_ms,
    )
}

/// A sign-in code typed on the page, to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInAttempt {
    pub member_id: MemberId,
    /// The code's hash with the member's id (`identity::code_hash`), never the code.
    pub code_hash: String,
    /// The client's address (read through the trusted proxies): the per-address limit.
    pub address: String,
    pub now_ms: i64,
    /// Wrong tries after which the one code locks.
    pub max_wrong: u32,
}

/// What a try did: the check, and the lock this wrong try started, if it started one
/// (the member is told once, at that try).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInTry {
    pub check: SignInCheck,
    pub locked_now: Option<Locked>,
}

/// A sign-in code sent to a member's own chat, to be typed on the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSignInCode {
    pub member_id: MemberId,
    /// The code's hash with the member's id (`identity::code_hash`), never the code.
    pub code_hash: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

/// What typing a sign-in code did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInCheck {
    /// The right code, in time: it is spent, and a session may open.
    Accepted,
    /// A wrong code; `tries_left` more wrong ones before the code locks.
    Wrong { tries_left: u32 },
    /// Too many wrong tries: the code no longer opens anything.
    Locked,
    /// The code's ten minutes (or what was configured) are over.
    Expired,
    /// No code was asked for this member (or it was used already).
    NoCode,
    /// Too many wrong codes (`sign_in_locked`): no code is checked until the lock lifts.
    Limited(Locked),
}

/// A session of the web page: who it speaks as, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    /// A public id, shown on the settings page to sign a session out; never the cookie.
    pub id: String,
    pub member_id: MemberId,
    /// Each form of this session carries it (`csrf` field); it is no secret of the cookie.
    pub csrf_token: String,
    /// How the member signed in: `telegram`, `matrix`, `link`.
    pub signed_in_with: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

/// A per-member API token: speaks only as its member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberToken {
    /// A public id (`hearth token list`, `hearth token revoke ID`).
    pub id: String,
    pub member_id: MemberId,
    /// What the member uses it for, as given at `hearth token create --label`.
    pub label: Option<String>,
    pub created_at_ms: i64,
}

#[async_trait]
pub trait WebAccess: Send + Sync {
    /// How many sign-in codes were made for `member_id` since `since_ms` (the page limits
    /// how often a code is sent to a member's chat).
    async fn sign_in_codes_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError>;
    /// Store a new code; the member's earlier code, if any, stops working.
    async fn put_sign_in_code(&self, code: &NewSignInCode) -> Result<(), StorageError>;
    /// Check the attempt's code against its member's open code, in one step with the
    /// counting: past a limit (`sign_in_locked`) nothing is checked (`Limited`); the right
    /// code is spent (`Accepted`, never twice); any other try is stored as a failure (the
    /// one code also locks at `max_wrong` wrong tries). Tries on several workers at once
    /// are counted one after the other, so no limit is passed by racing.
    async fn try_sign_in_code(&self, attempt: &SignInAttempt) -> Result<SignInTry, StorageError>;

    /// How many sign-in links were made for `member_id` since `since_ms` (the page limits
    /// how often one is sent to a member's chat).
    async fn sign_in_links_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError>;

    /// Store a one-time sign-in link's hash for `member_id`, valid until `expires_at_ms`.
    async fn put_sign_in_link(
        &self,
        link_hash: &str,
        member_id: &MemberId,
        created_at_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), StorageError>;
    /// Spend the link: its member the first time, in time; `None` after, or when unknown.
    async fn use_sign_in_link(
        &self,
        link_hash: &str,
        now_ms: i64,
    ) -> Result<Option<MemberId>, StorageError>;

    /// Store a session under its cookie's hash.
    async fn create_session(
        &self,
        cookie_hash: &str,
        session: &WebSession,
    ) -> Result<(), StorageError>;
    /// The session of a cookie, if it exists and has not expired at `now_ms`.
    async fn session(
        &self,
        cookie_hash: &str,
        now_ms: i64,
    ) -> Result<Option<WebSession>, StorageError>;
    /// A member's sessions not expired at `now_ms`, newest first.
    async fn sessions_of(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Vec<WebSession>, StorageError>;
    /// End `member_id`'s session `session_id`; whether there was one (another member's
    /// session is never ended this way).
    async fn end_session(
        &self,
        member_id: &MemberId,
        session_id: &str,
    ) -> Result<bool, StorageError>;
    /// End every session of `member_id` (a removed member's); how many ended.
    async fn end_sessions_of(&self, member_id: &MemberId) -> Result<u64, StorageError>;

    /// Store a token under its hash.
    async fn create_token(&self, token_hash: &str, token: &MemberToken)
    -> Result<(), StorageError>;
    /// The token a presented key is, if it exists and was not revoked.
    async fn token(&self, token_hash: &str) -> Result<Option<MemberToken>, StorageError>;
    /// Every token not revoked, oldest first.
    async fn tokens(&self) -> Result<Vec<MemberToken>, StorageError>;
    /// Revoke token `id`; whether there was one.
    async fn revoke_token(&self, id: &str) -> Result<bool, StorageError>;

    /// Remove codes, links and sessions that expired before `before_ms`, and wrong tries
    /// counting no more; how many went.
    async fn prune_expired(&self, before_ms: i64) -> Result<u64, StorageError>;
}
