//! `hearth token create|list|revoke` and `hearth web-link`: a member's own API token, and a
//! one-time link that signs a member in on the web page (for one without a chat with
//! hearth, or the first set-up). Both write only `WebAccess` rows, which no hearth caches,
//! so they work beside a running hearth; with none running, the database is opened (and
//! migrated) under the lock as `hearth migrate` does.

use anyhow::Context;
use clap::Subcommand;

use hearth::config::LoadedConfig;
use hearth::family::Family;
use hearth::identity::{Identity, MAX_TOKEN_LABEL_CHARS, SIGN_IN_LINK_VALID_MS};
use hearth::ports::now_ms;
use hearth::storage::Stores;
use hearth::storage::instance_lock::{InstanceLock, InstanceLockError};

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Print a new token that speaks only as this member (shown once; keep it secret).
    Create {
        /// The member's id.
        #[arg(long)]
        user: String,
        /// What it is for, shown by `hearth token list`.
        #[arg(long)]
        label: Option<String>,
    },
    /// Every token not revoked: id, member, label, when made. Never the token itself.
    List,
    /// Revoke a token by the id `hearth token list` shows; it stops working at once.
    Revoke { id: String },
}

/// The database: with the lock when no hearth runs on it, else beside the running one
/// (and the address that one serves at, when it says).
struct Opened {
    stores: Stores,
    _lock: Option<InstanceLock>,
    running_at: Option<std::net::SocketAddr>,
}

async fn open(loaded: &LoadedConfig) -> anyhow::Result<Opened> {
    let config = &loaded.config;
    match InstanceLock::acquire_for_url(&config.database_url, false).await {
        Ok(lock) => {
            let stores = hearth::storage::open(&config.database_url, config.database_connections())
                .await
                .context("the database cannot be opened")?;
            // PostgreSQL has no lock file naming the running hearth: its workers say
            // where they serve with their heartbeats.
            let running_at = stores
                .coordination
                .live_workers()
                .await?
                .into_iter()
                .find_map(|worker| worker.presence.http_address?.parse().ok());
            Ok(Opened {
                stores,
                _lock: lock,
                running_at,
            })
        }
        Err(InstanceLockError::Held { holder, .. }) => {
            let stores = hearth::storage::open_beside_running(
                &config.database_url,
                config.database_connections(),
            )
            .await
            .context("the database of the running hearth cannot be opened")?;
            Ok(Opened {
                stores,
                _lock: None,
                running_at: holder.and_then(|holder| holder.http_address),
            })
        }
        Err(error) => Err(error.into()),
    }
}

/// The family as the database and the configuration know it.
async fn family(loaded: &LoadedConfig, stores: &Stores) -> anyhow::Result<Family> {
    let family = Family::new(&loaded.config.family);
    family.set_stored(&stores.members.stored_members().await?);
    Ok(family)
}

fn member_id(family: &Family, user: &str) -> anyhow::Result<hearth::ids::MemberId> {
    family.member(user).map(|member| member.id).ok_or_else(|| {
        let known: Vec<String> = family
            .members()
            .iter()
            .map(|member| member.id.to_string())
            .collect();
        anyhow::anyhow!(
            "--user {user:?} is no family member (members: {})",
            known.join(", ")
        )
    })
}

pub async fn token(loaded: LoadedConfig, command: TokenCommand) -> anyhow::Result<()> {
    let opened = open(&loaded).await?;
    let result = token_with(&loaded, &opened.stores, command).await;
    opened.stores.close().await;
    result
}

async fn token_with(
    loaded: &LoadedConfig,
    stores: &Stores,
    command: TokenCommand,
) -> anyhow::Result<()> {
    let identity = Identity::new(stores.web_access.clone(), loaded.config.http.session_days);
    match command {
        TokenCommand::Create { user, label } => {
            let family = family(loaded, stores).await?;
            let member = member_id(&family, &user)?;
            if let Some(label) = &label
                && (label.chars().count() > MAX_TOKEN_LABEL_CHARS
                    || label.chars().any(char::is_control))
            {
                anyhow::bail!(
                    "--label is longer than {MAX_TOKEN_LABEL_CHARS} characters or holds control characters"
                );
            }
            let (key, token) = identity.create_token(&member, label, now_ms()).await?;
            eprintln!(
                "token {} for {member}: send it as `X-API-Key: <token>` or `Authorization: Bearer <token>`; it speaks only as {member}. It is shown this once.",
                token.id
            );
            println!("{key}");
        }
        TokenCommand::List => {
            let tokens = identity.tokens().await?;
            if tokens.is_empty() {
                println!("no tokens");
            }
            for token in tokens {
                let made =
                    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(token.created_at_ms)
                        .map(|at| at.format("%Y-%m-%d %H:%M UTC").to_string())
                        .unwrap_or_default();
                println!(
                    "{}  {}  {}  made {made}",
                    token.id,
                    token.member_id,
                    token.label.as_deref().unwrap_or("-")
                );
            }
        }
        TokenCommand::Revoke { id } => {
            if !identity.revoke_token(&id).await? {
                anyhow::bail!("no token {id:?} (hearth token list shows the ids)");
            }
            println!("token {id} revoked");
        }
    }
    Ok(())
}

/// `hearth web-link --user NAME`: a one-time sign-in link.
pub async fn web_link(loaded: LoadedConfig, user: String) -> anyhow::Result<()> {
    let opened = open(&loaded).await?;
    let stores = &opened.stores;
    let result = async {
        let family = family(&loaded, stores).await?;
        let member = member_id(&family, &user)?;
        let identity = Identity::new(stores.web_access.clone(), loaded.config.http.session_days);
        let secret = identity.new_sign_in_link(&member, now_ms()).await?;
        let base = public_url(&loaded, opened.running_at);
        eprintln!(
            "a sign-in link for {member}, working once within {} hours:",
            SIGN_IN_LINK_VALID_MS / 3_600_000
        );
        println!("{base}/sign-in/link/{secret}");
        Ok(())
    }
    .await;
    opened.stores.close().await;
    result
}

/// Where members open the page: `http.public_url`, else the address the running hearth
/// serves at, else `http.bind`.
pub fn public_url(loaded: &LoadedConfig, running_at: Option<std::net::SocketAddr>) -> String {
    loaded.config.http.page_url(running_at)
}
