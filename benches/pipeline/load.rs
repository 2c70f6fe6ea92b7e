//! The pipeline benchmark's load: hearth workers of one database (the one worker of a
//! SQLite file, or one or more on PostgreSQL), conversations whose messages go round the
//! workers as a load balancer sends them, what it measured, and the check that every
//! message was answered exactly once.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::hearth_app::{
    API_KEY, BenchedHearth, Hearth, benched_binary, test_env, wait_for_readyz,
};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::measure::{cpu_seconds, memory_mb, percentile};
use crate::support::postgres::PostgresServer;
use crate::support::workers::Workers;

/// Real hearth processes sharing one database, and what drives them.
pub struct Deployment {
    pub processes: Vec<Hearth>,
    pub workers: Arc<Workers>,
    pub runtime: tokio::runtime::Runtime,
    pub database_url: String,
    /// The first worker's process start to `/readyz` (a new database).
    pub start_up_ms: f64,
    /// The PostgreSQL server of `database_url`, whose statements and CPU are counted.
    pub postgres: Option<&'static PostgresServer>,
}

/// What the database itself did per turn of the load phase (PostgreSQL).
#[derive(Clone, Copy)]
pub struct DatabaseCost {
    /// Statements the database ran, each a round trip of a worker.
    pub round_trips: f64,
    /// CPU time of the server's processes, in milliseconds.
    pub cpu_ms: f64,
}

/// One deployment's figures: the load phase (every conversation at once) and the
/// sequential one (one conversation, its messages one after another).
pub struct Figures {
    pub total: usize,
    pub elapsed: Duration,
    pub throughput: f64,
    pub loaded_p50: f64,
    pub loaded_p99: f64,
    pub sequential_p50: f64,
    pub sequential_p99: f64,
    /// Every worker's CPU over the load phase, in seconds.
    pub cpu_seconds: f64,
    /// The largest peak resident memory of a worker, in MB.
    pub peak_rss: f64,
    /// Requests the model got, warm-up and sequential phase included.
    pub model_calls: usize,
    /// What the exactly-once check found.
    pub checked: String,
    /// Turns that ran again after their message was answered (the model asked more often
    /// than messages were sent; the second run's answer refused), and what the workers
    /// logged meanwhile: every reply was still given and remembered once.
    pub turns_twice: usize,
    pub warnings: String,
    /// PostgreSQL's own work per turn of the load phase; `None` on SQLite.
    pub database: Option<DatabaseCost>,
}

impl Deployment {
    /// `count` workers on `config` (whose database is `database_url`), each ready; an HTTP
    /// client keeping `connections` idle connections to each.
    pub fn start(config: &Path, database_url: &str, count: usize, connections: usize) -> Self {
        let spawned = Instant::now();
        let BenchedHearth {
            process,
            runtime,
            client,
        } = BenchedHearth::start(config, connections);
        let start_up_ms = spawned.elapsed().as_secs_f64() * 1000.0;
        let mut processes = vec![process];
        let env = test_env(&[("HEARTH_LOG", "warn,hearth::app=info")]);
        for _ in 1..count {
            let process = Hearth::spawn_binary(&benched_binary(), config, &env);
            runtime.block_on(wait_for_readyz(&client, &process.base_url));
            processes.push(process);
        }
        let urls = processes.iter().map(|p| p.base_url.clone()).collect();
        Deployment {
            processes,
            workers: Arc::new(Workers::new(urls, API_KEY, client)),
            runtime,
            database_url: database_url.to_string(),
            start_up_ms,
            postgres: None,
        }
    }

    /// Count the statements and CPU of `server`, this deployment's database's, per turn.
    pub fn on_postgres(mut self, server: &'static PostgresServer) -> Self {
        self.postgres = Some(server);
        self
    }

    /// The first worker's resident memory (`VmRSS`) now, in MB.
    pub fn first_rss(&self) -> f64 {
        memory_mb(self.processes[0].pid(), "VmRSS")
    }

    fn cpu_seconds(&self) -> f64 {
        self.processes.iter().map(|p| cpu_seconds(p.pid())).sum()
    }

    /// What the workers logged as warnings or errors (the benchmark logs nothing else but
    /// their addresses): where a failed check looks first.
    fn warnings(&self) -> String {
        let mut said = String::new();
        for (index, process) in self.processes.iter().enumerate() {
            for line in process.log().lines().filter(|line| !line.contains("INFO")) {
                said.push_str(&format!("[worker {index}] {line}\n"));
            }
        }
        said
    }

    /// `conversations` × `turns` messages through the workers; each message's latency.
    pub fn load(&self, conversations: usize, turns: usize, label: &str) -> Vec<Duration> {
        self.runtime
            .block_on(run_load(self.workers.clone(), conversations, turns, label))
    }

    /// Warm-up, the sequential phase (`sequential` messages) and the load phase, then the
    /// exactly-once check over all three; panics when a message was lost, stored twice or
    /// answered twice.
    pub fn measure(
        &self,
        llm: &ScriptedLlmServer,
        conversations: usize,
        turns: usize,
        sequential: usize,
    ) -> Figures {
        llm.reset_counters();
        // Warm-up: connections, statement caches, the first pages of the database.
        let warmup = (conversations.min(8), 5);
        self.load(warmup.0, warmup.1, "warmup");
        // One conversation at a time, so the latency is hearth's own work per turn (plus
        // loopback HTTP), not time spent queued behind other conversations.
        let mut overhead = self.load(1, sequential, "overhead");
        overhead.sort();

        if self.postgres.is_some() {
            self.runtime
                .block_on(PostgresServer::count_statements(&self.database_url));
        }
        let database_cpu_before = self.postgres.map(PostgresServer::cpu_seconds);
        let cpu_before = self.cpu_seconds();
        let started = Instant::now();
        let mut latencies = self.load(conversations, turns, "load");
        let elapsed = started.elapsed();
        let cpu_seconds = self.cpu_seconds() - cpu_before;
        let database = match (self.postgres, database_cpu_before) {
            (Some(server), Some(before)) => {
                let statements = self
                    .runtime
                    .block_on(PostgresServer::statements_run(&self.database_url));
                let turns = latencies.len() as f64;
                if std::env::var_os("HEARTH_BENCH_STATEMENTS").is_some() {
                    let most = self
                        .runtime
                        .block_on(PostgresServer::statements_most_run(&self.database_url, 25));
                    println!(
                        "  statements per turn of the load phase, most run first \
                         (per turn, mean execution time, text):"
                    );
                    for (calls, mean_us, query) in most {
                        let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
                        let shown: String = query.chars().take(100).collect();
                        println!("  {:>7.2} {mean_us:>6.0} us  {shown}", calls as f64 / turns);
                    }
                }
                Some(DatabaseCost {
                    round_trips: statements as f64 / turns,
                    cpu_ms: (server.cpu_seconds() - before) * 1000.0 / turns,
                })
            }
            _ => None,
        };
        latencies.sort();

        let sent = warmup.0 * warmup.1 + sequential + latencies.len();
        let model_calls = llm.request_count();
        let checked = self
            .runtime
            .block_on(check_exactly_once(&self.database_url, sent))
            .unwrap_or_else(|found| panic!("{found}\n{}", self.warnings()));
        let turns_twice = model_calls.saturating_sub(sent);
        // Fewer calls than messages: a reply that never came from the model.
        assert!(
            model_calls >= sent,
            "{sent} messages, {model_calls} model calls"
        );
        Figures {
            total: latencies.len(),
            elapsed,
            throughput: latencies.len() as f64 / elapsed.as_secs_f64(),
            loaded_p50: percentile(&latencies, 0.50),
            loaded_p99: percentile(&latencies, 0.99),
            sequential_p50: percentile(&overhead, 0.50),
            sequential_p99: percentile(&overhead, 0.99),
            cpu_seconds,
            peak_rss: self
                .processes
                .iter()
                .map(|p| memory_mb(p.pid(), "VmHWM"))
                .fold(0.0, f64::max),
            model_calls,
            checked: format!("{checked}, {model_calls} model calls"),
            turns_twice,
            warnings: self.warnings(),
            database,
        }
    }
}

/// Every conversation sends its messages one after another, each to the next worker
/// (round robin per message, as a load balancer does, so a conversation moves between
/// workers); conversations run side by side. Each reply must be its own message's.
async fn run_load(
    workers: Arc<Workers>,
    conversations: usize,
    turns: usize,
    label: &str,
) -> Vec<Duration> {
    let tasks: Vec<_> = (0..conversations)
        .map(|conversation| {
            let workers = workers.clone();
            let session = format!("{label}-{conversation}");
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(turns);
                for turn in 0..turns {
                    let text = format!("{session} turn {turn}");
                    let body = json!({
                        "user_id": if conversation % 2 == 0 { "alice" } else { "bob" },
                        "session_id": session,
                        "text": text,
                        "message_id": format!("{session}-{turn}"),
                    });
                    let sent = Instant::now();
                    let reply = workers.answered(conversation + turn, &body).await;
                    latencies.push(sent.elapsed());
                    assert_eq!(reply, format!("echo: {text}"), "a reply to another message");
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

/// The inbox's rows by status and the chat messages remembered, read from the database.
async fn stored(database_url: &str) -> (Vec<(String, i64)>, i64) {
    const STATUSES: &str = "SELECT status, COUNT(*) FROM inbox GROUP BY status ORDER BY status";
    const REMEMBERED: &str = "SELECT COUNT(*) FROM messages WHERE is_chat_text";
    if database_url.starts_with("sqlite:") {
        // Read-only beside the running worker, which holds the file.
        let pool = sqlx::SqlitePool::connect(&format!("{database_url}?mode=ro"))
            .await
            .expect("the benchmark's SQLite file opens");
        let statuses = sqlx::query_as(STATUSES).fetch_all(&pool).await.unwrap();
        let remembered = sqlx::query_scalar(REMEMBERED)
            .fetch_one(&pool)
            .await
            .unwrap();
        pool.close().await;
        (statuses, remembered)
    } else {
        let pool = sqlx::PgPool::connect(database_url)
            .await
            .expect("the benchmark's PostgreSQL database opens");
        let statuses = sqlx::query_as(STATUSES).fetch_all(&pool).await.unwrap();
        let remembered = sqlx::query_scalar(REMEMBERED)
            .fetch_one(&pool)
            .await
            .unwrap();
        pool.close().await;
        (statuses, remembered)
    }
}

/// `sent` messages (each with its own `message_id`, each answered with its own reply)
/// must be stored once each, all answered, and each remembered with its reply once: what
/// was found.
async fn check_exactly_once(database_url: &str, sent: usize) -> Result<String, String> {
    let (statuses, remembered) = stored(database_url).await;
    let expected = vec![("answered".to_string(), sent as i64)];
    if statuses != expected {
        return Err(format!(
            "{sent} messages sent, but the inbox holds {statuses:?}: not each stored once and answered"
        ));
    }
    if remembered != 2 * sent as i64 {
        return Err(format!(
            "{sent} messages sent, but {remembered} chat messages remembered (each message and \
             its reply once would be {})",
            2 * sent
        ));
    }
    Ok(format!(
        "{sent} messages: each stored and answered once, {remembered} remembered"
    ))
}
