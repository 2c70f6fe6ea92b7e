//! The `hearth` command: `run` (the bot), `chat` (the console channel),
//! `check-config` (print the resolved profiles) and `migrate`.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use hearth::app::{self, StartOptions};
use hearth::config::{self, LoadOptions, LoadedConfig};
use hearth::tools::LOCAL_TOOL_NAMES;

#[derive(Parser)]
#[command(
    name = "hearth",
    version,
    about = "A family assistant for Telegram, Matrix, HTTP and the terminal"
)]
struct Cli {
    /// The configuration file.
    #[arg(
        long,
        global = true,
        env = "HEARTH_CONFIG",
        default_value = "config/hearth.yaml"
    )]
    config: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bot with the channels enabled in config (the HTTP API by default).
    Run,
    /// Talk to the bot in this terminal as a family member.
    Chat {
        /// The family member's id (config `family[].id`).
        #[arg(long)]
        user: String,
    },
    /// Validate the configuration and print the resolved service profiles.
    CheckConfig,
    /// Apply database migrations and exit.
    Migrate,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("HEARTH_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let options = LoadOptions {
        known_local_tools: LOCAL_TOOL_NAMES,
    };
    let loaded = config::load(&cli.config, &options)?;
    match cli.command {
        Command::CheckConfig => in_actix_system(check_config(loaded)),
        Command::Migrate => in_actix_system(async move {
            hearth::storage::open(
                &loaded.config.database_url,
                loaded.config.database_max_connections,
            )
            .await
            .context("migration failed")?;
            eprintln!(
                "database {} is up to date",
                config::redact_url_password(&loaded.config.database_url)
            );
            Ok(())
        }),
        Command::Run => in_actix_system(run(loaded)),
        Command::Chat { user } => in_actix_system(chat(loaded, user)),
    }
}

/// The actors and the tasks they spawn run on the System's one thread; actix-web
/// serves from its own worker threads and SQLite runs on sqlx's threads. On the small
/// machines hearth is made for, one thread for the actors beats a multi-threaded
/// runtime: the turn pipeline is short async steps, and every hop between runtime
/// threads costs a wake-up (the pipeline benchmark measured about 20% less CPU per turn).
fn in_actix_system<F>(future: F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    actix::System::new().block_on(future)
}

/// `hearth check-config`: the resolved profiles, the plugins, and per profile which tool
/// calls ask the member first. The plugins folder is part of the configuration: its files
/// are checked too, and so are `confirm_tools` entries naming plugins (against the folder and
/// the plugins registered in the database, when it exists).
async fn check_config(loaded: LoadedConfig) -> anyhow::Result<()> {
    print!("{}", config::render_resolved_profiles(&loaded));
    let catalog = hearth::plugins::PluginCatalog::from_config(&loaded.config)
        .map_err(|error| anyhow::anyhow!("plugins cannot be loaded:\n{error}"))?;
    if let Some(stores) = existing_database(&loaded).await? {
        hearth::plugins::restore_registered(&catalog, stores.registered_plugins.as_ref()).await;
    }
    println!("plugins: {}", catalog.plugin_ids().join(", "));
    catalog.check_approval_names(&loaded)?;
    println!("confirmation (tool calls that ask the member first):");
    for profile in &loaded.profiles {
        let asking = hearth::tools::describe_asking_tools(
            &profile.tools.confirm_tools,
            &profile.tools.enable_mcp_server_ids,
            |id| catalog.capability_ids(id),
        );
        if asking.is_empty() {
            println!("  {}: none", profile.id);
        } else {
            println!("  {}:", profile.id);
            for line in asking {
                println!("    - {line}");
            }
        }
    }
    Ok(())
}

/// The database of `loaded`, opened only when its file already exists (check-config never
/// creates one).
async fn existing_database(
    loaded: &LoadedConfig,
) -> anyhow::Result<Option<hearth::storage::Stores>> {
    let url = &loaded.config.database_url;
    let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Ok(None);
    };
    let path = path.split('?').next().unwrap_or(path);
    if !tokio::fs::try_exists(path).await.unwrap_or(false) {
        return Ok(None);
    }
    let stores = hearth::storage::open(url, 1)
        .await
        .context("the database cannot be read to check registered plugins")?;
    Ok(Some(stores))
}

async fn run(loaded: LoadedConfig) -> anyhow::Result<()> {
    let running = app::start(
        &loaded,
        StartOptions {
            serve: true,
            extra_channels: Default::default(),
            stores: None,
        },
    )
    .await?;
    tracing::info!(config = %loaded.file.display(), "hearth is running; Ctrl-C to stop");
    shutdown_signal().await;
    tracing::info!("stopping");
    running.stop().await;
    Ok(())
}

async fn chat(loaded: LoadedConfig, user: String) -> anyhow::Result<()> {
    if loaded.family_member(&user).is_none() {
        let known: Vec<&str> = loaded.config.family.iter().map(|m| m.id.as_str()).collect();
        anyhow::bail!(
            "{user:?} is not a family member in {} (family ids: {})",
            loaded.file.display(),
            known.join(", ")
        );
    }
    let (console, replies) = hearth::actors::channels::ConsoleChannel::new();
    let console = actix::Actor::start(console);
    let running = app::start(
        &loaded,
        StartOptions {
            serve: false,
            extra_channels: [("console".to_string(), console.recipient())].into(),
            stores: None,
        },
    )
    .await?;
    hearth::actors::channels::run_console(running.queue.clone(), user, replies).await?;
    running.stop().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("SIGTERM handler installs");
        tokio::select! {
            _ = ctrl_c => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
