//! `WebAccess` on either SQL database: tables `sign_in_codes`, `sign_in_links`,
//! `web_sessions`, `member_tokens` and `sign_in_failures`. Codes stored for one member at
//! once take turns, so one stays open. Typing a code locks the member's open code in a
//! transaction that checks and spends it or counts the wrong try, every try taking turns
//! with the others, and a link is spent by one conditional `UPDATE … RETURNING`: tries
//! racing (from any worker) get one winner, and a wrong try always counts. Nothing is
//! cached: the command line and other workers write these rows too.

use async_trait::async_trait;

use super::{SqlBackend, SqlConnection, SqlRow, id_column, per_dialect, sql, take_turns};
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

fn session_from_row(row: &impl SqlRow) -> Result<WebSession, StorageError> {
    Ok(WebSession {
        id: row.text("id")?,
        member_id: id_column(row, "web_sessions", "member_id")?,
        csrf_token: row.text("csrf_token")?,
        signed_in_with: row.text("signed_in_with")?,
        created_at_ms: row.integer("created_at_ms")?,
        expires_at_ms: row.integer("expires_at_ms")?,
    })
}

fn token_from_row(row: &impl SqlRow) -> Result<MemberToken, StorageError> {
    Ok(MemberToken {
        id: row.text("id")?,
        member_id: id_column(row, "member_tokens", "member_id")?,
        label: row.optional_text("label")?,
        created_at_ms: row.integer("created_at_ms")?,
    })
}

/// Check `attempt` in the caller's transaction, with the counting of wrong tries: tries
/// take turns, so each counts the ones before it and no limit is passed by racing.
async fn try_in<B: SqlBackend>(
    connection: &mut B::Connection,
    attempt: &SignInAttempt,
) -> Result<SignInTry, StorageError> {
    let now_ms = attempt.now_ms;
    take_turns::<B>(connection, "hearth sign-in tries".into()).await?;
    let forget = sql("DELETE FROM sign_in_failures WHERE at_ms <= $1");
    (connection.execute(forget.bind(now_ms - SIGN_IN_FAILURES_KEPT_MS))).await?;
    let rows = (connection.fetch(sql(
        "SELECT member_id, address, at_ms FROM sign_in_failures",
    )))
    .await?;
    let mut failures = rows
        .iter()
        .map(|row| {
            Ok(SignInFailure {
                member_id: id_column(row, "sign_in_failures", "member_id")?,
                address: row.text("address")?,
                at_ms: row.integer("at_ms")?,
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
    let check = try_code_in::<B>(connection, attempt).await?;
    if check == SignInCheck::Accepted {
        return Ok(SignInTry {
            check,
            locked_now: None,
        });
    }
    let failed = sql("INSERT INTO sign_in_failures (member_id, address, at_ms) \
         VALUES ($1, $2, $3)");
    let failed = failed.bind(member_id.as_str()).bind(address).bind(now_ms);
    connection.execute(failed).await?;
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

/// Check `attempt`'s code against its member's open code, locked until the caller's
/// transaction ends: a second try waits and then sees what this one did.
async fn try_code_in<B: SqlBackend>(
    connection: &mut B::Connection,
    attempt: &SignInAttempt,
) -> Result<SignInCheck, StorageError> {
    let open = per_dialect!(B::DIALECT, |dialect| format!(
        "SELECT id, code_hash, used_at_ms, expires_at_ms, wrong_tries FROM sign_in_codes \
         WHERE member_id = $1 AND NOT replaced{}",
        dialect.for_update()
    ));
    let open = sql(open).bind(attempt.member_id.as_str());
    let Some(open) = connection.fetch_optional(open).await? else {
        return Ok(SignInCheck::NoCode);
    };
    let max_wrong = i64::from(attempt.max_wrong);
    // Refused in this order: used, then expired, then locked.
    if open.optional_integer("used_at_ms")?.is_some() {
        return Ok(SignInCheck::NoCode);
    }
    if open.integer("expires_at_ms")? <= attempt.now_ms {
        return Ok(SignInCheck::Expired);
    }
    if open.integer("wrong_tries")? >= max_wrong {
        return Ok(SignInCheck::Locked);
    }
    let id = open.integer("id")?;
    if open.text("code_hash")? == attempt.code_hash {
        let spend = sql("UPDATE sign_in_codes SET used_at_ms = $1 WHERE id = $2");
        connection
            .execute(spend.bind(attempt.now_ms).bind(id))
            .await?;
        return Ok(SignInCheck::Accepted);
    }
    let wrong = sql(
        "UPDATE sign_in_codes SET wrong_tries = wrong_tries + 1 WHERE id = $1 \
         RETURNING wrong_tries",
    );
    let wrong = match connection.fetch_optional(wrong.bind(id)).await? {
        Some(row) => row.integer("wrong_tries")?,
        None => max_wrong,
    };
    let tries_left = u32::try_from(max_wrong - wrong).unwrap_or(0);
    Ok(SignInCheck::Wrong { tries_left })
}

/// How many rows of `count` (a `COUNT(*) AS made`) were made.
fn made(row: Option<impl SqlRow>) -> Result<u32, StorageError> {
    let made = row.map(|row| row.integer("made")).transpose()?;
    Ok(u32::try_from(made.unwrap_or(0)).unwrap_or(u32::MAX))
}

#[async_trait]
impl<B: SqlBackend> WebAccess for B {
    async fn sign_in_codes_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let count = sql("SELECT COUNT(*) AS made FROM sign_in_codes \
             WHERE member_id = $1 AND created_at_ms >= $2");
        made(
            self.read_optional(count.bind(member_id.as_str()).bind(since_ms))
                .await?,
        )
    }

    async fn put_sign_in_code(&self, code: &NewSignInCode) -> Result<(), StorageError> {
        let code = code.clone();
        self.atomically(move |connection| {
            Box::pin(async move {
                // Codes stored for one member at the same moment take turns: each
                // replaces the one stored before it, and one stays open.
                let member = code.member_id.as_str();
                take_turns::<B>(connection, format!("sign_in_codes:{member}")).await?;
                // The earlier code stops working but stays counted until it expires.
                let replace = sql("UPDATE sign_in_codes SET replaced = TRUE \
                     WHERE member_id = $1 AND NOT replaced");
                connection.execute(replace.bind(member)).await?;
                let insert = sql("INSERT INTO sign_in_codes (member_id, code_hash, \
                     created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4)")
                .bind(member)
                .bind(&code.code_hash)
                .bind(code.created_at_ms)
                .bind(code.expires_at_ms);
                connection.execute(insert).await.map(drop)
            })
        })
        .await
    }

    async fn try_sign_in_code(&self, attempt: &SignInAttempt) -> Result<SignInTry, StorageError> {
        let attempt = attempt.clone();
        self.atomically(move |connection| {
            Box::pin(async move { try_in::<B>(connection, &attempt).await })
        })
        .await
    }

    async fn sign_in_links_since(
        &self,
        member_id: &MemberId,
        since_ms: i64,
    ) -> Result<u32, StorageError> {
        let count = sql("SELECT COUNT(*) AS made FROM sign_in_links \
             WHERE member_id = $1 AND created_at_ms >= $2");
        made(
            self.read_optional(count.bind(member_id.as_str()).bind(since_ms))
                .await?,
        )
    }

    async fn put_sign_in_link(
        &self,
        link_hash: &str,
        member_id: &MemberId,
        created_at_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), StorageError> {
        let put = sql(
            "INSERT INTO sign_in_links (link_hash, member_id, created_at_ms, \
             expires_at_ms) VALUES ($1, $2, $3, $4)",
        )
        .bind(link_hash)
        .bind(member_id.as_str())
        .bind(created_at_ms)
        .bind(expires_at_ms);
        self.write_count(put).await.map(drop)
    }

    async fn use_sign_in_link(
        &self,
        link_hash: &str,
        now_ms: i64,
    ) -> Result<Option<MemberId>, StorageError> {
        // One statement decides: a second use waits for the first and then finds the link
        // spent, so a link opens one session however fast it is used twice.
        let spend = sql(
            "UPDATE sign_in_links SET used_at_ms = $1 WHERE link_hash = $2 \
             AND used_at_ms IS NULL AND expires_at_ms > $1 RETURNING member_id",
        );
        let row = self
            .write_optional(spend.bind(now_ms).bind(link_hash))
            .await?;
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
        let create = sql(concat!(
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
        .bind(session.expires_at_ms);
        self.write_count(create).await.map(drop)
    }

    async fn session(
        &self,
        cookie_hash: &str,
        now_ms: i64,
    ) -> Result<Option<WebSession>, StorageError> {
        let session = sql(concat!(
            "SELECT ",
            session_columns!(),
            " FROM web_sessions WHERE cookie_hash = $1 AND expires_at_ms > $2"
        ));
        let row = (self.read_optional(session.bind(cookie_hash).bind(now_ms))).await?;
        row.as_ref().map(session_from_row).transpose()
    }

    async fn sessions_of(
        &self,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Vec<WebSession>, StorageError> {
        let sessions = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT {} FROM web_sessions WHERE member_id = $1 AND expires_at_ms > $2 \
             ORDER BY created_at_ms DESC, {} DESC",
            session_columns!(),
            dialect.stored_order()
        ));
        let rows = (self.read(sql(sessions).bind(member_id.as_str()).bind(now_ms))).await?;
        rows.iter().map(session_from_row).collect()
    }

    async fn end_session(
        &self,
        member_id: &MemberId,
        session_id: &str,
    ) -> Result<bool, StorageError> {
        let end = sql("DELETE FROM web_sessions WHERE id = $1 AND member_id = $2");
        Ok(self
            .write_count(end.bind(session_id).bind(member_id.as_str()))
            .await?
            > 0)
    }

    async fn end_sessions_of(&self, member_id: &MemberId) -> Result<u64, StorageError> {
        let end = sql("DELETE FROM web_sessions WHERE member_id = $1");
        self.write_count(end.bind(member_id.as_str())).await
    }

    async fn create_token(
        &self,
        token_hash: &str,
        token: &MemberToken,
    ) -> Result<(), StorageError> {
        let create = sql(concat!(
            "INSERT INTO member_tokens (token_hash, ",
            token_columns!(),
            ") VALUES ($1, $2, $3, $4, $5)"
        ))
        .bind(token_hash)
        .bind(&token.id)
        .bind(token.member_id.as_str())
        .bind(&token.label)
        .bind(token.created_at_ms);
        self.write_count(create).await.map(drop)
    }

    async fn token(&self, token_hash: &str) -> Result<Option<MemberToken>, StorageError> {
        let token = sql(concat!(
            "SELECT ",
            token_columns!(),
            " FROM member_tokens WHERE token_hash = $1 AND revoked_at_ms IS NULL"
        ));
        let row = self.read_optional(token.bind(token_hash)).await?;
        row.as_ref().map(token_from_row).transpose()
    }

    async fn tokens(&self) -> Result<Vec<MemberToken>, StorageError> {
        let tokens = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT {} FROM member_tokens WHERE revoked_at_ms IS NULL \
             ORDER BY created_at_ms, {}",
            token_columns!(),
            dialect.stored_order()
        ));
        let rows = self.read(sql(tokens)).await?;
        rows.iter().map(token_from_row).collect()
    }

    async fn revoke_token(&self, id: &str) -> Result<bool, StorageError> {
        let revoke = sql("UPDATE member_tokens SET revoked_at_ms = $1 \
             WHERE id = $2 AND revoked_at_ms IS NULL");
        Ok(self.write_count(revoke.bind(now_ms()).bind(id)).await? > 0)
    }

    async fn prune_expired(&self, before_ms: i64) -> Result<u64, StorageError> {
        self.atomically(move |connection| {
            Box::pin(async move {
                let mut pruned = 0;
                for statement in [
                    "DELETE FROM sign_in_codes WHERE expires_at_ms < $1",
                    "DELETE FROM sign_in_links WHERE expires_at_ms < $1",
                    "DELETE FROM web_sessions WHERE expires_at_ms < $1",
                    // Kept a day after the try (`SIGN_IN_FAILURES_KEPT_MS`), here a day
                    // after `before_ms`: an hour's tries are never pruned early.
                    "DELETE FROM sign_in_failures WHERE at_ms < $1 - 86400000",
                ] {
                    pruned += connection.execute(sql(statement).bind(before_ms)).await?;
                }
                Ok(pruned)
            })
        })
        .await
    }
}
