//! The pipeline benchmark: N conversations × M turns through the real `hearth`
//! binary (HTTP inbound → queue → processing → broker → database → reply) against a
//! scripted LLM on loopback that answers instantly.
//!
//! Run with `cargo bench --bench pipeline`. Sizes: `HEARTH_BENCH_CONVERSATIONS`
//! (default 50), `HEARTH_BENCH_TURNS` (turns per conversation, default 100) and
//! `HEARTH_BENCH_SEQUENTIAL_TURNS` (the one conversation of the overhead phase, default
//! 500). Prints turns per second, p50/p99 latency of a turn (with an instant LLM this is
//! hearth's own overhead plus loopback HTTP), idle RSS and peak RSS of the hearth
//! process, each beside its target for a 2-core machine. Every message carries its own
//! `message_id` and must be answered with its own reply; after the run the database must
//! hold each once, answered, remembered with its reply once, or the run fails instead of
//! printing figures. The model must have been asked once per message: a turn that ran
//! again after its message was answered (its second answer refused) is counted ("turns
//! twice"), printed with what the workers logged, and fails the run after its figures.
//!
//! Then the footprint at rest of two builds: the default one with Telegram connected (to
//! the project's fake Bot API), and the HTTP-only one (`--no-default-features`), which the
//! benchmark builds itself in release mode under `<target dir>/http-only` (the first time
//! takes as long as a release build; `HEARTH_BENCH_HTTP_ONLY=0` skips it).
//!
//! Arguments after `--`: `--database sqlite|postgres` (default `sqlite`: the run above)
//! and `--workers N` or a list `--workers 1,2,3` (default 1; more than one only with
//! PostgreSQL). With `--database postgres` the benchmark starts its own scratch
//! PostgreSQL on loopback (`tests/support/postgres.rs`; installed by
//! `scripts/install-test-postgres.sh`), then measures SQLite on one worker and, for each
//! worker count, that many workers on a fresh PostgreSQL database, each message posted to
//! the next worker in turn (round robin per message, as a load balancer does, so a
//! conversation moves between workers), and prints one table: turns/s, p50 and p99 of the
//! load phase and of the sequential phase, the workers' CPU per turn, their largest peak
//! RSS, the turns that ran twice, and what PostgreSQL itself did per turn of the load
//! phase: the statements it ran (each a round trip of a worker; `pg_stat_statements`) and
//! the CPU of its processes. PostgreSQL's targets: one worker at least 1,000 turns/s with
//! a load p99 under 60 ms, three workers at least 1.5× one. The footprints are not measured
//! in that mode. `HEARTH_BENCH_BINARY` measures another hearth binary (the build before a
//! change) with this same harness; `HEARTH_BENCH_STATEMENTS=1` lists the statements
//! PostgreSQL ran most per turn.
//! Example: `cargo bench --bench pipeline -- --database postgres --workers 1,2,3`.

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "pipeline/load.rs"]
mod load;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use load::{Deployment, Figures};
use support::hearth_app::{Hearth, test_env, wait_for_readyz, write_telegram_family_config};
use support::llm_server::ScriptedLlmServer;
use support::measure::{env_number, memory_mb, verdict};
use support::postgres::{PostgresServer, config_on};
use support::telegram::TelegramServer;
use support::test_config::TestConfig;

const TARGET_TURNS_PER_SECOND: f64 = 2000.0;
/// PostgreSQL with one worker, with leases fenced: turns/s and the load phase's p99.
const TARGET_POSTGRES_TURNS_PER_SECOND: f64 = 1000.0;
const TARGET_POSTGRES_LOAD_P99_MS: f64 = 60.0;
/// Three workers on one PostgreSQL database against one.
const TARGET_POSTGRES_THREE_OVER_ONE: f64 = 1.5;
const TARGET_P99_MS: f64 = 5.0;
const TARGET_IDLE_RSS_MB: f64 = 15.0;
const TARGET_TELEGRAM_IDLE_RSS_MB: f64 = 25.0;
/// Process start to ready, before any network login (the HTTP-only config).
const TARGET_START_UP_MS: f64 = 100.0;
const TELEGRAM_TOKEN: &str = "123456:pipeline-bench";

/// What the arguments after `--` may say wrong.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error("--database takes sqlite or postgres, not {0:?}")]
    Database(String),
    #[error("--workers takes a worker count of 1 or more, or a list of them (1,2,3), not {0:?}")]
    Workers(String),
    #[error(
        "several workers share one PostgreSQL database; SQLite has one worker: \
         add --database postgres"
    )]
    SeveralOnSqlite,
    #[error("{0} needs a value")]
    Missing(&'static str),
    #[error(
        "unknown option {0} (this benchmark takes --database sqlite|postgres and --workers N or N,M,...)"
    )]
    Unknown(String),
}

#[derive(Clone, Copy, PartialEq)]
enum Database {
    Sqlite,
    Postgres,
}

struct Args {
    database: Database,
    workers: Vec<usize>,
}

/// The arguments after the program's name. `cargo bench` passes `--bench`, and a filter
/// may be given: both are accepted and ignored.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, ArgsError> {
    let mut database = Database::Sqlite;
    let mut workers = vec![1];
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |option: &'static str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(ArgsError::Missing(option))
        };
        match name.as_str() {
            "--bench" => {}
            "--database" => {
                database = match value("--database")?.as_str() {
                    "sqlite" => Database::Sqlite,
                    "postgres" | "postgresql" => Database::Postgres,
                    other => return Err(ArgsError::Database(other.to_string())),
                }
            }
            "--workers" => {
                let list = value("--workers")?;
                workers = list
                    .split(',')
                    .map(|count| {
                        count
                            .trim()
                            .parse::<usize>()
                            .ok()
                            .filter(|count| *count > 0)
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| ArgsError::Workers(list.clone()))?;
            }
            option if option.starts_with("--") => return Err(ArgsError::Unknown(arg)),
            _ => {}
        }
    }
    if database == Database::Sqlite && workers != [1] {
        return Err(ArgsError::SeveralOnSqlite);
    }
    Ok(Args { database, workers })
}

fn main() {
    let args = parse_args(std::env::args().skip(1)).unwrap_or_else(|error| {
        eprintln!("pipeline: {error}");
        std::process::exit(2);
    });
    let conversations = env_number("HEARTH_BENCH_CONVERSATIONS", 50);
    let turns = env_number("HEARTH_BENCH_TURNS", 100);
    let sequential = env_number("HEARTH_BENCH_SEQUENTIAL_TURNS", 500);
    let llm = ScriptedLlmServer::start();
    llm.set_recording(false);
    match args.database {
        Database::Sqlite => sqlite_report(&llm, conversations, turns, sequential),
        Database::Postgres => postgres_table(&llm, conversations, turns, sequential, &args.workers),
    }
}

/// One worker on SQLite, each figure beside its target, then the footprints at rest.
fn sqlite_report(llm: &ScriptedLlmServer, conversations: usize, turns: usize, sequential: usize) {
    let folder = tempfile::tempdir().expect("temporary folder");
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let database_url = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let hearth = Deployment::start(&config, &database_url, 1, conversations);
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = hearth.first_rss();
    let figures = hearth.measure(llm, conversations, turns, sequential);
    let Figures {
        total,
        elapsed,
        throughput,
        ..
    } = figures;
    println!(
        "pipeline: {conversations} conversations x {turns} turns = {total} turns in {elapsed:.2?} \
         (default queue and LLM limits)"
    );
    println!(
        "  throughput   {throughput:>9.0} turns/s   (target >= {TARGET_TURNS_PER_SECOND:.0}: {})",
        verdict(throughput >= TARGET_TURNS_PER_SECOND)
    );
    println!(
        "  overhead p50 {:>9.2} ms        (one conversation, {sequential} sequential turns)",
        figures.sequential_p50
    );
    println!(
        "  overhead p99 {:>9.2} ms        (target <= {TARGET_P99_MS:.0} ms: {})",
        figures.sequential_p99,
        verdict(figures.sequential_p99 <= TARGET_P99_MS)
    );
    println!(
        "  loaded p99   {:>9.2} ms        (turn latency with all conversations at once)",
        figures.loaded_p99
    );
    println!(
        "  start-up     {:>9.1} ms        (process start to /readyz, a new database; \
         target <= {TARGET_START_UP_MS:.0} ms: {})",
        hearth.start_up_ms,
        verdict(hearth.start_up_ms <= TARGET_START_UP_MS)
    );
    // The idle targets are for the builds below; this is the default build serving HTTP only.
    println!("  idle RSS     {idle_rss:>9.1} MB        (default build; see the footprints below)");
    println!(
        "  hearth CPU   {:>9.3} ms/turn   ({:.2} s over the load phase)",
        figures.cpu_seconds * 1000.0 / total as f64,
        figures.cpu_seconds
    );
    println!("  peak RSS     {:>9.1} MB", figures.peak_rss);
    println!("  llm requests {:>9}", figures.model_calls);
    println!("  exactly once {}", figures.checked);
    let turns_twice = figures.turns_twice;
    let warnings = figures.warnings.clone();
    let Deployment {
        processes,
        workers,
        runtime,
        ..
    } = hearth;
    drop(processes);

    footprints(&runtime, &workers.client, llm);
    fail_on_turns_twice(&[("sqlite", 1, turns_twice, warnings)]);
}

/// A turn that ran again after its message was answered fails the run, after the
/// figures: its reply was given once, but its model call (and any tool call) twice.
fn fail_on_turns_twice(runs: &[(&str, usize, usize, String)]) {
    let mut failed = false;
    for (database, workers, turns_twice, warnings) in runs {
        if *turns_twice == 0 {
            continue;
        }
        failed = true;
        println!(
            "FAILED: {database}, {workers} worker(s): {turns_twice} turn(s) ran again after \
             their message was answered (the model asked more often than messages were sent); \
             the workers logged:"
        );
        for line in warnings.lines().take(20) {
            println!("  {line}");
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// Idle RSS of the default build with Telegram connected, and of the HTTP-only build.
fn footprints(
    runtime: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    llm: &ScriptedLlmServer,
) {
    let default_binary = PathBuf::from(env!("CARGO_BIN_EXE_hearth"));
    let telegram = TelegramServer::start(TELEGRAM_TOKEN);
    let folder = tempfile::tempdir().expect("temporary folder");
    let config =
        write_telegram_family_config(folder.path(), &llm.base_url(), &telegram.api_url(), 2, 100);
    let env = test_env(&[
        ("TEST_TELEGRAM_TOKEN", TELEGRAM_TOKEN),
        ("HEARTH_LOG", "warn,hearth::app=info"),
    ]);
    let telegram_rss = idle_rss(runtime, client, &default_binary, &config, &env);
    println!("footprint at rest (ready, after 500 ms):");
    println!(
        "  default build, Telegram connected {telegram_rss:>6.1} MB   (target <= \
         {TARGET_TELEGRAM_IDLE_RSS_MB:.0} MB: {}; binary {:.1} MB)",
        verdict(telegram_rss <= TARGET_TELEGRAM_IDLE_RSS_MB),
        file_mb(&default_binary)
    );

    if std::env::var("HEARTH_BENCH_HTTP_ONLY").as_deref() == Ok("0") {
        println!("  HTTP-only build: skipped (HEARTH_BENCH_HTTP_ONLY=0)");
        return;
    }
    let Some(http_only) = build_http_only() else {
        println!("  HTTP-only build: the build failed (see above)");
        return;
    };
    let folder = tempfile::tempdir().expect("temporary folder");
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let env = test_env(&[("HEARTH_LOG", "warn,hearth::app=info")]);
    let http_rss = idle_rss(runtime, client, &http_only, &config, &env);
    println!(
        "  HTTP-only build                   {http_rss:>6.1} MB   (target <= \
         {TARGET_IDLE_RSS_MB:.0} MB: {}; binary {:.1} MB)",
        verdict(http_rss <= TARGET_IDLE_RSS_MB),
        file_mb(&http_only)
    );
}

/// Starts `binary`, waits until it is ready and settled, and reads its resident memory.
fn idle_rss(
    runtime: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    binary: &Path,
    config: &Path,
    env: &std::collections::BTreeMap<String, String>,
) -> f64 {
    let hearth = Hearth::spawn_binary(binary, config, env);
    runtime.block_on(wait_for_readyz(client, &hearth.base_url));
    std::thread::sleep(Duration::from_millis(500));
    memory_mb(hearth.pid(), "VmRSS")
}

/// `cargo build --release --no-default-features` into its own target folder (so the
/// default build's binary is left alone); the binary's path, or `None` if it failed.
fn build_http_only() -> Option<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.join("target"))
        .join("http-only");
    println!("building the HTTP-only hearth (release, --no-default-features) ...");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--no-default-features",
            "--bin",
            "hearth",
        ])
        .arg("--manifest-path")
        .arg(manifest_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .status()
        .ok()?;
    built
        .success()
        .then(|| target_dir.join("release").join("hearth"))
}

fn file_mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |metadata| metadata.len() as f64 / 1_048_576.0)
}

/// SQLite on one worker, then PostgreSQL with each of `counts` workers on a fresh
/// database: one table.
fn postgres_table(
    llm: &ScriptedLlmServer,
    conversations: usize,
    turns: usize,
    sequential: usize,
    counts: &[usize],
) {
    let Some(server) = PostgresServer::shared() else {
        eprintln!(
            "pipeline: PostgreSQL is not installed: run scripts/install-test-postgres.sh \
             (the benchmark starts its own scratch server with it)"
        );
        std::process::exit(1);
    };
    let admin = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rows: Vec<(&str, usize, Figures)> = Vec::new();

    println!("measuring sqlite, 1 worker ...");
    let folder = tempfile::tempdir().expect("temporary folder");
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let database_url = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let figures = Deployment::start(&config, &database_url, 1, conversations).measure(
        llm,
        conversations,
        turns,
        sequential,
    );
    println!("  exactly once: {}", figures.checked);
    rows.push(("sqlite", 1, figures));

    for &count in counts {
        println!("measuring postgres, {count} worker(s) ...");
        let database_url = admin.block_on(server.fresh_database());
        let folder = tempfile::tempdir().expect("temporary folder");
        let config = config_on(folder.path(), &llm.base_url(), &database_url);
        let figures = Deployment::start(&config, &database_url, count, conversations)
            .on_postgres(server)
            .measure(llm, conversations, turns, sequential);
        println!("  exactly once: {}", figures.checked);
        rows.push(("postgres", count, figures));
    }

    println!(
        "pipeline: {conversations} conversations x {turns} turns (load), one conversation x \
         {sequential} turns (sequential); each message to the next worker; default queue and \
         LLM limits"
    );
    println!(
        "  database  workers   turns/s  vs sqlite   load p50   load p99    seq p50    seq p99  \
         CPU ms/turn  peak RSS  turns twice  db trips/turn  db CPU ms/turn"
    );
    let sqlite_throughput = rows[0].2.throughput;
    for (database, count, figures) in &rows {
        let (trips, database_cpu) = match figures.database {
            Some(cost) => (
                format!("{:.1}", cost.round_trips),
                format!("{:.3}", cost.cpu_ms),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "  {database:<8} {count:>8} {:>9.0} {:>9.2}x {:>7.2} ms {:>7.2} ms {:>7.2} ms {:>7.2} ms \
             {:>11.3} {:>6.1} MB {:>12} {trips:>14} {database_cpu:>15}",
            figures.throughput,
            figures.throughput / sqlite_throughput,
            figures.loaded_p50,
            figures.loaded_p99,
            figures.sequential_p50,
            figures.sequential_p99,
            figures.cpu_seconds * 1000.0 / figures.total as f64,
            figures.peak_rss,
            figures.turns_twice,
        );
    }
    let sqlite = &rows[0].2;
    let postgres_with = |workers: usize| {
        rows.iter()
            .find(|(database, count, _)| *database == "postgres" && *count == workers)
            .map(|(_, _, figures)| figures)
    };
    let (postgres_one, postgres_three) = (postgres_with(1), postgres_with(3));
    println!(
        "  sqlite, 1 worker: throughput target >= {TARGET_TURNS_PER_SECOND:.0} turns/s: {}; \
         sequential p99 target <= {TARGET_P99_MS:.0} ms: {}",
        verdict(sqlite.throughput >= TARGET_TURNS_PER_SECOND),
        verdict(sqlite.sequential_p99 <= TARGET_P99_MS)
    );
    let runs: Vec<_> = rows
        .iter()
        .map(|(database, count, figures)| {
            (
                *database,
                *count,
                figures.turns_twice,
                figures.warnings.clone(),
            )
        })
        .collect();
    println!(
        "  postgres, 1 worker: throughput target >= {TARGET_POSTGRES_TURNS_PER_SECOND:.0} turns/s: {}; \
         load p99 target < {TARGET_POSTGRES_LOAD_P99_MS:.0} ms: {}",
        verdict(postgres_one.is_some_and(|one| one.throughput >= TARGET_POSTGRES_TURNS_PER_SECOND)),
        verdict(postgres_one.is_some_and(|one| one.loaded_p99 < TARGET_POSTGRES_LOAD_P99_MS)),
    );
    if let (Some(one), Some(three)) = (postgres_one, postgres_three) {
        println!(
            "  postgres, 3 workers: {:.2}x one worker (target >= {TARGET_POSTGRES_THREE_OVER_ONE:.1}x: {})",
            three.throughput / one.throughput,
            verdict(three.throughput >= TARGET_POSTGRES_THREE_OVER_ONE * one.throughput)
        );
        // The workers and PostgreSQL share this machine's cores: however the turns are
        // spread, no more of them run per second than the cores have CPU for.
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let ceiling = |figures: &Figures| {
            let database = figures.database.map_or(0.0, |cost| cost.cpu_ms);
            cores * 1000.0 / (figures.cpu_seconds * 1000.0 / figures.total as f64 + database)
        };
        println!(
            "  CPU ceiling on these {cores:.0} cores (workers' and database's CPU per turn): \
             1 worker {:.0} turns/s, 3 workers {:.0} turns/s; {TARGET_POSTGRES_THREE_OVER_ONE:.1}x \
             one worker's measured rate is {:.0}",
            ceiling(one),
            ceiling(three),
            TARGET_POSTGRES_THREE_OVER_ONE * one.throughput,
        );
    }
    println!(
        "  (CPU and peak RSS are the hearth workers', summed and largest; db trips/turn are the \
         statements PostgreSQL ran per turn of the load phase, each a round trip, and db CPU \
         its own processes' CPU per turn)"
    );
    fail_on_turns_twice(&runs);
}
