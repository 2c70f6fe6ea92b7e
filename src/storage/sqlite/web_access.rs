//! `WebAccess` on SQLite: tables `sign_in_codes`, `sign_in_links`, `web_sessions` and
//! `member_tokens` (migration 0016). Typing a code and using a link are each decided by one
//! conditional `UPDATE … RETURNING` on the writer, so two tries racing cannot both win and a
//! wrong try always counts. Nothing is cached: the command line writes links and tokens
//! beside a running hearth, and reads go to the file each time.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::{SqliteStore, database_error, id_column};
use crate::ids::MemberId;
use crate::ports::{
    MemberToken, NewSignInCode, SIGN_IN_FAILURES_KEPT_MS, SignInAttempt, SignInCheck,
    SignInFailure, SignInTry, StorageError, WebAccess, WebSession, now_ms, sign_in_locked,
};

macro_rules! session_columns {
    () => {
        "id, member_id, csrf_token, signed_in_with, created_at_ms, expires_at_ms"
    };
}
macro_rules! token_columns {
    () => {
        "id, member_id, label, created_at_ms"
    };
}

const SESSION_BY_COOKIE: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM web_sessions WHERE cookie_hash = ? AND expires_at_ms > ?"
);
// `rowid` orders sessions made in the same millisecond by when they were stored.
const SESSIONS_OF: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM web_sessions WHERE member_id = ? AND expires_at_ms > ? \
     ORDER BY created_at_ms DESC, rowid DESC"
);
const TOKEN_BY_HASH: &str = concat!(
    "SELECT ",
    token_columns!(),
    " FROM member_tokens WHERE token_hash = ? AND revoked_at_ms IS NULL"
);
const EVERY_TOKEN: &str = concat!(
    "SELECT ",
    token_columns!(),
    " FROM member_tokens WHERE revoked_at_ms IS NULL ORDER BY created_at_ms, rowid"
);

fn session_from_row(row: &SqliteRow) -> Result<WebSession, StorageError> {
    Ok(WebSession {
        id: row.get("id"),
        member_id: id_column(row, "web_sessions", "member_id")?,
        csrf_token: row.get("csrf_token"),
        signed_in_with: row.get("signed_in_with"),
        created_at_ms: row.get("created_at_ms"),
        expires_at_ms: row.get("expires_at_ms"),
    })
}

fn token_from_row(row: &SqliteRow) -> Result<MemberToken, StorageError> {
    Ok(MemberToken {
        id: row.get("id"),
        member_id: id_column(row, "member_tokens", "member_id")?,
        label: row.get("label"),
        created_at_ms: row.get("created_at_ms"),
    })
}

/// Check `attempt` on the writer's connection, with the counting of wrong tries: the
/// writer runs one job at a time, so tries are counted one after the other.
async fn try_in(
    connection: &mut SqliteConnection,
    attempt: &SignInAttempt,
) -> Result<SignInTry, StorageError> {
    let now_ms = attempt.now_ms;
    sqlx::query("DELETE FROM sign_in_failures WHERE at_ms <= ?")
        .bind(now_ms - SIGN_IN_FAILURES_KEPT_MS)
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    let rows = sqlx::query("SELECT member_id, address, at_ms FROM sign_in_failures")
        .fetch_all(&mut *connection)
        .await
        .map_err(database_error)?;
    let mut failures = rows
        .iter()
        .map(|row| {
            Ok(SignInFailure {
                member_id: id_column(row, "sign_in_failures", "member_id")?,
                address: row.get("address"),
                at_ms: row.get("at_ms"),
            })
        })
        .collect::<Result<Vec<_>, StorageError>>()?;
    let (member_id, address) = (&attempt.member_id, attempt.address.as_str());
    if let Some(locked) = sign_in_locked(&failures, member_id, address, now_ms) {
        return Ok(SignInTry {
            check: SignInCheck::Limited(locked),
            locked_now: None,
        });
    }
    let check = try_code_in(
        connection,
        member_id.as_str(),
        &attempt.code_hash,
        now_ms,
        attempt.max_wrong,
    )
    .await?;
    if check == SignInCheck::Accepted {
        return Ok(SignInTry {
            check,
            locked_now: None,
        });
    }
    sqlx::query("INSERT INTO sign_in_failures (member_id, address, at_ms) VALUES (?, ?, ?)")
        .bind(member_id.as_str())
        .bind(address)
        .bind(now_ms)
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    failures.push(SignInFailure {
        member_id: member_id.clone(),
        address: address.to_string(),
        at_ms: now_ms,
    });
    Ok(SignInTry {
        check,
        locked_now: sign_in_locked(&failures, member_id, address, now_ms),
    })
}

/// Check `code_hash` against `member_id`'s open code on the writer's connection.
async fn try_code_in(
    connection: &mut SqliteConnection,
    member_id: &str,
    code_hash: &str,
    now_ms: i64,
    max_wrong: u32,
) -> Result<SignInCheck, StorageError> {
    let max_wrong = i64::from(max_wrong);
    // One statement decides: the right code is spent or a wrong one counted, and only
    // while the code is still open, in time and not locked.
    let tried = sqlx::query(
        "UPDATE sign_in_codes SET \
           used_at_ms = CASE WHEN code_hash = ? THEN ? ELSE used_at_ms END, \
           wrong_tries = wrong_tries + (code_hash <> ?) \
         WHERE member_id = ? AND replaced = 0 AND used_at_ms IS NULL \
           AND expires_at_ms > ? AND wrong_tries < ? \
         RETURNING used_at_ms IS NOT NULL AS accepted, wrong_tries",
    )
    .bind(code_hash)
    .bind(now_ms)
    .bind(code_hash)
    .bind(member_id)
    .bind(now_ms)
    .bind(max_wrong)
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)?;
    if let Some(row) = tried {
        if row.get::<i64, _>("accepted") != 0 {
            return Ok(SignInCheck::Accepted);
        }
        let wrong: i64 = row.get("wrong_tries");
        let tries_left = u32::try_from(max_wrong - wrong).unwrap_or(0);
        return Ok(SignInCheck::Wrong { tries_left });
    }
    // Nothing changed; the open code (in the same transaction) says why.
    let open = sqlx::query(
        "SELECT used_at_ms, expires_at_ms FROM sign_in_codes \
         WHERE member_id = ? AND replaced = 0",
    )
    .bind(member_id)
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)?;
    Ok(match open {
        None => SignInCheck::NoCode,
        Some(row) if row.get::<Option<i64>, _>("used_at_ms").is_some() => SignInCheck::NoCode,
        Some(row) if row.get::<i64, _>("expires_at_ms") <= now_ms => SignInCheck::Expired,
        Some(_) => SignInCheck::Locked,
    })
}

#[async_trait]
impl WebAccess for SqliteStore {
    async fn sign_in_codes_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let made: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sign_in_codes WHERE member_id = ? AND created_at_ms >= ?",
        )
        .bind(member_id.as_str())
        .bind(since_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(u32::try_from(made).unwrap_or(u32::MAX))
    }

    async fn put_sign_in_code(&self, code: &NewSignInCode) -> Result<(), StorageError> {
        let code = code.clone();
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    // The earlier code stops working but stays counted until it expires.
                    sqlx::query(
                        "UPDATE sign_in_codes SET replaced = 1 \
                         WHERE member_id = ? AND replaced = 0",
                    )
                    .bind(code.member_id.as_str())
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    sqlx::query(
                        "INSERT INTO sign_in_codes (member_id, code_hash, created_at_ms, \
                         expires_at_ms) VALUES (?, ?, ?, ?)",
                    )
                    .bind(code.member_id.as_str())
                    .bind(&code.code_hash)
                    .bind(code.created_at_ms)
                    .bind(code.expires_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(())
                })
            })
            .await
    }

    async fn try_sign_in_code(&self, attempt: &SignInAttempt) -> Result<SignInTry, StorageError> {
        let attempt = attempt.clone();
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move { try_in(connection, &attempt).await })
            })
            .await
    }

    async fn sign_in_links_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let made: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sign_in_links WHERE member_id = ? AND created_at_ms >= ?",
        )
        .bind(member_id.as_str())
        .bind(since_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(u32::try_from(made).unwrap_or(u32::MAX))
    }

    async fn put_sign_in_link(
        &self,
        link_hash: &str,
        member_id: &MemberId,
        created_at_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), StorageError> {
        let (link_hash, member_id) = (link_hash.to_owned(), member_id.to_string());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO sign_in_links (link_hash, member_id, created_at_ms, \
                         expires_at_ms) VALUES (?, ?, ?, ?)",
                    )
                    .bind(&link_hash)
                    .bind(&member_id)
                    .bind(created_at_ms)
                    .bind(expires_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(())
                })
            })
            .await
    }

    async fn use_sign_in_link(
        &self,
        link_hash: &str,
        now_ms: i64,
    ) -> Result<Option<MemberId>, StorageError> {
        let link_hash = link_hash.to_owned();
        let row = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    // One statement decides, so a link opens one session however fast
                    // it is used twice.
                    sqlx::query(
                        "UPDATE sign_in_links SET used_at_ms = ? WHERE link_hash = ? \
                         AND used_at_ms IS NULL AND expires_at_ms > ? RETURNING member_id",
                    )
                    .bind(now_ms)
                    .bind(&link_hash)
                    .bind(now_ms)
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)
                })
            })
            .await?;
        row.map(|row| id_column(&row, "sign_in_links", "member_id"))
            .transpose()
    }

    async fn create_session(
        &self,
        cookie_hash: &str,
        session: &WebSession,
    ) -> Result<(), StorageError> {
        let (cookie_hash, session) = (cookie_hash.to_owned(), session.clone());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    // A plain INSERT: a cookie hash or id stored twice is refused, never
                    // a session silently replaced.
                    sqlx::query(concat!(
                        "INSERT INTO web_sessions (cookie_hash, ",
                        session_columns!(),
                        ") VALUES (?, ?, ?, ?, ?, ?, ?)"
                    ))
                    .bind(&cookie_hash)
                    .bind(&session.id)
                    .bind(session.member_id.as_str())
                    .bind(&session.csrf_token)
                    .bind(&session.signed_in_with)
                    .bind(session.created_at_ms)
                    .bind(session.expires_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(())
                })
            })
            .await
    }

    async fn session(
        &self,
        cookie_hash: &str,
        now_ms: i64,
    ) -> Result<Option<WebSession>, StorageError> {
        let row = sqlx::query(SESSION_BY_COOKIE)
            .bind(cookie_hash)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(session_from_row).transpose()
    }

    async fn sessions_of(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Vec<WebSession>, StorageError> {
        let rows = sqlx::query(SESSIONS_OF)
            .bind(member_id.as_str())
            .bind(now_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        rows.iter().map(session_from_row).collect()
    }

    async fn end_session(
        &self,
        member_id: &MemberId,
        session_id: &str,
    ) -> Result<bool, StorageError> {
        let (member_id, session_id) = (member_id.to_string(), session_id.to_owned());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let ended =
                        sqlx::query("DELETE FROM web_sessions WHERE id = ? AND member_id = ?")
                            .bind(&session_id)
                            .bind(&member_id)
                            .execute(&mut *connection)
                            .await
                            .map_err(database_error)?;
                    Ok(ended.rows_affected() > 0)
                })
            })
            .await
    }

    async fn end_sessions_of(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        let member_id = member_id.to_string();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let ended = sqlx::query("DELETE FROM web_sessions WHERE member_id = ?")
                        .bind(&member_id)
                        .execute(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    Ok(ended.rows_affected())
                })
            })
            .await
    }

    async fn create_token(
        &self,
        token_hash: &str,
        token: &MemberToken,
    ) -> Result<(), StorageError> {
        let (token_hash, token) = (token_hash.to_owned(), token.clone());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(concat!(
                        "INSERT INTO member_tokens (token_hash, ",
                        token_columns!(),
                        ") VALUES (?, ?, ?, ?, ?)"
                    ))
                    .bind(&token_hash)
                    .bind(&token.id)
                    .bind(token.member_id.as_str())
                    .bind(&token.label)
                    .bind(token.created_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(())
                })
            })
            .await
    }

    async fn token(&self, token_hash: &str) -> Result<Option<MemberToken>, StorageError> {
        let row = sqlx::query(TOKEN_BY_HASH)
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(token_from_row).transpose()
    }

    async fn tokens(&self) -> Result<Vec<MemberToken>, StorageError> {
        let rows = sqlx::query(EVERY_TOKEN)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        rows.iter().map(token_from_row).collect()
    }

    async fn revoke_token(&self, id: &str) -> Result<bool, StorageError> {
        let id = id.to_owned();
        let revoked_at_ms = now_ms();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let revoked = sqlx::query(
                        "UPDATE member_tokens SET revoked_at_ms = ? \
                         WHERE id = ? AND revoked_at_ms IS NULL",
                    )
                    .bind(revoked_at_ms)
                    .bind(&id)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(revoked.rows_affected() > 0)
                })
            })
            .await
    }

    async fn prune_expired(&self, before_ms: i64) -> Result<u64, StorageError> {
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let mut pruned = 0;
                    for statement in [
                        "DELETE FROM sign_in_codes WHERE expires_at_ms < ?",
                        "DELETE FROM sign_in_links WHERE expires_at_ms < ?",
                        "DELETE FROM web_sessions WHERE expires_at_ms < ?",
                        // Kept a day after the try (`SIGN_IN_FAILURES_KEPT_MS`), here a
                        // day after `before_ms`: an hour's tries are never pruned early.
                        "DELETE FROM sign_in_failures WHERE at_ms < ? - 86400000",
                    ] {
                        pruned += sqlx::query(statement)
                            .bind(before_ms)
                            .execute(&mut *connection)
                            .await
                            .map_err(database_error)?
                            .rows_affected();
                    }
                    Ok(pruned)
                })
            })
            .await
    }
}
