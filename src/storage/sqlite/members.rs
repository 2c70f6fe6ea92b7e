//! `Members` on SQLite: tables `members` and `invites` (migration 0015). Redeeming a code is
//! one savepoint on the writer: the code checked and marked used, the member added or
//! linked.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::{SqliteStore, database_error, id_column};
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
const MEMBER_BY_ID: &str = concat!("SELECT ", member_columns!(), " FROM members WHERE id = ?");
const EVERY_MEMBER: &str = concat!("SELECT ", member_columns!(), " FROM members ORDER BY id");
const SAVE_MEMBER: &str = concat!(
    "INSERT OR REPLACE INTO members (",
    member_columns!(),
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
);

fn role_column(row: &SqliteRow, table: &str) -> Result<FamilyRole, StorageError> {
    let role: String = row.get("role");
    FamilyRole::parse(&role)
        .ok_or_else(|| StorageError::Corrupt(format!("{table}.role: {role:?} is no role")))
}

fn member_from_row(row: &SqliteRow) -> Result<StoredMember, StorageError> {
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
    connection: &mut SqliteConnection,
    id: &str,
) -> Result<Option<StoredMember>, StorageError> {
    let row = sqlx::query(MEMBER_BY_ID)
        .bind(id)
        .fetch_optional(&mut *connection)
        .await
        .map_err(database_error)?;
    row.as_ref().map(member_from_row).transpose()
}

async fn insert_member(
    connection: &mut SqliteConnection,
    member: &StoredMember,
) -> Result<(), StorageError> {
    sqlx::query(SAVE_MEMBER)
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
        .map_err(database_error)?;
    Ok(())
}

/// The stored member `user` is, if any.
async fn member_of_user(
    connection: &mut SqliteConnection,
    user: &PlatformUser,
) -> Result<Option<String>, StorageError> {
    let query = match user {
        PlatformUser::Telegram(id) => {
            sqlx::query_scalar("SELECT id FROM members WHERE telegram_user_id = ?").bind(*id)
        }
        PlatformUser::Matrix(id) => {
            sqlx::query_scalar("SELECT id FROM members WHERE matrix_user_id = ?").bind(id.clone())
        }
        // A visitor of the web page has no account any member could have.
        PlatformUser::WebVisitor(_) => return Ok(None),
    };
    query
        .fetch_optional(&mut *connection)
        .await
        .map_err(database_error)
}

async fn redeem_in(
    connection: &mut SqliteConnection,
    redeem: &Redeem,
) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
    let invite = sqlx::query(
        "SELECT purpose, role, name, member_id, created_by FROM invites \
         WHERE code_hash = ? AND used_at_ms IS NULL AND expires_at_ms > ?",
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
        let existing = member_by_id(connection, &member_id).await?;
        let member = match existing {
            Some(member) => member,
            None => {
                let id = member_id.parse().map_err(|error| {
                    StorageError::Corrupt(format!("invites.member_id: {error}"))
                })?;
                StoredMember::new(id, name, role, None, redeem.at_ms)
            }
        };
        let member = member.with_account(&redeem.user);
        insert_member(connection, &member).await?;
        Redeemed::Linked(member)
    } else {
        if owner.is_some() {
            return Ok(Err(RedeemRefused::AlreadyMember));
        }
        let name = name.or_else(|| redeem.name.clone());
        let choices = member_id_choices(name.as_deref(), &redeem.user, &redeem.reserved_ids);
        let mut free = None;
        for id in &choices {
            if member_by_id(connection, id.as_str()).await?.is_none() {
                free = Some(id.clone());
                break;
            }
        }
        let Some(id) = free else {
            return Ok(Err(RedeemRefused::NoFreeId));
        };
        let member = StoredMember::new(id, name, role, created_by.clone(), redeem.at_ms)
            .with_account(&redeem.user);
        insert_member(connection, &member).await?;
        Redeemed::Joined {
            member,
            invited_by: created_by,
        }
    };
    let used_by = match &redeemed {
        Redeemed::Joined { member, .. } | Redeemed::Linked(member) => member.id.to_string(),
    };
    sqlx::query("UPDATE invites SET used_at_ms = ?, used_by = ? WHERE code_hash = ?")
        .bind(redeem.at_ms)
        .bind(used_by)
        .bind(&redeem.code_hash)
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    Ok(Ok(redeemed))
}

#[async_trait]
impl Members for SqliteStore {
    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError> {
        let rows = sqlx::query(EVERY_MEMBER)
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        rows.iter().map(member_from_row).collect()
    }

    async fn create_invite(&self, invite: &NewInvite) -> Result<(), StorageError> {
        let invite = invite.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let (purpose, role, name, member) = match &invite.purpose {
                        InvitePurpose::Join { role, name } => ("join", *role, name.clone(), None),
                        InvitePurpose::Link { member, role, name } => {
                            ("link", *role, name.clone(), Some(member.to_string()))
                        }
                    };
                    sqlx::query(
                        "INSERT INTO invites (code_hash, purpose, role, name, member_id, \
                         created_by, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(&invite.code_hash)
                    .bind(purpose)
                    .bind(role.as_str())
                    .bind(name)
                    .bind(member)
                    .bind(invite.created_by.as_ref().map(MemberId::as_str))
                    .bind(invite.created_at_ms)
                    .bind(invite.expires_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    Ok(())
                })
            })
            .await
    }

    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError> {
        sqlx::query_scalar(
            "SELECT MAX(expires_at_ms) FROM invites \
             WHERE used_at_ms IS NULL AND expires_at_ms > ? AND purpose = 'join'",
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
        let redeem = redeem.clone();
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move { redeem_in(connection, &redeem).await })
            })
            .await
    }

    async fn save_member(&self, member: &StoredMember) -> Result<(), StorageError> {
        let member = member.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move { insert_member(connection, &member).await })
            })
            .await
    }

    async fn remove_member(&self, member: &MemberId) -> Result<bool, StorageError> {
        let member = member.to_string();
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM invites WHERE created_by = ? AND used_at_ms IS NULL")
                        .bind(&member)
                        .execute(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    // Whatever proved this member on HTTP goes with them, so someone
                    // given the same id later never inherits a session or a token.
                    for forget in [
                        "DELETE FROM web_sessions WHERE member_id = ?",
                        "DELETE FROM sign_in_links WHERE member_id = ?",
                        "DELETE FROM sign_in_codes WHERE member_id = ?",
                    ] {
                        sqlx::query(forget)
                            .bind(&member)
                            .execute(&mut *connection)
                            .await
                            .map_err(database_error)?;
                    }
                    sqlx::query(
                        "UPDATE member_tokens SET revoked_at_ms = ? \
                         WHERE member_id = ? AND revoked_at_ms IS NULL",
                    )
                    .bind(crate::ports::now_ms())
                    .bind(&member)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    let removed = sqlx::query("DELETE FROM members WHERE id = ?")
                        .bind(&member)
                        .execute(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    Ok(removed.rows_affected() > 0)
                })
            })
            .await
    }
}
