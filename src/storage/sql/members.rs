//! `Members` on either SQL database: tables `members`, `invites`, `join_failures` and
//! `family_version`. Every change of the family is one transaction that first takes the
//! family's turn (`take_turns`: PostgreSQL's advisory lock; SQLite's one writer runs one
//! at a time already), so changes made on several workers at once are made one after the
//! other, each deciding on the family as the one before left it (two parents demoting each
//! other never leave the family without one); it moves the family's version when it
//! changes something, and writes only the columns it changes. The stored family is read by
//! one statement, one snapshot on either database. Each reading of the version is told to
//! the backend (`SqlBackend::family_read`: PostgreSQL keeps members' facts under it).

use async_trait::async_trait;

use super::{SqlBackend, SqlConnection, SqlRow, Statement, id_column, sql, take_turns};
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
macro_rules! version {
    () => {
        "SELECT COALESCE((SELECT version FROM family_version WHERE id = 1), 0)"
    };
}
/// The latest expiry of the unused codes adding a member, after `$1`.
macro_rules! open_until {
    () => {
        "SELECT MAX(expires_at_ms) FROM invites \
         WHERE used_at_ms IS NULL AND expires_at_ms > $1 AND purpose = 'join'"
    };
}
const EVERY_MEMBER: &str = concat!("SELECT ", member_columns!(), " FROM members ORDER BY id");
/// The invite of a code while it can be used.
const OPEN_INVITE: &str = "SELECT purpose, role, name, member_id, created_by FROM invites \
     WHERE code_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2";

fn role_column(row: &impl SqlRow, table: &str) -> Result<FamilyRole, StorageError> {
    let role = row.text("role")?;
    FamilyRole::parse(&role)
        .ok_or_else(|| StorageError::Corrupt(format!("{table}.role: {role:?} is no role")))
}

fn optional_id(
    row: &impl SqlRow,
    table: &str,
    column: &str,
) -> Result<Option<MemberId>, StorageError> {
    row.optional_text(column)?
        .map(|id| id.parse())
        .transpose()
        .map_err(|error| StorageError::Corrupt(format!("{table}.{column}: {error}")))
}

fn member_from_row(row: &impl SqlRow) -> Result<StoredMember, StorageError> {
    Ok(StoredMember {
        id: id_column(row, "members", "id")?,
        name: row.optional_text("name")?,
        role: role_column(row, "members")?,
        telegram_user_id: row.optional_integer("telegram_user_id")?,
        matrix_user_id: row.optional_text("matrix_user_id")?,
        added_by: optional_id(row, "members", "added_by")?,
        added_at_ms: row.integer("added_at_ms")?,
        timezone: row.optional_text("timezone")?,
        preferred_channel: row.optional_text("preferred_channel")?,
    })
}

async fn every_member(
    connection: &mut impl SqlConnection,
) -> Result<Vec<StoredMember>, StorageError> {
    let rows = connection.fetch(sql(EVERY_MEMBER)).await?;
    rows.iter().map(member_from_row).collect()
}

/// Move the family's version on: every change that changes something does.
async fn next_version(connection: &mut impl SqlConnection) -> Result<(), StorageError> {
    let next = sql("INSERT INTO family_version (id, version) VALUES (1, 1) \
         ON CONFLICT (id) DO UPDATE SET version = family_version.version + 1");
    connection.execute(next).await.map(drop)
}

async fn insert_member(
    connection: &mut impl SqlConnection,
    member: &StoredMember,
) -> Result<(), StorageError> {
    let insert = sql(concat!(
        "INSERT INTO members (",
        member_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    ))
    .bind(member.id.as_str())
    .bind(&member.name)
    .bind(member.role.as_str())
    .bind(member.telegram_user_id)
    .bind(&member.matrix_user_id)
    .bind(member.added_by.as_ref().map(MemberId::as_str))
    .bind(member.added_at_ms)
    .bind(&member.timezone)
    .bind(&member.preferred_channel);
    connection.execute(insert).await.map(drop)
}

/// The statement of `user`'s platform (`telegram` or `matrix`), `user`'s account bound as
/// its `$1`; `None` for a visitor of the web page, who has no account any member could have.
fn with_account(
    user: &PlatformUser,
    telegram: &'static str,
    matrix: &'static str,
) -> Option<Statement> {
    match user {
        PlatformUser::Telegram(id) => Some(sql(telegram).bind(*id)),
        PlatformUser::Matrix(id) => Some(sql(matrix).bind(id)),
        PlatformUser::WebVisitor(_) => None,
    }
}

/// `member`'s account on `user`'s platform set to `user`, and nothing else: a new row for
/// a member of the configuration who has none. The caller found the account nobody's in
/// the family's turn, so no other member can hold it meanwhile.
async fn set_account(
    connection: &mut impl SqlConnection,
    member: &StoredMember,
    user: &PlatformUser,
) -> Result<(), StorageError> {
    let Some(update) = with_account(
        user,
        "UPDATE members SET telegram_user_id = $1 WHERE id = $2",
        "UPDATE members SET matrix_user_id = $1 WHERE id = $2",
    ) else {
        return Ok(());
    };
    if connection.execute(update.bind(member.id.as_str())).await? == 0 {
        insert_member(connection, &member.clone().with_account(user)).await?;
    }
    Ok(())
}

/// The stored member `user` is, if any.
async fn member_of_user(
    connection: &mut impl SqlConnection,
    user: &PlatformUser,
) -> Result<Option<String>, StorageError> {
    let Some(select) = with_account(
        user,
        "SELECT id FROM members WHERE telegram_user_id = $1",
        "SELECT id FROM members WHERE matrix_user_id = $1",
    ) else {
        return Ok(None);
    };
    let row = connection.fetch_optional(select).await?;
    row.map(|row| row.text("id")).transpose()
}

/// Mark code `code_hash` used by `member`.
async fn spend(
    connection: &mut impl SqlConnection,
    code_hash: &str,
    member: &MemberId,
    at_ms: i64,
) -> Result<(), StorageError> {
    let spend = sql("UPDATE invites SET used_at_ms = $1, used_by = $2 WHERE code_hash = $3");
    let spend = spend.bind(at_ms).bind(member.as_str()).bind(code_hash);
    connection.execute(spend).await.map(drop)
}

/// Whether `source` may try a code now; a wrong one is counted by the caller.
async fn join_lock(
    connection: &mut impl SqlConnection,
    source: &str,
    now_ms: i64,
) -> Result<Option<Locked>, StorageError> {
    let forget = sql("DELETE FROM join_failures WHERE at_ms <= $1");
    (connection.execute(forget.bind(now_ms - JOIN_FAILURES_KEPT_MS))).await?;
    let rows = (connection.fetch(sql("SELECT source, at_ms FROM join_failures"))).await?;
    let failures = rows
        .iter()
        .map(|row| Ok((row.text("source")?, row.integer("at_ms")?)))
        .collect::<Result<Vec<_>, StorageError>>()?;
    Ok(join_locked(&failures, source, now_ms))
}

/// Redeem in the caller's transaction (which holds the family's turn).
async fn redeem_in(
    connection: &mut impl SqlConnection,
    redeem: &Redeem,
) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
    if let Some(locked) = join_lock(connection, &redeem.source, redeem.at_ms).await? {
        return Ok(Err(RedeemRefused::Limited(locked)));
    }
    let invite = sql(OPEN_INVITE).bind(&redeem.code_hash).bind(redeem.at_ms);
    let invite = connection.fetch_optional(invite).await?;
    let stored = every_member(connection).await?;
    let first_parent_code = match &invite {
        Some(invite) => invite.optional_text("created_by")?.is_none(),
        None => false,
    };
    let invite = match invite {
        // Set-up's code yields once the family has a parent: spent for good.
        Some(_) if first_parent_code && !redeem.configured.parents_in(&stored).is_empty() => {
            let spent = sql("UPDATE invites SET expires_at_ms = $1 WHERE code_hash = $2");
            (connection.execute(spent.bind(redeem.at_ms).bind(&redeem.code_hash))).await?;
            None
        }
        invite => invite,
    };
    let Some(invite) = invite else {
        let failed = sql("INSERT INTO join_failures (source, at_ms) VALUES ($1, $2)");
        (connection.execute(failed.bind(&redeem.source).bind(redeem.at_ms))).await?;
        return Ok(Err(RedeemRefused::NoSuchCode));
    };
    let owner = member_of_user(connection, &redeem.user).await?;
    let role = role_column(&invite, "invites")?;
    let name = invite.optional_text("name")?;
    let created_by = optional_id(&invite, "invites", "created_by")?;
    if invite.text("purpose")? == "link" {
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
        return link_in(connection, redeem, member).await.map(Ok);
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
    insert_member(connection, &member).await?;
    spend(connection, &redeem.code_hash, &member.id, redeem.at_ms).await?;
    if role == FamilyRole::Parent {
        // The family has a parent: set-up's code is no longer needed.
        let expire = sql(
            "UPDATE invites SET expires_at_ms = $1 WHERE created_by IS NULL \
             AND used_at_ms IS NULL AND expires_at_ms > $1",
        );
        connection.execute(expire.bind(redeem.at_ms)).await?;
    }
    Ok(Ok(Redeemed::Joined {
        member,
        invited_by: created_by,
    }))
}

/// A `/link` code of `member` used by `redeem.user`: linked, theirs already, or waiting
/// for their yes when they have another account on that platform.
async fn link_in(
    connection: &mut impl SqlConnection,
    redeem: &Redeem,
    member: StoredMember,
) -> Result<Redeemed, StorageError> {
    if member.has_account(&redeem.user) {
        spend(connection, &redeem.code_hash, &member.id, redeem.at_ms).await?;
        return Ok(Redeemed::AlreadyTheirs(member));
    }
    if member.account_like(&redeem.user).is_some() {
        let ask = sql("UPDATE invites SET switch_to = $1 WHERE code_hash = $2");
        (connection.execute(ask.bind(redeem.user.key()).bind(&redeem.code_hash))).await?;
        return Ok(Redeemed::SwitchAsked(member));
    }
    next_version(connection).await?;
    set_account(connection, &member, &redeem.user).await?;
    spend(connection, &redeem.code_hash, &member.id, redeem.at_ms).await?;
    Ok(Redeemed::Linked(member.with_account(&redeem.user)))
}

async fn confirm_switch_in(
    connection: &mut impl SqlConnection,
    member: &MemberId,
    channel: &str,
    at_ms: i64,
) -> Result<Option<(StoredMember, PlatformUser)>, StorageError> {
    let waiting = sql(
        "SELECT code_hash, switch_to FROM invites WHERE purpose = 'link' AND member_id = $1 \
         AND used_at_ms IS NULL AND expires_at_ms > $2 AND switch_to LIKE $3 \
         ORDER BY created_at_ms DESC LIMIT 1",
    )
    .bind(member.as_str())
    .bind(at_ms)
    .bind(format!("{channel}:%"));
    let Some(waiting) = connection.fetch_optional(waiting).await? else {
        return Ok(None);
    };
    let switch_to = waiting.text("switch_to")?;
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
    set_account(connection, &row, &user).await?;
    spend(connection, &waiting.text("code_hash")?, member, at_ms).await?;
    Ok(Some((row.with_account(&user), user)))
}

async fn change_in(
    connection: &mut impl SqlConnection,
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
            let set = sql("UPDATE members SET role = $1 WHERE id = $2");
            connection
                .execute(set.bind(role.as_str()).bind(member))
                .await?;
            if role == FamilyRole::Child {
                // A child invites nobody: their unused codes for a parent go.
                let forget = sql(
                    "DELETE FROM invites WHERE created_by = $1 AND purpose = 'join' \
                     AND role = 'parent' AND used_at_ms IS NULL",
                );
                connection.execute(forget.bind(member)).await?;
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
                connection.execute(sql(forget).bind(member)).await?;
            }
            let revoke = sql("UPDATE member_tokens SET revoked_at_ms = $1 \
                 WHERE member_id = $2 AND revoked_at_ms IS NULL");
            connection
                .execute(revoke.bind(change.at_ms).bind(member))
                .await?;
        }
    }
    Ok(Ok(changed))
}

async fn create_invite_in(
    connection: &mut impl SqlConnection,
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
    let insert = sql(
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
    .bind(invite.expires_at_ms);
    connection.execute(insert).await?;
    Ok(Ok(()))
}

/// `change` run in a transaction of its own that takes the family's turn first, and is
/// committed whatever it decides (a refusal keeps what it counted, a wrong code).
async fn family_change<B, T, F>(store: &B, change: F) -> Result<T, StorageError>
where
    B: SqlBackend,
    T: Send + 'static,
    F: for<'c> FnOnce(
            &'c mut B::Connection,
        ) -> futures::future::BoxFuture<'c, Result<T, StorageError>>
        + Send
        + 'static,
{
    store
        .atomically(move |connection| {
            Box::pin(async move {
                take_turns::<B>(connection, "hearth family".into()).await?;
                change(connection).await
            })
        })
        .await
}

#[async_trait]
impl<B: SqlBackend> Members for B {
    async fn family_version(&self) -> Result<i64, StorageError> {
        let row = self
            .read_optional(sql(concat!(version!(), " AS version")))
            .await?;
        let version = row.map(|row| row.integer("version")).transpose()?;
        let version = version.unwrap_or(0);
        self.family_read(version);
        Ok(version)
    }

    async fn stored_family(&self) -> Result<StoredFamily, StorageError> {
        // One statement, so one snapshot: the version and what it numbers read together
        // (a row of the family with no member when it has none).
        let family = sql(concat!(
            "SELECT (",
            version!(),
            ") AS version, (",
            open_until!(),
            ") AS open_until_ms, ",
            member_columns!(),
            " FROM (SELECT 1) AS family LEFT JOIN members ON TRUE ORDER BY id"
        ));
        let rows = self.read(family.bind(i64::MIN)).await?;
        let Some(first) = rows.first() else {
            return Err(StorageError::Database("the family was not read".into()));
        };
        let (version, open_until_ms) = (
            first.integer("version")?,
            first.optional_integer("open_until_ms")?,
        );
        let mut members = Vec::new();
        for row in &rows {
            if row.optional_text("id")?.is_some() {
                members.push(member_from_row(row)?);
            }
        }
        self.family_read(version);
        Ok(StoredFamily {
            version,
            members,
            open_until_ms,
        })
    }

    async fn stored_members(&self) -> Result<Vec<StoredMember>, StorageError> {
        let rows = self.read(sql(EVERY_MEMBER)).await?;
        rows.iter().map(member_from_row).collect()
    }

    async fn create_invite(
        &self,
        invite: &NewInvite,
        configured: &ConfiguredMembers,
    ) -> Result<Result<(), ChangeRefused>, StorageError> {
        let (invite, configured) = (invite.clone(), configured.clone());
        family_change(self, move |connection| {
            Box::pin(async move { create_invite_in(connection, &invite, &configured).await })
        })
        .await
    }

    async fn open_invites_until(&self, now_ms: i64) -> Result<Option<i64>, StorageError> {
        let open = sql(concat!("SELECT (", open_until!(), ") AS open_until_ms")).bind(now_ms);
        let row = self.read_optional(open).await?;
        Ok(row
            .map(|row| row.optional_integer("open_until_ms"))
            .transpose()?
            .flatten())
    }

    async fn redeem(
        &self,
        redeem: &Redeem,
    ) -> Result<Result<Redeemed, RedeemRefused>, StorageError> {
        let redeem = redeem.clone();
        family_change(self, move |connection| {
            Box::pin(async move { redeem_in(connection, &redeem).await })
        })
        .await
    }

    async fn confirm_switch(
        &self,
        member: &MemberId,
        channel: &str,
        at_ms: i64,
    ) -> Result<Option<(StoredMember, PlatformUser)>, StorageError> {
        let (member, channel) = (member.clone(), channel.to_string());
        family_change(self, move |connection| {
            Box::pin(async move { confirm_switch_in(connection, &member, &channel, at_ms).await })
        })
        .await
    }

    async fn save_settings(
        &self,
        member: &MemberId,
        timezone: Option<&str>,
        preferred_channel: Option<&str>,
        new_row: &StoredMember,
    ) -> Result<(), StorageError> {
        let mut row = new_row.clone();
        row.timezone = timezone.map(str::to_string);
        row.preferred_channel = preferred_channel.map(str::to_string);
        let save = sql("UPDATE members SET timezone = $1, preferred_channel = $2 WHERE id = $3")
            .bind(timezone)
            .bind(preferred_channel)
            .bind(member.as_str());
        family_change(self, move |connection| {
            Box::pin(async move {
                next_version(connection).await?;
                if connection.execute(save).await? == 0 {
                    insert_member(connection, &row).await?;
                }
                Ok(())
            })
        })
        .await
    }

    async fn change_member(
        &self,
        change: &MemberChange,
    ) -> Result<Result<StoredMember, ChangeRefused>, StorageError> {
        let change = change.clone();
        family_change(self, move |connection| {
            Box::pin(async move { change_in(connection, &change).await })
        })
        .await
    }
}
