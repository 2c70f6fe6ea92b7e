//! `Members` on PostgreSQL: tables `members` and `invites`. Redeeming a code is one
//! transaction: the code's row locked as it is checked, the member added or linked, the
//! code marked used; a second process redeeming the same code waits for the first and
//! then finds it used. A new member's id is taken by an insert that yields to any row
//! holding it (or the account), so two joining at once never share one.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{PostgresStore, database_error, id_column};
use crate::ids::{FamilyRole, MemberId};
use crate::ports::{
    InvitePurpose, Members, NewInvite, PlatformUser, Redeem, RedeemRefused, Redeemed, StorageError,
    StoredMember, member_id_choices,
};

macro_rules! member_columns {
    () => {
        "id, name, role, telegram_user_id, matrix_user_id, added_by, added_at_ms, timezone, \
         preferred_channel"
    };
}
const MEMBER_BY_ID: &str = concat!("SELECT ", member_columns!(), " FROM members WHERE id = $1");
const EVERY_MEMBER: &str = concat!("SELECT ", member_columns!(), " FROM members ORDER BY id");
/// A member's row added or replaced; an account another member has is refused.
const SAVE_MEMBER: &str = concat!(
    "INSERT INTO members (",
    member_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO UPDATE SET \
     name = excluded.name, role = excluded.role, telegram_user_id = excluded.telegram_user_id, \
     matrix_user_id = excluded.matrix_user_id, added_by = excluded.added_by, \
     added_at_ms = excluded.added_at_ms, timezone = excluded.timezone, \
     preferred_channel = excluded.preferred_channel"
);
/// A new member's row, unless its id or one of its accounts is taken (then no row).
const ADD_MEMBER: &str = concat!(
    "INSERT INTO members (",
    member_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING RETURNING id"
);

fn role_column(row: &PgRow, table: &str) -> Result<FamilyRole, StorageError> {
    let role: String = row.get("role");
    FamilyRole::parse(&role)
        .ok_or_else(|| StorageError::Corrupt(format!("{table}.role: {role:?} is no role")))
}

fn member_from_row(row: &PgRow) -> Result<StoredMember, StorageError> {
    Ok(StoredMember {
        id: id_column(row, "members", "id")?,
        name: row.get("name"),
        role: role_column(row, "members")?,
        telegram_user_id: row.get("telegram_user_id"),
        matrix_user_id: row.get("matrix_user_id"),
        added_by: row
            .get::<Option<String>, _>("added_by")
            .map(|id| id.parse())
            .transpose()
            .map_err(|error| StorageError::Corrupt(format!("members.added_by: {error}")))?,
        added_at_ms: row.get("added_at_ms"),
        timezone: row.get("timezone"),
        preferred_channel: row.get("preferred_channel"),
    })
}

async fn member_by_id(
    connection: &mut PgConnection,
    id: &str,
) -> Result<Option<StoredMember>, StorageError> {
    let row = sqlx::query(MEMBER_BY_ID)
        .bind(id)
        .fetch_optional(&mut *connection)
        .await
        .map_err(database_error)?;
    row.as_ref().map(member_from_row).transpose()
}

/// Run `statement` (`SAVE_MEMBER` or `ADD_MEMBER`) for `member`; whether a row was written.
async fn write_member(
    connection: &mut PgConnection,
    statement: &'static str,
    member: &StoredMember,
) -> Result<bool, sqlx::Error> {
    sqlx::query(statement)
        .bind(member.id.as_str())
        .bind(&member.name)
        .bind(member.role.as_str())
        .bind(member.telegram_user_id)
        .bind(&member.matrix_user_id)
        .bind(member.added_by.as_ref().map(MemberId::as_str))
        .bind(member.added_at_ms)
        .bind(&member.timezone)
        .bind(&member.preferred_channel)
        .execute(&mut *connection)
        .await
        .map(|done| done.rows_affected() == 1)
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_unique_violation())
}

/// The stored member `user` is, if any.
async fn member_of_user(
    connection: &mut PgConnection,
    user: &PlatformUser,
) -> Result<Option<String>, StorageError> {
    let query = match user {
        PlatformUser::Telegram(id) => {
            sqlx::query_scalar("SELECT id FROM members WHERE telegram_user_id = $1").bind(*id)
        }
        PlatformUser::Matrix(id) => {
            sqlx::query_scalar("SELECT id FROM members WHERE matrix_user_id = $1").bind(id.clone())
        }
        // A visitor of the web page has no account any member could have.
        PlatformUser::WebVisitor(_) => return Ok(None),
    };
    query
        .fetch_optional(&mut *connection)
        .await
        .map_err(database_error)
}

/// Redeem in the caller's transaction; a refusal leaves it to be rolled back.
async fn redeem_in(
    connection: &mut PgConnection,
    redeem: &Redeem,
) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
    let invite = sqlx::query(
        "SELECT purpose, role, name, member_id, created_by FROM invites \
         WHERE code_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2 FOR UPDATE",
    )
    .bind(&redeem.code_hash)
    .bind(redeem.at_ms)
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)?;
    let Some(invite) = invite else {
        return Ok(Err(RedeemRefused::NoSuchCode));
    };
    let owner = member_of_user(connection, &redeem.user).await?;
    let purpose: String = invite.get("purpose");
    let role = role_column(&invite, "invites")?;
    let name: Option<String> = invite.get("name");
    let created_by: Option<MemberId> = invite
        .get::<Option<String>, _>("created_by")
        .map(|id| id.parse())
        .transpose()
        .map_err(|error| StorageError::Corrupt(format!("invites.created_by: {error}")))?;
    let redeemed = if purpose == "link" {
        let member_id: String = invite
            .get::<Option<String>, _>("member_id")
            .ok_or_else(|| StorageError::Corrupt("invites.member_id: missing for a link".into()))?;
        if owner.as_ref().is_some_and(|owner| *owner != member_id) {
            return Ok(Err(RedeemRefused::AlreadyMember));
        }
        let member = match member_by_id(connection, &member_id).await? {
            Some(member) => member,
            None => {
                let id = member_id.parse().map_err(|error| {
                    StorageError::Corrupt(format!("invites.member_id: {error}"))
                })?;
                StoredMember::new(id, name, role, None, redeem.at_ms)
            }
        };
        let member = member.with_account(&redeem.user);
        match write_member(connection, SAVE_MEMBER, &member).await {
            Ok(_) => {}
            // Another process linked the account to someone else meanwhile.
            Err(error) if is_unique_violation(&error) => {
                return Ok(Err(RedeemRefused::AlreadyMember));
            }
            Err(error) => return Err(database_error(error)),
        }
        Redeemed::Linked(member)
    } else {
        if owner.is_some() {
            return Ok(Err(RedeemRefused::AlreadyMember));
        }
        let name = name.or_else(|| redeem.name.clone());
        let choices = member_id_choices(name.as_deref(), &redeem.user, &redeem.reserved_ids);
        let mut added = None;
        for id in choices {
            let member =
                StoredMember::new(id, name.clone(), role, created_by.clone(), redeem.at_ms)
                    .with_account(&redeem.user);
            if write_member(connection, ADD_MEMBER, &member)
                .await
                .map_err(database_error)?
            {
                added = Some(member);
                break;
            }
            // The id is taken, or the account joined meanwhile as someone else.
            if member_of_user(connection, &redeem.user).await?.is_some() {
                return Ok(Err(RedeemRefused::AlreadyMember));
            }
        }
        let Some(member) = added else {
            return Ok(Err(RedeemRefused::NoFreeId));
        };
        Redeemed::Joined {
            member,
            invited_by: created_by,
        }
    };
    let used_by = match &redeemed {
        Redeemed::Joined { member, .. } | Redeemed::Linked(member) => member.id.to_string(),
    };
    sqlx::query("UPDATE invites SET used_at_ms = $1, used_by = $2 WHERE code_hash = $3")
        .bind(redeem.at_ms)
        .bind(used_by)
        .bind(&redeem.code_hash)
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    Ok(Ok(redeemed))
}

#[async_trait]
impl Members for PostgresStore {
    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError> {
        let rows = sqlx::query(EVERY_MEMBER)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        rows.iter().map(member_from_row).collect()
    }

    async fn create_invite(&self, invite: &NewInvite) -> Result<(), StorageError> {
        let (purpose, role, name, member) = match &invite.purpose {
            InvitePurpose::Join { role, name } => ("join", *role, name.as_deref(), None),
            InvitePurpose::Link { member, role, name } => {
                ("link", *role, name.as_deref(), Some(member.as_str()))
            }
        };
        sqlx::query(
            "INSERT INTO invites (code_hash, purpose, role, name, member_id, created_by, \
             created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&invite.code_hash)
        .bind(purpose)
        .bind(role.as_str())
        .bind(name)
        .bind(member)
        .bind(invite.created_by.as_ref().map(MemberId::as_str))
        .bind(invite.created_at_ms)
        .bind(invite.expires_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError> {
        sqlx::query_scalar(
            "SELECT MAX(expires_at_ms) FROM invites \
             WHERE used_at_ms IS NULL AND expires_at_ms > $1 AND purpose = 'join'",
        )
        .bind(now_ms)
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)
    }

    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        let redeemed = redeem_in(&mut transaction, redeem).await?;
        // A refused code stays unused: nothing of the attempt is kept.
        if redeemed.is_ok() {
            transaction.commit().await.map_err(database_error)?;
        }
        Ok(redeemed)
    }

    async fn save_member(&self, member: &StoredMember) -> Result<(), StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        write_member(&mut connection, SAVE_MEMBER, member)
            .await
            .map(|_| ())
            .map_err(database_error)
    }

    async fn remove_member(&self, member: &MemberId) -> Result<bool, StorageError> {
        let member = member.as_str();
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        // Whatever proved this member on HTTP goes with them, so someone given the same id
        // later never inherits a session or a token.
        for forget in [
            "DELETE FROM invites WHERE created_by = $1 AND used_at_ms IS NULL",
            "DELETE FROM web_sessions WHERE member_id = $1",
            "DELETE FROM sign_in_links WHERE member_id = $1",
            "DELETE FROM sign_in_codes WHERE member_id = $1",
        ] {
            sqlx::query(forget)
                .bind(member)
                .execute(&mut *transaction)
                .await
                .map_err(database_error)?;
        }
        sqlx::query(
            "UPDATE member_tokens SET revoked_at_ms = $1 \
             WHERE member_id = $2 AND revoked_at_ms IS NULL",
        )
        .bind(crate::ports::now_ms())
        .bind(member)
        .execute(&mut *transaction)
        .await
        .map_err(database_error)?;
        let removed = sqlx::query("DELETE FROM members WHERE id = $1")
            .bind(member)
            .execute(&mut *transaction)
            .await
            .map_err(database_error)?;
        transaction.commit().await.map_err(database_error)?;
        Ok(removed.rows_affected() > 0)
    }
}
