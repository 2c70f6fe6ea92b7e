//! The pipeline benchmark: N conversations × M turns through the real `hearth`
//! binary (HTTP inbound → queue → processing → broker → SQLite → reply) against a
//! scripted LLM on loopback that answers instantly.
//!
//! Run with `cargo bench --bench pipeline`. Sizes: `HEARTH_BENCH_CONVERSATIONS`
//! (default 50) and `HEARTH_BENCH_TURNS` (turns per conversation, default 100).
//! Prints turns per second, p50/p99 latency of a turn (with an instant LLM this is
//! hearth's own overhead plus loopback HTTP), idle RSS and peak RSS of the hearth
//! process, each beside its target for a 2-core machine.
//!
//! Then the footprint at rest of two builds: the default one with Telegram connected (to
//! the project's fake Bot API), and the HTTP-only one (`--no-default-features`), which the
//! benchmark builds itself in release mode under `<target dir>/http-only` (the first time
//! takes as long as a release build; `HEARTH_BENCH_HTTP_ONLY=0` skips it).

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use support::hearth_app::{
    API_KEY, BenchedHearth, HearthProcess, test_env, wait_for_readyz, write_config,
    write_telegram_family_config,
};
use support::llm_server::ScriptedLlmServer;
use support::measure::{cpu_seconds, env_number, memory_mb, percentile, verdict};
use support::telegram::TelegramServer;

const TARGET_TURNS_PER_SECOND: f64 = 2000.0;
const TARGET_P99_MS: f64 = 5.0;
const TARGET_IDLE_RSS_MB: f64 = 15.0;
const TARGET_TELEGRAM_IDLE_RSS_MB: f64 = 25.0;
/// Process start to ready, before any network login (the HTTP-only config).
const TARGET_START_UP_MS: f64 = 100.0;
const TELEGRAM_TOKEN: &str = "123456:pipeline-bench";

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let conversations = env_number("HEARTH_BENCH_CONVERSATIONS", 50);
    let turns = env_number("HEARTH_BENCH_TURNS", 100);
    let llm = ScriptedLlmServer::start();
    llm.set_recording(false);
    let folder = tempfile::tempdir().expect("temporary folder");
    let config = write_config(folder.path(), &llm.base_url());
    let spawned = Instant::now();
    let BenchedHearth {
        process: hearth,
        runtime,
        client,
    } = BenchedHearth::start(&config, conversations);
    let start_up = spawned.elapsed().as_secs_f64() * 1000.0;
    let base_url = hearth.base_url.clone();
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = memory_mb(hearth.pid(), "VmRSS");

    // Warm-up: connections, statement caches, the first pages of the database.
    runtime.block_on(run_load(
        &client,
        &base_url,
        conversations.min(8),
        5,
        "warmup",
    ));
    // Overhead: one conversation at a time, so the latency is hearth's own work per
    // turn (plus loopback HTTP), not time spent queued behind other conversations.
    let mut overhead = runtime.block_on(run_load(&client, &base_url, 1, 500, "overhead"));
    overhead.sort();
    let p50 = percentile(&overhead, 0.50);
    let p99 = percentile(&overhead, 0.99);

    // Throughput: every conversation at once.
    let cpu_before = cpu_seconds(hearth.pid());
    let started = Instant::now();
    let mut latencies =
        runtime.block_on(run_load(&client, &base_url, conversations, turns, "load"));
    let elapsed = started.elapsed();
    let cpu_used = cpu_seconds(hearth.pid()) - cpu_before;
    let peak_rss = memory_mb(hearth.pid(), "VmHWM");

    latencies.sort();
    let total = latencies.len();
    let throughput = total as f64 / elapsed.as_secs_f64();
    let loaded_p99 = percentile(&latencies, 0.99);
    println!(
        "pipeline: {conversations} conversations x {turns} turns = {total} turns in {elapsed:.2?} \
         (default queue and LLM limits)"
    );
    println!(
        "  throughput   {throughput:>9.0} turns/s   (target >= {TARGET_TURNS_PER_SECOND:.0}: {})",
        verdict(throughput >= TARGET_TURNS_PER_SECOND)
    );
    println!("  overhead p50 {p50:>9.2} ms        (one conversation, 500 sequential turns)");
    println!(
        "  overhead p99 {p99:>9.2} ms        (target <= {TARGET_P99_MS:.0} ms: {})",
        verdict(p99 <= TARGET_P99_MS)
    );
    println!(
        "  loaded p99   {loaded_p99:>9.2} ms        (turn latency with all conversations at once)"
    );
    println!(
        "  start-up     {start_up:>9.1} ms        (process start to /readyz, a new database; \
         target <= {TARGET_START_UP_MS:.0} ms: {})",
        verdict(start_up <= TARGET_START_UP_MS)
    );
    // The idle targets are for the builds below; this is the default build serving HTTP only.
    println!("  idle RSS     {idle_rss:>9.1} MB        (default build; see the footprints below)");
    println!(
        "  hearth CPU   {:>9.3} ms/turn   ({cpu_used:.2} s over the load phase)",
        cpu_used * 1000.0 / total as f64
    );
    println!("  peak RSS     {peak_rss:>9.1} MB");
    println!("  llm requests {:>9}", llm.request_count());
    drop(hearth);

    footprints(&runtime, &client, &llm);
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
    let config = write_config(folder.path(), &llm.base_url());
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
    let hearth = HearthProcess::spawn_binary(binary, config, env);
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

/// Every conversation sends its turns one after another; conversations run side by side.
async fn run_load(
    client: &reqwest::Client,
    base_url: &str,
    conversations: usize,
    turns: usize,
    label: &str,
) -> Vec<Duration> {
    let tasks: Vec<_> = (0..conversations)
        .map(|conversation| {
            let client = client.clone();
            let url = format!("{base_url}/inbound");
            let session = format!("{label}-{conversation}");
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(turns);
                for turn in 0..turns {
                    let body = json!({
                        "user_id": if conversation % 2 == 0 { "alice" } else { "bob" },
                        "session_id": session,
                        "text": format!("turn {turn}"),
                    });
                    let sent = Instant::now();
                    let response = client
                        .post(&url)
                        .header("X-API-Key", API_KEY)
                        .json(&body)
                        .send()
                        .await
                        .expect("hearth answers");
                    assert_eq!(response.status().as_u16(), 200, "turn answered");
                    let _ = response.bytes().await;
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::with_capacity(conversations * turns);
    for task in tasks {
        all.extend(task.await.expect("load task"));
    }
    all
}
