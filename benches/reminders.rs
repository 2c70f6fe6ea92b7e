//! The reminders benchmark: the real `hearth` binary on the project's fake Bot API with
//! 10,000 reminders due over the next day and 1,000 due within one minute, across 50
//! members' chats. The schedules are written into the database (migrated by `hearth
//! migrate`) before hearth starts, as a family's would be after a while.
//!
//! Run with `cargo bench --bench reminders`. Sizes: `HEARTH_BENCH_DUE` (due within the
//! minute, default 1000), `HEARTH_BENCH_LATER` (due over the day, default 10000),
//! `HEARTH_BENCH_CHATS` (default 50). Prints the lateness of each firing (from its due time
//! to its `sendMessage` reaching the fake) as p50/p99/max, whether each fired exactly once,
//! hearth's CPU while idle between firings, and its resident memory before and after, beside
//! their targets. `HEARTH_BENCH_BINARY=path` runs another build of hearth.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::hearth_app::{Hearth, test_env, write_telegram_family_config};
use support::llm_server::ScriptedLlmServer;
use support::measure::{cpu_seconds, env_number, memory_mb, percentile, verdict};
use support::telegram::TelegramServer;

const TOKEN: &str = "123456:bench-token";
const FIRST_USER: i64 = 8000;
const TARGET_P99_MS: f64 = 1000.0;
const TARGET_RSS_GROWTH_MB: f64 = 10.0;
/// Idle: at most this share of one core between firings.
const TARGET_IDLE_CPU_PERCENT: f64 = 1.0;
/// How long after the start the first reminder of the minute is due: hearth is up by then.
const LEAD: Duration = Duration::from_secs(15);

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

/// The schedules, written straight into the migrated database: `due` in the minute after
/// `first_due_ms`, `later` spread over the day after it; each says its number.
async fn write_schedules(
    database: &Path,
    chats: i64,
    due: usize,
    later: usize,
    first_due_ms: i64,
) -> HashMap<String, i64> {
    let url = format!("sqlite://{}", database.display());
    let pool = sqlx::SqlitePool::connect(&url).await.expect("database");
    let mut due_at = HashMap::new();
    let mut transaction = pool.begin().await.expect("transaction");
    for n in 0..due + later {
        let at = if n < due {
            first_due_ms + (n as i64 * 60_000) / due as i64
        } else {
            first_due_ms + 120_000 + ((n - due) as i64 * 86_400_000) / later.max(1) as i64
        };
        let chat = n as i64 % chats;
        let text = format!("bench reminder {n}");
        sqlx::query(
            "INSERT INTO schedules (kind, member_id, set_by, text, channel, conversation_id, \
             zone, next_due_ms, created_at_ms, updated_at_ms) \
             VALUES ('reminder', ?1, ?1, ?2, 'telegram', ?3, 'Europe/Berlin', ?4, ?5, ?5)",
        )
        .bind(format!("m{chat}"))
        .bind(&text)
        .bind((FIRST_USER + chat).to_string())
        .bind(at)
        .bind(wall_ms())
        .execute(&mut *transaction)
        .await
        .expect("schedule written");
        if n < due {
            due_at.insert(text, at);
        }
    }
    transaction.commit().await.expect("schedules committed");
    pool.close().await;
    due_at
}

fn main() {
    let due = env_number("HEARTH_BENCH_DUE", 1000);
    let later = env_number("HEARTH_BENCH_LATER", 10_000);
    let chats = env_number("HEARTH_BENCH_CHATS", 50) as i64;
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().expect("temporary folder");
    let config = write_telegram_family_config(
        folder.path(),
        &llm.base_url(),
        &telegram.api_url(),
        chats,
        FIRST_USER,
    );
    let binary = std::env::var_os("HEARTH_BENCH_BINARY").map_or_else(
        || env!("CARGO_BIN_EXE_hearth").into(),
        std::path::PathBuf::from,
    );
    let env = test_env(&[
        ("TEST_TELEGRAM_TOKEN", TOKEN),
        ("HEARTH_LOG", "warn,hearth::app=info"),
    ]);
    let migrated = Command::new(&binary)
        .arg("--config")
        .arg(&config)
        .arg("migrate")
        .envs(&env)
        .output()
        .expect("hearth migrate");
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let first_due_ms = wall_ms() + LEAD.as_millis() as i64;
    let due_at = runtime.block_on(write_schedules(
        &folder.path().join("hearth.db"),
        chats,
        due,
        later,
        first_due_ms,
    ));
    let hearth = Hearth::spawn_binary(&binary, &config, &env);

    // Idle before the minute: connected, the next day's reminders read and held.
    while wall_ms() < first_due_ms - 5_000 {
        std::thread::sleep(Duration::from_millis(100));
    }
    let rss_before = memory_mb(hearth.pid(), "VmRSS");
    let cpu_before = cpu_seconds(hearth.pid());
    let idle_started = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let idle_cpu_before =
        (cpu_seconds(hearth.pid()) - cpu_before) / idle_started.elapsed().as_secs_f64() * 100.0;

    // The minute: note when each reminder's sendMessage reaches the fake.
    let mut seen: HashMap<String, i64> = HashMap::new();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(60) + LEAD + Duration::from_secs(30);
    while seen.len() < due && Instant::now() < deadline {
        let calls = telegram.calls_of("sendMessage");
        let now = wall_ms();
        for call in &calls[sent..] {
            if let Some(text) = call
                .str("text")
                .and_then(|t| t.strip_prefix("⏰ Reminder: "))
            {
                seen.entry(text.to_string()).or_insert(now);
            }
        }
        sent = calls.len();
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_secs(2));
    let prompts: Vec<String> = telegram
        .calls_of("sendMessage")
        .iter()
        .filter_map(|call| call.str("text").map(str::to_string))
        .filter(|text| text.starts_with("⏰ Reminder"))
        .collect();

    // Idle after the minute, until the next reminder of the day.
    let cpu_before = cpu_seconds(hearth.pid());
    let idle_started = Instant::now();
    std::thread::sleep(Duration::from_secs(10));
    let idle_cpu_after =
        (cpu_seconds(hearth.pid()) - cpu_before) / idle_started.elapsed().as_secs_f64() * 100.0;
    let rss_after = memory_mb(hearth.pid(), "VmRSS");

    let mut lateness: Vec<Duration> = seen
        .iter()
        .filter_map(|(text, at)| {
            let due = due_at.get(text)?;
            Some(Duration::from_millis((at - due).max(0) as u64))
        })
        .collect();
    lateness.sort();
    let fired_once = prompts.len() == due && seen.len() == due;
    let p99 = if lateness.is_empty() {
        f64::NAN
    } else {
        percentile(&lateness, 0.99)
    };
    println!("reminders: {due} due within a minute and {later} over the day, across {chats} chats");
    println!(
        "  fired       {:>9} of {due}, {} prompts sent ({})",
        seen.len(),
        prompts.len(),
        verdict(fired_once)
    );
    if !lateness.is_empty() {
        println!(
            "  lateness p50 {:>8.1} ms      (due time -> its sendMessage)",
            percentile(&lateness, 0.50)
        );
        println!(
            "  lateness p99 {p99:>8.1} ms      (target <= {TARGET_P99_MS:.0} ms: {})",
            verdict(p99 <= TARGET_P99_MS)
        );
        println!(
            "  lateness max {:>8.1} ms",
            lateness.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        );
    }
    let idle = idle_cpu_before.max(idle_cpu_after);
    println!(
        "  idle CPU    {idle_cpu_before:>9.2} % before, {idle_cpu_after:.2} % after (target <= {TARGET_IDLE_CPU_PERCENT:.0} %: {})",
        verdict(idle <= TARGET_IDLE_CPU_PERCENT)
    );
    println!(
        "  RSS         {rss_before:>9.1} MB before, {rss_after:.1} MB after (growth target <= {TARGET_RSS_GROWTH_MB:.0} MB: {})",
        verdict(rss_after - rss_before <= TARGET_RSS_GROWTH_MB)
    );
    drop(hearth);
}
