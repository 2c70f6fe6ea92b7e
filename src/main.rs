//! The `hearth` command: `run` (the bot), `chat` (the console channel, through the
//! running hearth's HTTP API when one runs on the database), `check-config` (print the
//! resolved profiles), `doctor` (try each part the configuration names), `migrate` and
//! `telemetry` (`--conversation`: the intents engine's stages); beside them `family`
//! (`family_command.rs`), `memory` (`memory_command.rs`), `token` and `web-link`
//! (`web_command.rs`) and `copy-store` (`copy_store_command.rs`), each in a file of its
//! own, as are `check-config` (`check_config_command.rs`) and `doctor` (`doctor/`).
//!
//! `chat` beside a running hearth speaks through its HTTP API with a token of its member
//! made for the chat and revoked at its end; with none running it holds the database lock
//! itself. `run` and `chat` take `--local-model`, and say plainly when a very small model
//! answers. While nobody is a member, `run` prints set-up's code for the first parent.
//!
//! Only `run`, standalone `chat` and `migrate` write the database, each holding its
//! instance lock; `check-config`, `doctor`, `telemetry` and `memory status` open it
//! read-only, beside a running hearth too, never migrating it. An error ends the command
//! with its message and causes, never a backtrace. Logging is set up here, and the actix System runs on this
//! process's one actors' thread (ARCHITECTURE.md, Threads).

mod check_config_command;
mod copy_store_command;
mod family_command;
mod memory_command;
mod web_command;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use hearth::actor_thread::spans::ActorThreadSpans;
use hearth::app::{self, StartOptions};
use hearth::config::{self, LoadOptions, LoadedConfig};
use hearth::ids::{ConversationKey, MemberId};
use hearth::redaction::redact_url_password;
use hearth::storage::instance_lock::{
    InstanceLock, InstanceLockError, LockHolder, sqlite_database_file,
};
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
    Run {
        #[command(flatten)]
        model: ModelChoice,
    },
    /// Talk to the bot in this terminal as a family member: through the running hearth
    /// when one runs on the database, else by starting one in this terminal.
    Chat {
        /// The family member's id (config `family[].id`).
        #[arg(long)]
        user: MemberId,
        #[command(flatten)]
        model: ModelChoice,
    },
    /// Validate the configuration and print the resolved service profiles.
    CheckConfig,
    /// Try the configuration, the database, each model, the chat platforms, the MCP servers,
    /// the calendars and the family scripts once; one line each, ok or what to fix.
    Doctor,
    /// Apply database migrations and exit (refused while a hearth runs on the database).
    Migrate,
    /// The family members: list them, or change one who joined by invite.
    Family {
        #[command(subcommand)]
        command: family_command::FamilyCommand,
    },
    /// Family memory: what it holds and how far its indexer is behind.
    Memory {
        #[command(subcommand)]
        command: memory_command::MemoryCommand,
    },
    /// Members' own API tokens: each speaks only as its member.
    Token {
        #[command(subcommand)]
        command: web_command::TokenCommand,
    },
    /// Print a one-time link that signs a member in on the web page (a member without a
    /// chat with hearth, or the first set-up).
    WebLink {
        /// The member's id.
        #[arg(long)]
        user: String,
    },
    /// Copy a SQLite database into an empty PostgreSQL database (no hearth may run on
    /// either meanwhile); every table's row count is checked before the copy is kept.
    CopyStore {
        /// The SQLite database to copy, e.g. sqlite://data/hearth.db.
        #[arg(long)]
        from: String,
        /// The empty PostgreSQL database, e.g. postgres://hearth@localhost/hearth.
        #[arg(long)]
        to: String,
    },
    /// Print the stages the intents engine recorded for a conversation (`http:alice`,
    /// `telegram:<chat id>`), oldest first.
    Telemetry {
        /// The conversation: channel and conversation id, as `<channel>:<id>`.
        #[arg(long)]
        conversation: ConversationKey,
        /// Show at most this many of the newest events.
        #[arg(long, default_value_t = 200)]
        limit: u32,
    },
}

/// Which model answers a hearth this command starts.
#[derive(clap::Args)]
struct ModelChoice {
    /// Answer with a small local model (llama.cpp serving SmolLM2-135M, installed by
    /// `bash scripts/install-local-llm.sh`) instead of the models of `llms`: no key or
    /// account needed, meant for trying hearth out.
    #[arg(long)]
    local_model: bool,
}

fn main() -> ExitCode {
    match run_command(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // What went wrong, for people: `RUST_BACKTRACE` makes anyhow's `Debug` add a
            // backtrace of where the error was made, which says nothing about the config.
            eprintln!("{}", describe_error(&error));
            ExitCode::FAILURE
        }
    }
}

/// `error` and the causes under it, as `Error: …` then `Caused by:` lines.
fn describe_error(error: &anyhow::Error) -> String {
    let mut text = format!("Error: {error}");
    let causes: Vec<String> = error.chain().skip(1).map(ToString::to_string).collect();
    match causes.as_slice() {
        [] => {}
        [cause] => text.push_str(&format!("\n\nCaused by:\n    {cause}")),
        causes => {
            text.push_str("\n\nCaused by:");
            for (index, cause) in causes.iter().enumerate() {
                text.push_str(&format!("\n    {index}: {cause}"));
            }
        }
    }
    text
}

fn run_command(cli: Cli) -> anyhow::Result<()> {
    // The doctor's report is its output: only warnings beside it, unless asked for more,
    // and not the MCP client's own errors about a server the report already names.
    let level = match cli.command {
        Command::Doctor => "warn,rmcp=off",
        _ => "info",
    };
    // The spans the actors' thread is inside are kept for its watchdog: a stall's log
    // names the turn that held it (`hearth::actor_thread`).
    tracing_subscriber::registry()
        .with(EnvFilter::try_from_env("HEARTH_LOG").unwrap_or_else(|_| EnvFilter::new(level)))
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        )
        .with(ActorThreadSpans)
        .init();
    let local_model = match &cli.command {
        Command::Run { model } | Command::Chat { model, .. } => model.local_model,
        _ => false,
    };
    let options = LoadOptions {
        known_local_tools: LOCAL_TOOL_NAMES,
        local_model,
    };
    if let Command::CopyStore { from, to } = cli.command {
        // Both databases are named on the command line: no configuration is needed.
        return in_actix_system(copy_store_command::copy(from, to));
    }
    if let Command::Doctor = cli.command {
        // A configuration that does not load is one of the doctor's findings.
        return in_actix_system(doctor(&cli.config, &options));
    }
    let loaded = config::load(&cli.config, &options)?;
    match cli.command {
        Command::Doctor | Command::CopyStore { .. } => unreachable!("handled above"),
        Command::CheckConfig => in_actix_system(check_config_command::check_config(loaded)),
        Command::Migrate => in_actix_system(async move {
            // Never under a running hearth: its caches would not see what a migration changes.
            let _lock = InstanceLock::acquire_for_url(&loaded.config.database_url, false).await?;
            let stores = hearth::storage::open(
                &loaded.config.database_url,
                loaded.config.database_connections(),
            )
            .await
            .context("migration failed")?;
            stores.close().await;
            eprintln!(
                "database {} is up to date",
                redact_url_password(&loaded.config.database_url)
            );
            Ok(())
        }),
        Command::Run { .. } => in_actix_system(run(loaded)),
        Command::Telemetry {
            conversation,
            limit,
        } => in_actix_system(telemetry(loaded, conversation, limit)),
        Command::Chat { user, .. } => in_actix_system(chat(loaded, user)),
        Command::Token { command } => in_actix_system(web_command::token(loaded, command)),
        Command::WebLink { user } => in_actix_system(web_command::web_link(loaded, user)),
        Command::Family { command } => in_actix_system(async move {
            let existing = existing_database(&loaded).await?;
            family_command::family(loaded, command, existing).await
        }),
        Command::Memory { command } => in_actix_system(async move {
            let existing = existing_database(&loaded).await?;
            memory_command::memory(loaded, command, existing).await
        }),
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

/// `hearth doctor`: the report on stdout; failing when any check failed.
async fn doctor(file: &Path, options: &LoadOptions<'_>) -> anyhow::Result<()> {
    let report = hearth::doctor::run(file, options).await;
    print!("{report}");
    let failures = report.failures();
    if failures > 0 {
        let checks = if failures == 1 { "check" } else { "checks" };
        anyhow::bail!(
            "{failures} {checks} failed: fix what the FAIL lines say, then run `hearth doctor` again"
        );
    }
    Ok(())
}

/// Reads beside a running hearth (SQLite readers do not block its writer); takes no lock.
async fn telemetry(
    loaded: LoadedConfig,
    conversation: ConversationKey,
    limit: u32,
) -> anyhow::Result<()> {
    let Some(stores) = existing_database(&loaded).await? else {
        anyhow::bail!(
            "no database at {}: nothing was recorded yet",
            redact_url_password(&loaded.config.database_url)
        );
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let events = stores.usage.stages_of(&conversation, limit).await?;
    if events.is_empty() {
        eprintln!("no stage events for conversation {conversation:?}");
    }
    for event in events {
        let payload = &event.payload;
        println!(
            "{} {} {:<18} {:<5} {}",
            payload["timestamp"].as_str().unwrap_or("-"),
            payload["interaction_id"].as_str().unwrap_or("-"),
            event.stage,
            payload["level"].as_str().unwrap_or("-"),
            payload["payload"]
        );
    }
    Ok(())
}

/// The database of `loaded`, opened read-only and only when its file already exists
/// (neither `check-config` nor `telemetry` creates, migrates or writes one, and neither
/// takes the lock, so both work beside a running hearth).
pub(crate) async fn existing_database(
    loaded: &LoadedConfig,
) -> anyhow::Result<Option<hearth::storage::Stores>> {
    hearth::storage::open_existing_read_only(&loaded.config.database_url)
        .await
        .context("the database cannot be read")
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
    tell_about_local_model(&running);
    tracing::info!(config = %loaded.file.display(), "hearth is running; Ctrl-C to stop");
    if running.membership.family().is_empty() {
        print_first_parent_code(&loaded, &running).await?;
    }
    shutdown_signal().await;
    tracing::info!("stopping");
    running.stop().await;
    Ok(())
}

/// Set-up: nobody is a member yet, so the terminal gets a code making the first person to
/// send it a parent.
async fn print_first_parent_code(
    loaded: &LoadedConfig,
    running: &app::RunningApp,
) -> anyhow::Result<()> {
    let channels = &loaded.config.channels;
    let chats = channels.telegram.enabled || channels.matrix.enabled;
    let page = running
        .http
        .as_ref()
        .map(|(_, address)| web_command::public_url(loaded, Some(*address)));
    if !chats && page.is_none() {
        println!(
            "hearth has no family yet. Add yourself under `family:` in {}, or turn on Telegram, Matrix or the web page there (channels.telegram.enabled, channels.matrix.enabled, http.enabled) and start hearth again for a code to join with.",
            loaded.file.display()
        );
        return Ok(());
    }
    let issued = match running
        .membership
        .first_parent_code(hearth::ports::now_ms())
        .await
        .context("no code for the first parent")?
    {
        hearth::family::Change::Done(issued) => issued,
        // Another worker's family got its first parent meanwhile.
        hearth::family::Change::Refused(text) => {
            println!("{text}");
            return Ok(());
        }
    };
    let mut ways = Vec::new();
    if let Some(page) = page {
        ways.push(format!(
            "open this link and enter your name:\n\n    {page}/join?code={}",
            issued.code
        ));
    }
    if chats {
        ways.push(format!(
            "send this to the bot on Telegram or Matrix (`!join` in Matrix clients that take `/`):\n\n    /join {}",
            issued.code
        ));
    }
    println!(
        "hearth has no family yet. To become its first parent, {}\n\nThe code works once, for 24 hours, and no more once the family has a parent; the next start prints a new one while the family is empty.",
        ways.join("\n\nor ")
    );
    Ok(())
}

/// Says plainly, once, that a very small model answers and how to use a real one.
fn tell_about_local_model(running: &app::RunningApp) {
    if let Some(url) = running.local_model_url() {
        eprintln!("\n{}\n", hearth::local_model::notice(&url));
    }
}

async fn chat(loaded: LoadedConfig, user: MemberId) -> anyhow::Result<()> {
    if loaded.family_member(&user).is_none() {
        // Members who joined by invite are in the database.
        let mut known: Vec<String> = loaded
            .config
            .family
            .iter()
            .map(|m| m.id.to_string())
            .collect();
        if let Some(stores) = existing_database(&loaded).await? {
            let stored = stores.members.stored_members().await;
            stores.close().await;
            known.extend(stored?.into_iter().map(|member| member.id.to_string()));
        }
        if !known.iter().any(|id| id == user.as_str()) {
            anyhow::bail!(
                "{user:?} is not a family member in {} or the database (family ids: {})",
                loaded.file.display(),
                known.join(", ")
            );
        }
    }
    // A URL naming no database file is refused when it is opened: nothing to lock.
    let Some(database) = sqlite_database_file(&loaded.config.database_url) else {
        return chat_in_this_terminal(&loaded, user, None).await;
    };
    match lock_or_find_running_hearth(&database).await? {
        Found::NoneRunning(lock) => {
            println!(
                "no hearth is running on {}; starting one in this terminal",
                database.display()
            );
            chat_in_this_terminal(&loaded, user, Some(lock)).await
        }
        Found::Running { holder, address } => {
            println!(
                "talking to the running hearth at {address} (pid {})",
                holder.pid
            );
            chat_through_running_hearth(&loaded, user, address).await
        }
    }
}

/// What `hearth chat` finds on the database.
enum Found {
    /// No hearth runs on it: its lock, now held by this process.
    NoneRunning(InstanceLock),
    /// A hearth runs on it and serves its HTTP API at `address`.
    Running {
        holder: LockHolder,
        address: SocketAddr,
    },
}

/// A hearth still starting is waited for until it listens; one that serves no HTTP
/// cannot be talked to.
async fn lock_or_find_running_hearth(database: &Path) -> anyhow::Result<Found> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let holder = match InstanceLock::acquire(database.to_path_buf(), false).await {
            Ok(lock) => return Ok(Found::NoneRunning(lock)),
            Err(InstanceLockError::Held {
                holder: Some(holder),
                ..
            }) => holder,
            Err(error) => return Err(error.into()),
        };
        if let Some(address) = holder.http_address {
            return Ok(Found::Running { holder, address });
        }
        if !holder.serves_http {
            anyhow::bail!(
                "the hearth running on {} ({holder}) does not serve the http api, so \
                 `hearth chat` cannot talk to it: stop it and run `hearth chat` again, or \
                 restart it with `http.enabled: true`",
                database.display()
            );
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the hearth running on {} ({holder}) has not started its http api within \
                 60 seconds; look at its log, then run `hearth chat` again",
                database.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// No hearth runs on the database: this process becomes the one, with the console as
/// its only channel, holding `lock` until the member leaves.
async fn chat_in_this_terminal(
    loaded: &LoadedConfig,
    user: MemberId,
    lock: Option<InstanceLock>,
) -> anyhow::Result<()> {
    let config = &loaded.config;
    let stores = hearth::storage::open(&config.database_url, config.database_connections()).await?;
    let database = stores.clone();
    let (console, replies) = hearth::actors::channels::ConsoleChannel::new();
    let console = actix::Actor::start(console);
    let running = app::start(
        loaded,
        StartOptions {
            serve: false,
            extra_channels: [("console".to_string(), console.recipient())].into(),
            stores: Some(stores),
        },
    )
    .await?;
    tell_about_local_model(&running);
    let talked = hearth::actors::channels::run_console(running.queue.clone(), user, replies).await;
    running.stop().await;
    // The stores are this function's: closed (writes committed) before the lock goes.
    database.close().await;
    drop(lock);
    talked?;
    Ok(())
}

/// A hearth runs on the database and serves HTTP: the terminal talks to it, so its
/// one queue answers every message.
async fn chat_through_running_hearth(
    loaded: &LoadedConfig,
    user: MemberId,
    address: SocketAddr,
) -> anyhow::Result<()> {
    let http = &loaded.config.http;
    // The terminal speaks as its member with a token of theirs, made for this chat and
    // revoked at its end: it may answer the member's confirmations, which the shared key
    // may not.
    let token = if http.auth_enabled {
        let stores = hearth::storage::open_beside_running(
            &loaded.config.database_url,
            loaded.config.database_connections(),
        )
        .await
        .context("the database of the running hearth cannot be opened for a token of this chat")?;
        let identity =
            hearth::identity::Identity::new(stores.web_access.clone(), http.session_days);
        let (key, token) = identity
            .create_token(
                &user,
                Some("hearth chat in a terminal".to_string()),
                hearth::ports::now_ms(),
            )
            .await
            .context("no token for this chat")?;
        Some((key, token.id, identity, stores))
    } else {
        None
    };
    let chatted = hearth::actors::channels::run_remote_console(
        hearth::actors::channels::RemoteConsoleSettings {
            address,
            api_key: token.as_ref().map(|(key, ..)| key.clone()),
            member_id: user,
            request_timeout: Duration::from_secs(http.reply_timeout_seconds)
                + Duration::from_secs(30),
        },
    )
    .await;
    if let Some((_, id, identity, stores)) = token {
        if let Err(error) = identity.revoke_token(&id).await {
            eprintln!(
                "the token of this chat ({id}) was not revoked: {error}; `hearth token revoke {id}` does it"
            );
        }
        stores.close().await;
    }
    chatted?;
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
