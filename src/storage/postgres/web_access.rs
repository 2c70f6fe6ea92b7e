//! `WebAccess` on PostgreSQL: tables `sign_in_codes`, `sign_in_links`, `web_sessions` and
//! `member_tokens`. Codes stored for one member at once take turns (an advisory lock), so
//! one stays open. Typing a code locks the member's open code (`FOR UPDATE`) in a
//! transaction that checks and spends it or counts the wrong try, and a link is spent by
//! one conditional `UPDATE … RETURNING`: tries racing from several workers get one winner,
//! and a wrong try always counts. Nothing is cached: the command line and other workers
//! write these rows too.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{PostgresStore, database_error, id_column};
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
    " FROM web_sessions WHERE cookie_hash = $1 AND expires_at_ms > $2"
);
// The table keeps no insertion order: sessions made in the same millisecond are listed by
// their public id, the same way every time.
const SESSIONS_OF: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM web_sessions WHERE member_id = $1 AND expires_at_ms > $2 \
     ORDER BY created_at_ms DESC, id DESC"
);
const TOKEN_BY_HASH: &str = concat!(
    "SELECT ",
    token_columns!(),
    " FROM member_tokens WHERE token_hash = $1 AND revoked_at_ms IS NULL"
);
const EVERY_TOKEN: &str = concat!(
    "SELECT ",
    token_columns!(),
    " FROM member_tokens WHERE revoked_at_ms IS NULL ORDER BY created_at_ms, id"
);

fn session_from_row(row: &PgRow) -> Result<WebSession, StorageError> {
    Ok(WebSession {
        id: row.get("id"),
        member_id: id_column(row, "web_sessions", "member_id")?,
        csrf_token: row.get("csrf_token"),
        signed_in_with: row.get("signed_in_with"),
        created_at_ms: row.get("created_at_ms"),
        expires_at_ms: row.get("expires_at_ms"),
    })
}

fn token_from_row(row: &PgRow) -> Result<MemberToken, StorageError> {
    Ok(MemberToken {
        id: row.get("id"),
        member_id: id_column(row, "member_tokens", "member_id")?,
        label: row.get("label"),
        created_at_ms: row.get("created_at_ms"),
    })
}

/// Replace `code.member_id`'s open code by `code`, in one transaction.
async fn replace_code(pool: &sqlx::PgPool, code: &NewSignInCode) -> Result<(), sqlx::Error> {
    let mut transaction = pool.begin().await?;
    // Codes stored for one member at the same moment (two workers) take turns, held until
    // the transaction ends: each replaces the one stored before it, and one stays open.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('sign_in_codes:' || $1, 0))")
        .bind(code.member_id.as_str())
        .execute(&mut *transaction)
        .await?;
    // The earlier code stops working but stays counted until it expires.
    sqlx::query("UPDATE sign_in_codes SET replaced = TRUE WHERE member_id = $1 AND NOT replaced")
        .bind(code.member_id.as_str())
        .execute(&mut *transaction)
        .await?;
    sqlx::query(
        "INSERT INTO sign_in_codes (member_id, code_hash, created_at_ms, expires_at_ms) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(code.member_id.as_str())
    .bind(&code.code_hash)
    .bind(code.created_at_ms)
    .bind(code.expires_at_ms)
    .execute(&mut *transaction)
    .await?;
    transaction.commit().await
}

/// Check `attempt` in the caller's transaction, with the counting of wrong tries: tries
/// on every worker take turns (an advisory lock held until the transaction ends), so each
/// counts the ones before it and no limit is passed by racing.
async fn try_in(
    connection: &mut PgConnection,
    attempt: &SignInAttempt,
) -> Result<SignInTry, StorageError> {
    let now_ms = attempt.now_ms;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('hearth sign-in tries', 0))")
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    sqlx::query("DELETE FROM sign_in_failures WHERE at_ms <= $1")
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
    sqlx::query("INSERT INTO sign_in_failures (member_id, address, at_ms) VALUES ($1, $2, $3)")
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

/// Check `code_hash` against `member_id`'s open code, locked until the caller's
/// transaction ends: a second try waits and then sees what this one did.
async fn try_code_in(
    connection: &mut PgConnection,
    member_id: &str,
    code_hash: &str,
    now_ms: i64,
    max_wrong: u32,
) -> Result<SignInCheck, StorageError> {
    let open = sqlx::query(
        "SELECT id, code_hash, used_at_ms, expires_at_ms, wrong_tries FROM sign_in_codes \
         WHERE member_id = $1 AND NOT replaced FOR UPDATE",
    )
    .bind(member_id)
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)?;
    let Some(open) = open else {
        return Ok(SignInCheck::NoCode);
    };
    let max_wrong = i64::from(max_wrong);
    // Refused in this order: used, then expired, then locked.
    if open.get::<Option<i64>, _>("used_at_ms").is_some() {
        return Ok(SignInCheck::NoCode);
    }
    if open.get::<i64, _>("expires_at_ms") <= now_ms {
        return Ok(SignInCheck::Expired);
    }
    if open.get::<i64, _>("wrong_tries") >= max_wrong {
        return Ok(SignInCheck::Locked);
    }
    let id: i64 = open.get("id");
    if open.get::<String, _>("code_hash") == code_hash {
        sqlx::query("UPDATE sign_in_codes SET used_at_ms = $1 WHERE id = $2")
            .bind(now_ms)
            .bind(id)
            .execute(&mut *connection)
            .await
            .map_err(database_error)?;
        return Ok(SignInCheck::Accepted);
    }
    let wrong: i64 = sqlx::query_scalar(
        "UPDATE sign_in_codes SET wrong_tries = wrong_tries + 1 WHERE id = $1 \
         RETURNING wrong_tries",
    )
    .bind(id)
    .fetch_one(&mut *connection)
    .await
    .map_err(database_error)?;
    let tries_left = u32::try_from(max_wrong - wrong).unwrap_or(0);
    Ok(SignInCheck::Wrong { tries_left })
}

#[async_trait]
impl WebAccess for PostgresStore {
    async fn sign_in_codes_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let made: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sign_in_codes WHERE member_id = $1 AND created_at_ms >= $2",
        )
        .bind(member_id.as_str())
        .bind(since_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(u32::try_from(made).unwrap_or(u32::MAX))
    }

    async fn put_sign_in_code(&self, code: &NewSignInCode) -> Result<(), StorageError> {
        replace_code(&self.pool, code).await.map_err(database_error)
    }

    async fn try_sign_in_code(&self, attempt: &SignInAttempt) -> Result<SignInTry, StorageError> {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        let tried = try_in(&mut transaction, attempt).await?;
        transaction.commit().await.map_err(database_error)?;
        Ok(tried)
    }

    async fn sign_in_links_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let made: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM sign_in_links WHERE member_id = $1 AND created_at_ms >= $2",
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
        sqlx::query(
            "INSERT INTO sign_in_links (link_hash, member_id, created_at_ms, expires_at_ms) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(link_hash)
        .bind(member_id.as_str())
        .bind(created_at_ms)
        .bind(expires_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn use_sign_in_link(
        &self,
        link_hash: &str,
        now_ms: i64,
    ) -> Result<Option<MemberId>, StorageError> {
        // One statement decides: a second use waits for the first and then finds the link
        // spent, so a link opens one session however fast it is used twice.
        let row = sqlx::query(
            "UPDATE sign_in_links SET used_at_ms = $1 WHERE link_hash = $2 \
             AND used_at_ms IS NULL AND expires_at_ms > $1 RETURNING member_id",
        )
        .bind(now_ms)
        .bind(link_hash)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        row.map(|row| id_column(&row, "sign_in_links", "member_id"))
            .transpose()
    }

    async fn create_session(
        &self,
        cookie_hash: &str,
        session: &WebSession,
    ) -> Result<(), StorageError> {
        // A plain INSERT: a cookie hash or id stored twice is refused, never a session
        // silently replaced.
        sqlx::query(concat!(
            "INSERT INTO web_sessions (cookie_hash, ",
            session_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
        ))
        .bind(cookie_hash)
        .bind(&session.id)
        .bind(session.member_id.as_str())
        .bind(&session.csrf_token)
        .bind(&session.signed_in_with)
        .bind(session.created_at_ms)
        .bind(session.expires_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
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
        let ended = sqlx::query("DELETE FROM web_sessions WHERE id = $1 AND member_id = $2")
            .bind(session_id)
            .bind(member_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(database_error)?;
        Ok(ended.rows_affected() > 0)
    }

    async fn end_sessions_of(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        let ended = sqlx::query("DELETE FROM web_sessions WHERE member_id = $1")
            .bind(member_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(database_error)?;
        Ok(ended.rows_affected())
    }

    async fn create_token(
        &self,
        token_hash: &str,
        token: &MemberToken,
    ) -> Result<(), StorageError> {
        sqlx::query(concat!(
            "INSERT INTO member_tokens (token_hash, ",
            token_columns!(),
            ") VALUES ($1, $2, $3, $4, $5)"
        ))
        .bind(token_hash)
        .bind(&token.id)
        .bind(token.member_id.as_str())
        .bind(&token.label)
        .bind(token.created_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
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
        let revoked = sqlx::query(
            "UPDATE member_tokens SET revoked_at_ms = $1 WHERE id = $2 AND revoked_at_ms IS NULL",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(revoked.rows_affected() > 0)
    }

    async fn prune_expired(&self, before_ms: i64) -> Result<u64, StorageError> {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        let mut pruned = 0;
        for statement in [
            "DELETE FROM sign_in_codes WHERE expires_at_ms < $1",
            "DELETE FROM sign_in_links WHERE expires_at_ms < $1",
            "DELETE FROM web_sessions WHERE expires_at_ms < $1",
            // Kept a day after the try (`SIGN_IN_FAILURES_KEPT_MS`), here a day after
            // `before_ms`: an hour's tries are never pruned early.
            "DELETE FROM sign_in_failures WHERE at_ms < $1 - 86400000",
        ] {
            pruned += sqlx::query(statement)
                .bind(before_ms)
                .execute(&mut *transaction)
                .await
                .map_err(database_error)?
                .rows_affected();
        }
        transaction.commit().await.map_err(database_error)?;
        Ok(pruned)
    }
}
