//! `Members` on PostgreSQL: tables `members`, `invites`, `join_failures` and
//! `family_version`. Every change of the family is one transaction that first takes the
//! family's advisory lock, so changes made on several workers at once are made one after
//! the other, each deciding on the family as the one before left it (two parents demoting
//! each other never leave the family without one); it moves the family's version when it
//! changes something, and writes only the columns it changes.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{PostgresStore, database_error, id_column};
use crate::ids::{FamilyRole, MemberId};
use crate::ports::{
    ChangeRefused, ConfiguredMembers, InvitePurpose, JOIN_FAILURES_KEPT_MS, Locked, MemberChange,
    MemberChangeKind, Members, NewInvite, PlatformUser, Redeem, RedeemRefused, Redeemed,
    StorageError, StoredFamily, StoredMember, check_change, check_invite, join_locked,
    member_id_choices,
};

macro_rules! member_columns {
    () => {
        "id, name, role, telegram_user_id, matrix_user_id, added_by, added_at_ms, timezone, \
         preferred_channel"
    };
}
const EVERY_MEMBER: &str = concat!("SELECT ", member_columns!(), " FROM members ORDER BY id");
const ADD_MEMBER: &str = concat!(
    "INSERT INTO members (",
    member_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
);
const OPEN_UNTIL: &str = "SELECT MAX(expires_at_ms) FROM invites \
     WHERE used_at_ms IS NULL AND expires_at_ms > $1 AND purpose = 'join'";
const OPEN_INVITE: &str = "SELECT purpose, role, name, member_id, created_by FROM invites \
     WHERE code_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2";

fn role_column(row: &PgRow, table: &str) -> Result<FamilyRole, StorageError> {
    let role: String = row.get("role");
    FamilyRole::parse(&role)
        .ok_or_else(|| StorageError::Corrupt(format!("{table}.role: {role:?} is no role")))
}

fn optional_id(row: &PgRow, table: &str, column: &str) -> Result<Option<MemberId>, StorageError> {
    row.get::<Option<String>, _>(column)
        .map(|id| id.parse())
        .transpose()
        .map_err(|error| StorageError::Corrupt(format!("{table}.{column}: {error}")))
}

fn member_from_row(row: &PgRow) -> Result<StoredMember, StorageError> {
    Ok(StoredMember {
        id: id_column(row, "members", "id")?,
        name: row.get("name"),
        role: role_column(row, "members")?,
        telegram_user_id: row.get("telegram_user_id"),
        matrix_user_id: row.get("matrix_user_id"),
        added_by: optional_id(row, "members", "added_by")?,
        added_at_ms: row.get("added_at_ms"),
        timezone: row.get("timezone"),
        preferred_channel: row.get("preferred_channel"),
    })
}

async fn every_member(connection: &mut PgConnection) -> Result<Vec<StoredMember>, StorageError> {
    let rows = sqlx::query(EVERY_MEMBER)
        .fetch_all(&mut *connection)
        .await
        .map_err(database_error)?;
    rows.iter().map(member_from_row).collect()
}

/// The family's changes take turns: held until the transaction ends.
async fn take_turn(connection: &mut PgConnection) -> Result<(), StorageError> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('hearth family', 0))")
        .execute(&mut *connection)
        .await
        .map(|_| ())
        .map_err(database_error)
}

/// Move the family's version on: every change that changes something does.
async fn next_version(connection: &mut PgConnection) -> Result<(), StorageError> {
    sqlx::query(
        "INSERT INTO family_version (id, version) VALUES (1, 1) \
         ON CONFLICT (id) DO UPDATE SET version = family_version.version + 1",
    )
    .execute(&mut *connection)
    .await
    .map(|_| ())
    .map_err(database_error)
}

async fn insert_member(
    connection: &mut PgConnection,
    member: &StoredMember,
) -> Result<(), sqlx::Error> {
    sqlx::query(ADD_MEMBER)
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
        .map(|_| ())
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|error| error.is_unique_violation())
}

/// `member`'s account on `user`'s platform set to `user`, and nothing else: a new row for
/// a member of the configuration who has none.
async fn set_account(
    connection: &mut PgConnection,
    member: &StoredMember,
    user: &PlatformUser,
) -> Result<(), sqlx::Error> {
    let updated = match user {
        PlatformUser::Telegram(id) => {
            sqlx::query("UPDATE members SET telegram_user_id = $1 WHERE id = $2").bind(*id)
        }
        PlatformUser::Matrix(id) => {
            sqlx::query("UPDATE members SET matrix_user_id = $1 WHERE id = $2").bind(id.clone())
        }
        PlatformUser::WebVisitor(_) => return Ok(()),
    }
    .bind(member.id.as_str())
    .execute(&mut *connection)
    .await?;
    if updated.rows_affected() == 0 {
        insert_member(connection, &member.clone().with_account(user)).await?;
    }
    Ok(())
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

async fn spend(
    connection: &mut PgConnection,
    code_hash: &str,
    member: &MemberId,
    at_ms: i64,
) -> Result<(), StorageError> {
    sqlx::query("UPDATE invites SET used_at_ms = $1, used_by = $2 WHERE code_hash = $3")
        .bind(at_ms)
        .bind(member.as_str())
        .bind(code_hash)
        .execute(&mut *connection)
        .await
        .map(|_| ())
        .map_err(database_error)
}

async fn join_lock(
    connection: &mut PgConnection,
    source: &str,
    now_ms: i64,
) -> Result<Option<Locked>, StorageError> {
    sqlx::query("DELETE FROM join_failures WHERE at_ms <= $1")
        .bind(now_ms - JOIN_FAILURES_KEPT_MS)
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    let failures: Vec<(String, i64)> = sqlx::query_as("SELECT source, at_ms FROM join_failures")
        .fetch_all(&mut *connection)
        .await
        .map_err(database_error)?;
    Ok(join_locked(&failures, source, now_ms))
}

/// Redeem in the caller's transaction (which holds the family's turn).
async fn redeem_in(
    connection: &mut PgConnection,
    redeem: &Redeem,
) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
    if let Some(locked) = join_lock(connection, &redeem.source, redeem.at_ms).await? {
        return Ok(Err(RedeemRefused::Limited(locked)));
    }
    let invite = sqlx::query(OPEN_INVITE)
        .bind(&redeem.code_hash)
        .bind(redeem.at_ms)
        .fetch_optional(&mut *connection)
        .await
        .map_err(database_error)?;
    let stored = every_member(connection).await?;
    let first_parent_code = invite
        .as_ref()
        .is_some_and(|invite| invite.get::<Option<String>, _>("created_by").is_none());
    let invite = match invite {
        // Set-up's code yields once the family has a parent: spent for good.
        Some(_) if first_parent_code && !redeem.configured.parents_in(&stored).is_empty() => {
            sqlx::query("UPDATE invites SET expires_at_ms = $1 WHERE code_hash = $2")
                .bind(redeem.at_ms)
                .bind(&redeem.code_hash)
                .execute(&mut *connection)
                .await
                .map_err(database_error)?;
            None
        }
        invite => invite,
    };
    let Some(invite) = invite else {
        sqlx::query("INSERT INTO join_failures (source, at_ms) VALUES ($1, $2)")
            .bind(&redeem.source)
            .bind(redeem.at_ms)
            .execute(&mut *connection)
            .await
            .map_err(database_error)?;
        return Ok(Err(RedeemRefused::NoSuchCode));
    };
    let owner = member_of_user(connection, &redeem.user).await?;
    let role = role_column(&invite, "invites")?;
    let name: Option<String> = invite.get("name");
    let created_by = optional_id(&invite, "invites", "created_by")?;
    if invite.get::<String, _>("purpose") == "link" {
        let member_id: MemberId = optional_id(&invite, "invites", "member_id")?
            .ok_or_else(|| StorageError::Corrupt("invites.member_id: missing for a link".into()))?;
        if owner
            .as_ref()
            .is_some_and(|owner| owner != member_id.as_str())
        {
            return Ok(Err(RedeemRefused::AlreadyMember));
        }
        let member = stored
            .into_iter()
            .find(|row| row.id == member_id)
            .unwrap_or_else(|| StoredMember::new(member_id, name, role, None, redeem.at_ms));
        return link_in(connection, redeem, member).await;
    }
    if owner.is_some() {
        return Ok(Err(RedeemRefused::AlreadyMember));
    }
    let name = name.or_else(|| redeem.name.clone());
    let reserved = redeem.configured.ids();
    let choices = member_id_choices(name.as_deref(), &redeem.user, &reserved);
    let Some(id) = choices
        .into_iter()
        .find(|id| !stored.iter().any(|row| row.id == *id))
    else {
        return Ok(Err(RedeemRefused::NoFreeId));
    };
    next_version(connection).await?;
    let member = StoredMember::new(id, name, role, created_by.clone(), redeem.at_ms)
        .with_account(&redeem.user);
    insert_member(connection, &member)
        .await
        .map_err(database_error)?;
    spend(connection, &redeem.code_hash, &member.id, redeem.at_ms).await?;
    if role == FamilyRole::Parent {
        // The family has a parent: set-up's code is no longer needed.
        sqlx::query(
            "UPDATE invites SET expires_at_ms = $1 WHERE created_by IS NULL \
             AND used_at_ms IS NULL AND expires_at_ms > $1",
        )
        .bind(redeem.at_ms)
        .execute(&mut *connection)
        .await
        .map_err(database_error)?;
    }
    Ok(Ok(Redeemed::Joined {
        member,
        invited_by: created_by,
    }))
}

/// A `/link` code of `member` used by `redeem.user`: linked, theirs already, or waiting
/// for their yes when they have another account on that platform.
async fn link_in(
    connection: &mut PgConnection,
    redeem: &Redeem,
    member: StoredMember,
) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
    if member.has_account(&redeem.user) {
        spend(connection, &redeem.code_hash, &member.id, redeem.at_ms).await?;
        return Ok(Ok(Redeemed::AlreadyTheirs(member)));
    }
    if member.account_like(&redeem.user).is_some() {
        sqlx::query("UPDATE invites SET switch_to = $1 WHERE code_hash = $2")
            .bind(redeem.user.key())
            .bind(&redeem.code_hash)
            .execute(&mut *connection)
            .await
            .map_err(database_error)?;
        return Ok(Ok(Redeemed::SwitchAsked(member)));
    }
    next_version(connection).await?;
    match set_account(connection, &member, &redeem.user).await {
        Ok(()) => {}
        Err(error) if is_unique_violation(&error) => {
            return Ok(Err(RedeemRefused::AlreadyMember));
        }
        Err(error) => return Err(database_error(error)),
    }
    spend(connection, &redeem.code_hash, &member.id, redeem.at_ms).await?;
    Ok(Ok(Redeemed::Linked(member.with_account(&redeem.user))))
}

async fn confirm_switch_in(
    connection: &mut PgConnection,
    member: &MemberId,
    channel: &str,
    at_ms: i64,
) -> Result<Option<(StoredMember, PlatformUser)>, StorageError> {
    let waiting: Option<(String, String)> = sqlx::query_as(
        "SELECT code_hash, switch_to FROM invites WHERE purpose = 'link' AND member_id = $1 \
         AND used_at_ms IS NULL AND expires_at_ms > $2 AND switch_to LIKE $3 \
         ORDER BY created_at_ms DESC LIMIT 1",
    )
    .bind(member.as_str())
    .bind(at_ms)
    .bind(format!("{channel}:%"))
    .fetch_optional(&mut *connection)
    .await
    .map_err(database_error)?;
    let Some((code_hash, switch_to)) = waiting else {
        return Ok(None);
    };
    let Some(user) = PlatformUser::from_key(&switch_to) else {
        return Err(StorageError::Corrupt(format!(
            "invites.switch_to: {switch_to:?} is no account"
        )));
    };
    let stored = every_member(connection).await?;
    let Some(row) = stored.into_iter().find(|row| row.id == *member) else {
        return Ok(None);
    };
    if member_of_user(connection, &user).await?.is_some() {
        return Ok(None);
    }
    next_version(connection).await?;
    set_account(connection, &row, &user)
        .await
        .map_err(database_error)?;
    spend(connection, &code_hash, member, at_ms).await?;
    Ok(Some((row.with_account(&user), user)))
}

async fn change_in(
    connection: &mut PgConnection,
    change: &MemberChange,
) -> Result<Result<StoredMember, ChangeRefused>, StorageError> {
    let stored = every_member(connection).await?;
    let changed = match check_change(change, &stored) {
        Ok(changed) => changed,
        Err(refused) => return Ok(Err(refused)),
    };
    next_version(connection).await?;
    let member = change.target.as_str();
    match change.kind {
        MemberChangeKind::SetRole(role) => {
            sqlx::query("UPDATE members SET role = $1 WHERE id = $2")
                .bind(role.as_str())
                .bind(member)
                .execute(&mut *connection)
                .await
                .map_err(database_error)?;
            if role == FamilyRole::Child {
                // A child invites nobody: their unused codes for a parent go.
                sqlx::query(
                    "DELETE FROM invites WHERE created_by = $1 AND purpose = 'join' \
                     AND role = 'parent' AND used_at_ms IS NULL",
                )
                .bind(member)
                .execute(&mut *connection)
                .await
                .map_err(database_error)?;
            }
        }
        MemberChangeKind::Remove => {
            // Whatever proved this member on HTTP goes with them, so someone given the
            // same id later never inherits a session or a token.
            for forget in [
                "DELETE FROM invites WHERE created_by = $1 AND used_at_ms IS NULL",
                "DELETE FROM web_sessions WHERE member_id = $1",
                "DELETE FROM sign_in_links WHERE member_id = $1",
                "DELETE FROM sign_in_codes WHERE member_id = $1",
                "DELETE FROM members WHERE id = $1",
            ] {
                sqlx::query(forget)
                    .bind(member)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
            }
            sqlx::query(
                "UPDATE member_tokens SET revoked_at_ms = $1 \
                 WHERE member_id = $2 AND revoked_at_ms IS NULL",
            )
            .bind(change.at_ms)
            .bind(member)
            .execute(&mut *connection)
            .await
            .map_err(database_error)?;
        }
    }
    Ok(Ok(changed))
}

async fn create_invite_in(
    connection: &mut PgConnection,
    invite: &NewInvite,
    configured: &ConfiguredMembers,
) -> Result<Result<(), ChangeRefused>, StorageError> {
    let stored = every_member(connection).await?;
    if let Err(refused) = check_invite(invite, configured, &stored) {
        return Ok(Err(refused));
    }
    let (purpose, role, name, member) = match &invite.purpose {
        InvitePurpose::Join { role, name } => ("join", *role, name.as_deref(), None),
        InvitePurpose::Link { member, role, name } => {
            ("link", *role, name.as_deref(), Some(member.as_str()))
        }
    };
    if purpose == "join" {
        // The window a stranger's room invite is accepted in changed.
        next_version(connection).await?;
    }
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
    .execute(&mut *connection)
    .await
    .map_err(database_error)?;
    Ok(Ok(()))
}

impl PostgresStore {
    /// A transaction of its own for a change of the family, holding the family's turn
    /// until it ends.
    async fn begin_family_change(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StorageError> {
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        take_turn(&mut transaction).await?;
        Ok(transaction)
    }
}

/// Commit `transaction` and hand back `outcome` (a refusal is committed too: it keeps
/// what it counted, a wrong code).
async fn committed<T>(
    transaction: sqlx::Transaction<'static, sqlx::Postgres>,
    outcome: T,
) -> Result<T, StorageError> {
    transaction.commit().await.map_err(database_error)?;
    Ok(outcome)
}

#[async_trait]
impl Members for PostgresStore {
    async fn family_version(&self) -> Result<i64, StorageError> {
        let version: i64 = sqlx::query_scalar(
            "SELECT COALESCE((SELECT version FROM family_version WHERE id = 1), 0)",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(database_error)?;
        self.known_facts.family_read(version);
        Ok(version)
    }

    async fn stored_family(&self) -> Result<StoredFamily, StorageError> {
        // One snapshot: the version and what it numbers read together.
        let mut reading = self.pool.begin().await.map_err(database_error)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *reading)
            .await
            .map_err(database_error)?;
        let version: i64 =
            sqlx::query_scalar("SELECT COALESCE((SELECT version FROM family_version), 0)")
                .fetch_one(&mut *reading)
                .await
                .map_err(database_error)?;
        let members = every_member(&mut reading).await?;
        let open_until_ms = sqlx::query_scalar(OPEN_UNTIL)
            .bind(i64::MIN)
            .fetch_one(&mut *reading)
            .await
            .map_err(database_error)?;
        reading.commit().await.map_err(database_error)?;
        self.known_facts.family_read(version);
        Ok(StoredFamily {
            version,
            members,
            open_until_ms,
        })
    }

    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError> {
        let mut connection = self.pool.acquire().await.map_err(database_error)?;
        every_member(&mut connection).await
    }

    async fn create_invite(
        &self,
        invite: &NewInvite,
        configured: &ConfiguredMembers,
    ) -> Result<Result<(), ChangeRefused>, StorageError> {
        let mut transaction = self.begin_family_change().await?;
        let outcome = create_invite_in(&mut transaction, invite, configured).await?;
        committed(transaction, outcome).await
    }

    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError> {
        sqlx::query_scalar(OPEN_UNTIL)
            .bind(now_ms)
            .fetch_one(&self.pool)
            .await
            .map_err(database_error)
    }

    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
        let mut transaction = self.begin_family_change().await?;
        let outcome = redeem_in(&mut transaction, redeem).await?;
        committed(transaction, outcome).await
    }

    async fn confirm_switch(
        &self,
        member: &MemberId,
        channel: &str,
        at_ms: i64,
    ) -> Result<Option<(StoredMember, PlatformUser)>, StorageError> {
        let mut transaction = self.begin_family_change().await?;
        let outcome = confirm_switch_in(&mut transaction, member, channel, at_ms).await?;
        committed(transaction, outcome).await
    }

    async fn save_settings(
        &self,
        member: &MemberId,
        timezone: Option<&str>,
        preferred_channel: Option<&str>,
        new_row: &StoredMember,
    ) -> Result<(), StorageError> {
        let mut transaction = self.begin_family_change().await?;
        next_version(&mut transaction).await?;
        let updated =
            sqlx::query("UPDATE members SET timezone = $1, preferred_channel = $2 WHERE id = $3")
                .bind(timezone)
                .bind(preferred_channel)
                .bind(member.as_str())
                .execute(&mut *transaction)
                .await
                .map_err(database_error)?;
        if updated.rows_affected() == 0 {
            let mut row = new_row.clone();
            row.timezone = timezone.map(str::to_string);
            row.preferred_channel = preferred_channel.map(str::to_string);
            insert_member(&mut transaction, &row)
                .await
                .map_err(database_error)?;
        }
        committed(transaction, ()).await
    }

    async fn change_member(
        &self,
        change: &MemberChange,
    ) -> Result<Result<StoredMember, ChangeRefused>, StorageError> {
        let mut transaction = self.begin_family_change().await?;
        let outcome = change_in(&mut transaction, change).await?;
        committed(transaction, outcome).await
    }
}
