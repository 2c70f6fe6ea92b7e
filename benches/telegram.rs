//! The Telegram benchmark: the real `hearth` binary on the project's fake Bot API (real
//! long polling on loopback) with an instant scripted LLM. N chats each send M messages the
//! way people do (the next one after the previous reply), all chats at once.
//!
//! Run with `cargo bench --bench telegram`. Sizes: `HEARTH_BENCH_CHATS` (default 20) and
//! `HEARTH_BENCH_MESSAGES` (per chat, default 10). Prints turns per second, p50/p99/max of
//! the time from an update being queued at the fake to the reply's `sendMessage` reaching
//! it, hearth's CPU per turn and its resident memory, beside their targets.
//! `HEARTH_BENCH_LOG=hearth=debug HEARTH_TEST_VERBOSE=1` prints each turn's stage timings;
//! `HEARTH_BENCH_BINARY=path` runs another build of hearth (to compare two commits).

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use support::hearth_app::{Hearth, test_env, write_telegram_family_config};
use support::llm_server::{ScriptedLlmServer, Step};
use support::measure::{cpu_seconds, env_number, memory_mb, percentile, verdict};
use support::telegram::{TelegramServer, TgUser};

const TOKEN: &str = "123456:bench-token";
const FIRST_USER: i64 = 8000;
const TARGET_P99_MS: f64 = 100.0;
const TARGET_MAX_MS: f64 = 250.0;

/// Every chat sends its messages one after another, each after the previous reply.
async fn run_chats(
    telegram: &Arc<TelegramServer>,
    chats: i64,
    messages: usize,
    label: &str,
) -> Vec<Duration> {
    let tasks: Vec<_> = (0..chats)
        .map(|chat| {
            let telegram = telegram.clone();
            let label = label.to_string();
            tokio::spawn(async move {
                let user = TgUser::new(FIRST_USER + chat, &format!("Member {chat}"));
                let mut latencies = Vec::with_capacity(messages);
                for n in 0..messages {
                    let text = format!("{label} {chat} {n}");
                    let answer = format!("echo: {text}");
                    let sent = Instant::now();
                    telegram.push_private_text(&user, &text);
                    telegram
                        .wait_for_message(
                            FIRST_USER + chat,
                            |message| message.from_bot && message.text.as_deref() == Some(&answer),
                            Duration::from_secs(60),
                        )
                        .await
                        .unwrap_or_else(|| panic!("no reply to {text:?}"));
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("chat task"));
    }
    all
}

fn main() {
    let chats = env_number("HEARTH_BENCH_CHATS", 20) as i64;
    let messages = env_number("HEARTH_BENCH_MESSAGES", 10);
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Echo);
    llm.set_recording(false);
    let telegram = Arc::new(TelegramServer::start(TOKEN));
    let folder = tempfile::tempdir().expect("temporary folder");
    let config = write_telegram_family_config(
        folder.path(),
        &llm.base_url(),
        &telegram.api_url(),
        chats,
        FIRST_USER,
    );
    let log = std::env::var("HEARTH_BENCH_LOG").unwrap_or_else(|_| "warn,hearth::app=info".into());
    let env = test_env(&[("TEST_TELEGRAM_TOKEN", TOKEN), ("HEARTH_LOG", log.as_str())]);
    let hearth = match std::env::var_os("HEARTH_BENCH_BINARY") {
        Some(binary) => Hearth::spawn_binary(std::path::Path::new(&binary), &config, &env),
        None => Hearth::spawn(&config, &env),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // Warm-up: the bot introduced, connections open, the first pages of the database read.
    runtime.block_on(run_chats(&telegram, chats.min(4), 3, "warmup"));
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = memory_mb(hearth.pid(), "VmRSS");

    let cpu_before = cpu_seconds(hearth.pid());
    let started = Instant::now();
    let mut latencies = runtime.block_on(run_chats(&telegram, chats, messages, "load"));
    let elapsed = started.elapsed();
    let cpu_used = cpu_seconds(hearth.pid()) - cpu_before;
    latencies.sort();
    let total = latencies.len();
    let p50 = percentile(&latencies, 0.50);
    let p99 = percentile(&latencies, 0.99);
    let max = latencies
        .last()
        .map_or(0.0, |max| max.as_secs_f64() * 1000.0);
    println!(
        "telegram: {chats} chats x {messages} messages = {total} turns in {elapsed:.2?} \
         (each chat's next message after its reply)"
    );
    println!(
        "  turns/s     {:>9.0}",
        total as f64 / elapsed.as_secs_f64()
    );
    println!("  latency p50 {p50:>9.1} ms      (update queued -> reply's sendMessage)");
    println!(
        "  latency p99 {p99:>9.1} ms      (target <= {TARGET_P99_MS:.0} ms: {})",
        verdict(p99 <= TARGET_P99_MS)
    );
    println!(
        "  latency max {max:>9.1} ms      (target <= {TARGET_MAX_MS:.0} ms: {})",
        verdict(max <= TARGET_MAX_MS)
    );
    println!(
        "  hearth CPU  {:>9.2} ms/turn",
        cpu_used * 1000.0 / total as f64
    );
    println!("  idle RSS    {idle_rss:>9.1} MB      (Telegram connected)");
    println!("  peak RSS    {:>9.1} MB", memory_mb(hearth.pid(), "VmHWM"));
}
