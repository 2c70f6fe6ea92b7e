//! `hearth family list|set-role|remove`: the family from the command line. `list` reads
//! the database beside a running hearth. A change is made in the database, which every
//! running worker reads before its next request; on SQLite it needs the file to itself
//! (one process writes it), on PostgreSQL it is made beside the running workers.

use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;

use hearth::config::LoadedConfig;
use hearth::family::{Change, Family, Membership, family_list};
use hearth::ids::FamilyRole;
use hearth::ports::now_ms;
use hearth::storage::instance_lock::InstanceLock;

#[derive(Subcommand)]
pub enum FamilyCommand {
    /// Every member: from the configuration and those who joined by invite.
    List,
    /// Give a member who joined by invite another role (`parent` or `child`).
    SetRole {
        /// The member's id or name.
        member: String,
        /// `parent` or `child`.
        role: String,
    },
    /// Remove a member who joined by invite: a stranger to hearth again.
    Remove {
        /// The member's id or name.
        member: String,
    },
}

pub async fn family(
    loaded: LoadedConfig,
    command: FamilyCommand,
    existing: Option<hearth::storage::Stores>,
) -> anyhow::Result<()> {
    let config = &loaded.config;
    if let FamilyCommand::List = command {
        let family = Arc::new(Family::new(&config.family));
        if let Some(stores) = existing {
            family.set_stored(&stores.members.stored_members().await?);
            stores.close().await;
        }
        println!("{}", family_list(&family));
        return Ok(());
    }
    let _lock = InstanceLock::acquire_for_url(&config.database_url, false)
        .await
        .context("a change to the family needs the SQLite database to itself: stop hearth, or send /family in chat")?;
    let stores = hearth::storage::open(&config.database_url, config.database_connections())
        .await
        .context("the database cannot be opened")?;
    let membership = Membership::new(
        Arc::new(Family::new(&config.family).stored_in(stores.members.clone())),
        stores.members.clone(),
        stores.family_memory.clone(),
        false,
    );
    membership.load().await?;
    let changed = match &command {
        FamilyCommand::SetRole { member, role } => {
            let Some(role) = FamilyRole::parse(role) else {
                anyhow::bail!("role {role:?} is no role: give parent or child");
            };
            membership
                .set_role(None, member, role, now_ms())
                .await?
                .map(|member| format!("{} is now a {}", member.id, member.role.as_str()))
        }
        FamilyCommand::Remove { member } => membership
            .remove(None, member, now_ms())
            .await?
            .map(|member| format!("{} is no longer in the family", member.id)),
        FamilyCommand::List => unreachable!("listed above"),
    };
    stores.close().await;
    match changed {
        Change::Done(text) => {
            println!("{text}");
            Ok(())
        }
        Change::Refused(text) => anyhow::bail!("{text}"),
    }
}
