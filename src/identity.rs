//! Who a request on HTTP speaks as, proven by the member themselves: a six-digit sign-in
//! code sent to their own chat and typed on the page, a one-time sign-in link printed by
//! `hearth web-link`, a session's cookie, or a per-member API token (`hearth token`).
//!
//! The rules live here, the rows in `ports::WebAccess`: a code lasts ten minutes and locks
//! after five wrong tries; wrong codes are counted in the database, for every worker, per
//! member across codes, per client address and overall (`ports::SIGN_IN_LIMITS_*`: 5 an
//! hour and 10 a day for a member or an address, 20 a day from everyone), and past a limit
//! no code is checked until it lifts; at most three codes and three links an hour are sent
//! to one member (so a stranger cannot flood a member's chat). A one-time link sent to the
//! member's own chat is the way in no guessing can block. A session lasts
//! `http.session_days`; every secret is kept only as its SHA-256.

use std::sync::Arc;

use crate::ids::MemberId;
use crate::ports::{
    Locked, MemberToken, NewSignInCode, SignInAttempt, SignInCheck, StorageError, WebAccess,
    WebSession,
};
use crate::secrets::{self, NoRandomness};

pub const SIGN_IN_CODE_DIGITS: usize = 6;
pub const SIGN_IN_CODE_VALID_MS: i64 = 10 * 60 * 1000;
pub const MAX_WRONG_SIGN_IN_CODES: u32 = 5;
pub const SIGN_IN_CODES_PER_HOUR: u32 = 3;
/// Sign-in links sent to one member's chat from the page in an hour.
pub const SIGN_IN_LINKS_PER_HOUR: u32 = 3;
const HOUR_MS: i64 = 60 * 60 * 1000;
/// How long a link of `hearth web-link` opens a session.
pub const SIGN_IN_LINK_VALID_MS: i64 = 24 * HOUR_MS;
/// What a member token starts with, so one is known for what it is wherever it turns up.
pub const TOKEN_PREFIX: &str = "hearth_token_";
const SESSION_PREFIX: &str = "hearth_session_";
const LINK_PREFIX: &str = "hearth_link_";
/// The longest label of a token.
pub const MAX_TOKEN_LABEL_CHARS: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    NoRandomness(#[from] NoRandomness),
}

/// A sign-in code asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskedCode {
    /// Send this code to the member's own chat; it is not kept.
    Issued { code: String, expires_at_ms: i64 },
    /// Enough codes went to this member this hour.
    TooMany,
}

/// A session just opened: the cookie to set (shown once, kept only as its hash).
pub struct OpenedSession {
    pub cookie: String,
    pub session: WebSession,
}

impl std::fmt::Debug for OpenedSession {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OpenedSession")
            .field("session", &self.session.id)
            .finish_non_exhaustive()
    }
}

/// What a sign-in code typed on the page did.
#[derive(Debug)]
pub enum CodeSignIn {
    Opened(OpenedSession),
    /// Nothing opened; `locked_now`: this try started a lock (the member is told).
    Refused {
        check: SignInCheck,
        locked_now: Option<Locked>,
    },
}

/// The identity rules over the `WebAccess` rows.
#[derive(Clone)]
pub struct Identity {
    access: Arc<dyn WebAccess>,
    session_ms: i64,
}

/// What the database keeps of a sign-in code: bound to its member, so one member's code
/// never signs another in.
fn code_hash(member_id: &MemberId, code: &str) -> String {
    secrets::sha256_hex(format!("{member_id}:{code}").as_bytes())
}

impl Identity {
    pub fn new(access: Arc<dyn WebAccess>, session_days: u32) -> Self {
        Identity {
            access,
            session_ms: i64::from(session_days) * 24 * HOUR_MS,
        }
    }

    /// A new sign-in code for `member_id`, unless enough were sent this hour.
    pub async fn ask_sign_in_code(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<AskedCode, IdentityError> {
        let recent = self
            .access
            .sign_in_codes_since(member_id, now_ms - HOUR_MS)
            .await?;
        if recent >= SIGN_IN_CODES_PER_HOUR {
            return Ok(AskedCode::TooMany);
        }
        let code = secrets::random_text::<SIGN_IN_CODE_DIGITS>(b"0123456789")?;
        let expires_at_ms = now_ms + SIGN_IN_CODE_VALID_MS;
        self.access
            .put_sign_in_code(&NewSignInCode {
                member_id: member_id.clone(),
                code_hash: code_hash(member_id, &code),
                created_at_ms: now_ms,
                expires_at_ms,
            })
            .await?;
        Ok(AskedCode::Issued {
            code,
            expires_at_ms,
        })
    }

    /// `typed` as `member_id`'s sign-in code (spaces ignored), from client `address`; a
    /// session when it is right and no limit holds.
    pub async fn sign_in_with_code(
        &self,
        member_id: &MemberId,
        typed: &str,
        signed_in_with: &str,
        address: &str,
        now_ms: i64,
    ) -> Result<CodeSignIn, IdentityError> {
        let code: String = typed.chars().filter(|c| !c.is_whitespace()).collect();
        let tried = self
            .access
            .try_sign_in_code(&SignInAttempt {
                member_id: member_id.clone(),
                code_hash: code_hash(member_id, &code),
                address: address.to_string(),
                now_ms,
                max_wrong: MAX_WRONG_SIGN_IN_CODES,
            })
            .await?;
        if tried.check != SignInCheck::Accepted {
            return Ok(CodeSignIn::Refused {
                check: tried.check,
                locked_now: tried.locked_now,
            });
        }
        Ok(CodeSignIn::Opened(
            self.open_session(member_id, signed_in_with, now_ms).await?,
        ))
    }

    /// Whether another link may be sent to `member_id`'s chat from the page this hour.
    pub async fn may_send_link(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<bool, IdentityError> {
        let recent = self
            .access
            .sign_in_links_since(member_id, now_ms - HOUR_MS)
            .await?;
        Ok(recent < SIGN_IN_LINKS_PER_HOUR)
    }

    /// A one-time link's secret for `member_id` (the page's `/sign-in/link/<secret>`).
    pub async fn new_sign_in_link(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<String, IdentityError> {
        let secret = secrets::random_key(LINK_PREFIX)?;
        self.access
            .put_sign_in_link(
                &secrets::sha256_hex(secret.as_bytes()),
                member_id,
                now_ms,
                now_ms + SIGN_IN_LINK_VALID_MS,
            )
            .await?;
        Ok(secret)
    }

    /// A session for the member of link `secret`, the first time it is used in time.
    pub async fn sign_in_with_link(
        &self,
        secret: &str,
        now_ms: i64,
    ) -> Result<Option<OpenedSession>, IdentityError> {
        let Some(member_id) = self
            .access
            .use_sign_in_link(&secrets::sha256_hex(secret.as_bytes()), now_ms)
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(self.open_session(&member_id, "link", now_ms).await?))
    }

    /// A session for `member_id`, who proved who they are some other way (an invite or
    /// `/link` code entered on the page, checked by `family::Membership`).
    pub async fn open_session(
        &self,
        member_id: &MemberId,
        signed_in_with: &str,
        now_ms: i64,
    ) -> Result<OpenedSession, IdentityError> {
        let cookie = secrets::random_key(SESSION_PREFIX)?;
        let session = WebSession {
            id: secrets::random_text::<12>(b"abcdefghijkmnpqrstuvwxyz23456789")?,
            member_id: member_id.clone(),
            csrf_token: secrets::random_key("")?,
            signed_in_with: signed_in_with.to_string(),
            created_at_ms: now_ms,
            expires_at_ms: now_ms + self.session_ms,
        };
        self.access
            .create_session(&secrets::sha256_hex(cookie.as_bytes()), &session)
            .await?;
        Ok(OpenedSession { cookie, session })
    }

    /// The session a cookie opens now, if any.
    pub async fn session(
        &self,
        cookie: &str,
        now_ms: i64,
    ) -> Result<Option<WebSession>, IdentityError> {
        Ok(self
            .access
            .session(&secrets::sha256_hex(cookie.as_bytes()), now_ms)
            .await?)
    }

    pub async fn sessions_of(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Vec<WebSession>, IdentityError> {
        Ok(self.access.sessions_of(member_id, now_ms).await?)
    }

    pub async fn end_session(
        &self,
        member_id: &MemberId,
        session_id: &str,
    ) -> Result<bool, IdentityError> {
        Ok(self.access.end_session(member_id, session_id).await?)
    }

    /// A new token for `member_id`: the key to show once, and what is kept.
    pub async fn create_token(
        &self,
        member_id: &MemberId,
        label: Option<String>,
        now_ms: i64,
    ) -> Result<(String, MemberToken), IdentityError> {
        let key = secrets::random_key(TOKEN_PREFIX)?;
        let token = MemberToken {
            id: secrets::random_text::<10>(b"abcdefghijkmnpqrstuvwxyz23456789")?,
            member_id: member_id.clone(),
            label,
            created_at_ms: now_ms,
        };
        self.access
            .create_token(&secrets::sha256_hex(key.as_bytes()), &token)
            .await?;
        Ok((key, token))
    }

    /// The member token `presented` is, if it is one and not revoked.
    pub async fn token(&self, presented: &str) -> Result<Option<MemberToken>, IdentityError> {
        if !presented.starts_with(TOKEN_PREFIX) {
            return Ok(None);
        }
        Ok(self
            .access
            .token(&secrets::sha256_hex(presented.as_bytes()))
            .await?)
    }

    pub async fn tokens(&self) -> Result<Vec<MemberToken>, IdentityError> {
        Ok(self.access.tokens().await?)
    }

    pub async fn revoke_token(&self, id: &str) -> Result<bool, IdentityError> {
        Ok(self.access.revoke_token(id).await?)
    }
}
