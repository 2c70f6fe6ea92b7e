//! `WebAccess` in memory, for tests: the same rules as the SQLite adapter (codes kept
//! after being replaced so they still count, sessions and tokens under their hash), one lock
//! held through a code's check or a link's use so each is one step here too.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use async_trait::async_trait;

use super::InMemoryStore;
use crate::ids::MemberId;
use crate::ports::{
    MemberToken, NewSignInCode, SIGN_IN_FAILURES_KEPT_MS, SignInAttempt, SignInCheck,
    SignInFailure, SignInTry, StorageError, WebAccess, WebSession, sign_in_locked,
};

#[derive(Default)]
pub(super) struct WebAccessState {
    /// Every code made and not yet pruned, oldest first.
    codes: Vec<StoredCode>,
    /// Link hash → its link.
    links: BTreeMap<String, StoredLink>,
    /// Cookie hash → the session, with the order it was stored in.
    sessions: BTreeMap<String, (u64, WebSession)>,
    /// Token hash → the token, with the order it was stored in and when it was revoked.
    tokens: BTreeMap<String, StoredToken>,
    /// The order of the next session or token stored (SQLite's rowid).
    next_seq: u64,
    /// Wrong sign-in codes of the last day.
    failures: Vec<SignInFailure>,
}

struct StoredCode {
    code: NewSignInCode,
    wrong_tries: u32,
    used: bool,
    replaced: bool,
}

struct StoredLink {
    member_id: MemberId,
    created_at_ms: i64,
    expires_at_ms: i64,
    used: bool,
}

struct StoredToken {
    seq: u64,
    token: MemberToken,
    revoked: bool,
}

impl InMemoryStore {
    fn web_access_state(&self) -> MutexGuard<'_, WebAccessState> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving it.
        self.web_access
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl InMemoryStore {
    /// A removed member's sessions, links and codes gone, their tokens revoked.
    pub(super) fn forget_web_access_of(&self, member: &MemberId) {
        let mut state = self.web_access_state();
        state.codes.retain(|code| code.code.member_id != *member);
        state.links.retain(|_, link| link.member_id != *member);
        state
            .sessions
            .retain(|_, (_, session)| session.member_id != *member);
        for token in state.tokens.values_mut() {
            if token.token.member_id == *member {
                token.revoked = true;
            }
        }
    }
}

impl WebAccessState {
    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn try_code(
        &mut self,
        member_id: &MemberId,
        code_hash: &str,
        now_ms: i64,
        max_wrong: u32,
    ) -> SignInCheck {
        let open = self
            .codes
            .iter_mut()
            .find(|stored| stored.code.member_id == *member_id && !stored.replaced);
        // The same order of refusals as SQLite's: used, then expired, then locked.
        let Some(stored) = open else {
            return SignInCheck::NoCode;
        };
        if stored.used {
            return SignInCheck::NoCode;
        }
        if stored.code.expires_at_ms <= now_ms {
            return SignInCheck::Expired;
        }
        if stored.wrong_tries >= max_wrong {
            return SignInCheck::Locked;
        }
        if stored.code.code_hash == code_hash {
            stored.used = true;
            return SignInCheck::Accepted;
        }
        stored.wrong_tries += 1;
        SignInCheck::Wrong {
            tries_left: max_wrong - stored.wrong_tries,
        }
    }
}

#[async_trait]
impl WebAccess for InMemoryStore {
    async fn sign_in_codes_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let made = self
            .web_access_state()
            .codes
            .iter()
            .filter(|stored| {
                stored.code.member_id == *member_id && stored.code.created_at_ms >= since_ms
            })
            .count();
        Ok(u32::try_from(made).unwrap_or(u32::MAX))
    }

    async fn put_sign_in_code(&self, code: &NewSignInCode) -> Result<(), StorageError> {
        let mut state = self.web_access_state();
        for stored in &mut state.codes {
            if stored.code.member_id == code.member_id {
                stored.replaced = true;
            }
        }
        state.codes.push(StoredCode {
            code: code.clone(),
            wrong_tries: 0,
            used: false,
            replaced: false,
        });
        Ok(())
    }

    async fn try_sign_in_code(&self, attempt: &SignInAttempt) -> Result<SignInTry, StorageError> {
        let mut state = self.web_access_state();
        let (member_id, now_ms) = (&attempt.member_id, attempt.now_ms);
        state
            .failures
            .retain(|failure| failure.at_ms > now_ms - SIGN_IN_FAILURES_KEPT_MS);
        let address = attempt.address.as_str();
        if let Some(locked) = sign_in_locked(&state.failures, member_id, address, now_ms) {
            return Ok(SignInTry {
                check: SignInCheck::Limited(locked),
                locked_now: None,
            });
        }
        let check = state.try_code(member_id, &attempt.code_hash, now_ms, attempt.max_wrong);
        if check == SignInCheck::Accepted {
            return Ok(SignInTry {
                check,
                locked_now: None,
            });
        }
        state.failures.push(SignInFailure {
            member_id: member_id.clone(),
            address: address.to_string(),
            at_ms: now_ms,
        });
        Ok(SignInTry {
            check,
            locked_now: sign_in_locked(&state.failures, member_id, address, now_ms),
        })
    }

    async fn sign_in_links_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let made = self
            .web_access_state()
            .links
            .values()
            .filter(|link| link.member_id == *member_id && link.created_at_ms >= since_ms)
            .count();
        Ok(u32::try_from(made).unwrap_or(u32::MAX))
    }

    async fn put_sign_in_link(
        &self,
        link_hash: &str,
        member_id: &MemberId,
        created_at_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), StorageError> {
        let mut state = self.web_access_state();
        if state.links.contains_key(link_hash) {
            return Err(StorageError::Database("sign-in link stored twice".into()));
        }
        state.links.insert(
            link_hash.to_owned(),
            StoredLink {
                member_id: member_id.clone(),
                created_at_ms,
                expires_at_ms,
                used: false,
            },
        );
        Ok(())
    }

    async fn use_sign_in_link(
        &self,
        link_hash: &str,
        now_ms: i64,
    ) -> Result<Option<MemberId>, StorageError> {
        let mut state = self.web_access_state();
        let Some(link) = state.links.get_mut(link_hash) else {
            return Ok(None);
        };
        if link.used || link.expires_at_ms <= now_ms {
            return Ok(None);
        }
        link.used = true;
        Ok(Some(link.member_id.clone()))
    }

    async fn create_session(
        &self,
        cookie_hash: &str,
        session: &WebSession,
    ) -> Result<(), StorageError> {
        let mut state = self.web_access_state();
        // What SQLite's primary key and unique id refuse: never a session replaced.
        let taken = state.sessions.contains_key(cookie_hash)
            || state
                .sessions
                .values()
                .any(|(_, other)| other.id == session.id);
        if taken {
            return Err(StorageError::Database(format!(
                "session {} stored twice",
                session.id
            )));
        }
        let seq = state.seq();
        state
            .sessions
            .insert(cookie_hash.to_owned(), (seq, session.clone()));
        Ok(())
    }

    async fn session(
        &self,
        cookie_hash: &str,
        now_ms: i64,
    ) -> Result<Option<WebSession>, StorageError> {
        Ok(self
            .web_access_state()
            .sessions
            .get(cookie_hash)
            .filter(|(_, session)| session.expires_at_ms > now_ms)
            .map(|(_, session)| session.clone()))
    }

    async fn sessions_of(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Vec<WebSession>, StorageError> {
        let state = self.web_access_state();
        let mut sessions: Vec<_> = state
            .sessions
            .values()
            .filter(|(_, session)| {
                session.member_id == *member_id && session.expires_at_ms > now_ms
            })
            .collect();
        sessions.sort_by_key(|(seq, session)| std::cmp::Reverse((session.created_at_ms, *seq)));
        Ok(sessions
            .into_iter()
            .map(|(_, session)| session.clone())
            .collect())
    }

    async fn end_session(
        &self,
        member_id: &MemberId,
        session_id: &str,
    ) -> Result<bool, StorageError> {
        let mut state = self.web_access_state();
        let before = state.sessions.len();
        state.sessions.retain(|_, (_, session)| {
            !(session.id == session_id && session.member_id == *member_id)
        });
        Ok(state.sessions.len() < before)
    }

    async fn end_sessions_of(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        let mut state = self.web_access_state();
        let before = state.sessions.len();
        state
            .sessions
            .retain(|_, (_, session)| session.member_id != *member_id);
        Ok((before - state.sessions.len()) as u64)
    }

    async fn create_token(
        &self,
        token_hash: &str,
        token: &MemberToken,
    ) -> Result<(), StorageError> {
        let mut state = self.web_access_state();
        let taken = state.tokens.contains_key(token_hash)
            || state
                .tokens
                .values()
                .any(|other| other.token.id == token.id);
        if taken {
            return Err(StorageError::Database(format!(
                "token {} stored twice",
                token.id
            )));
        }
        let seq = state.seq();
        state.tokens.insert(
            token_hash.to_owned(),
            StoredToken {
                seq,
                token: token.clone(),
                revoked: false,
            },
        );
        Ok(())
    }

    async fn token(&self, token_hash: &str) -> Result<Option<MemberToken>, StorageError> {
        Ok(self
            .web_access_state()
            .tokens
            .get(token_hash)
            .filter(|stored| !stored.revoked)
            .map(|stored| stored.token.clone()))
    }

    async fn tokens(&self) -> Result<Vec<MemberToken>, StorageError> {
        let state = self.web_access_state();
        let mut tokens: Vec<_> = state
            .tokens
            .values()
            .filter(|stored| !stored.revoked)
            .collect();
        tokens.sort_by_key(|stored| (stored.token.created_at_ms, stored.seq));
        Ok(tokens
            .into_iter()
            .map(|stored| stored.token.clone())
            .collect())
    }

    async fn revoke_token(&self, id: &str) -> Result<bool, StorageError> {
        let mut state = self.web_access_state();
        let open = state
            .tokens
            .values_mut()
            .find(|stored| stored.token.id == id && !stored.revoked);
        Ok(open.map(|stored| stored.revoked = true).is_some())
    }

    async fn prune_expired(&self, before_ms: i64) -> Result<u64, StorageError> {
        let mut state = self.web_access_state();
        let before = state.codes.len() + state.links.len() + state.sessions.len();
        state
            .codes
            .retain(|stored| stored.code.expires_at_ms >= before_ms);
        state
            .links
            .retain(|_, link| link.expires_at_ms >= before_ms);
        state
            .sessions
            .retain(|_, (_, session)| session.expires_at_ms >= before_ms);
        let after = state.codes.len() + state.links.len() + state.sessions.len();
        Ok((before - after) as u64)
    }
}
