//! A real PostgreSQL on 127.0.0.1 for the storage suite and the several-workers tests: one
//! scratch cluster per test process, started on first use, and a fresh database per test.
//!
//! `scripts/install-test-postgres.sh` installs Debian's `postgresql`; its server binaries
//! are found under `/usr/lib/postgresql/<version>/bin`. The cluster lives in a temporary
//! folder with trust authentication on loopback only. PostgreSQL refuses to run as root,
//! so as root the cluster belongs to the `postgres` user (`runuser`). A small shell watch
//! stops the server and removes its folder when the test process is gone, however it ends.
//! With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing install fails the test, otherwise the test
//! skips.
//!
//! For the benchmarks the server counts the statements each database runs
//! (`pg_stat_statements`, preloaded; `count_statements`, `statements_run`) and says how
//! much CPU its processes used (`cpu_seconds`).

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection;

use super::real_llm::require_real_servers;
use super::test_config::TestConfig;

/// The role every test connects as (the cluster's superuser, trusted on loopback).
const ROLE: &str = "hearth";

/// Stops the server and removes its folder once the test process (`$1`) is gone.
const WATCH: &str = r#"
"$2/postgres" -D "$3/data" -k "$3" -h 127.0.0.1 -p "$4" \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
    -c max_connections=400 -c shared_buffers=64MB \
    -c shared_preload_libraries=pg_stat_statements >"$3/server.log" 2>&1 &
server=$!
while [ -d "/proc/$1" ] && kill -0 "$server" 2>/dev/null; do sleep 1; done
kill -INT "$server" 2>/dev/null
wait "$server"
rm -rf "$3"
"#;

/// The test config of `folder` (`TestConfig::new`), on `database_url` instead of its
/// SQLite file, written: what every worker of one PostgreSQL database is started with.
pub fn config_on(folder: &Path, llm: &str, database_url: &str) -> PathBuf {
    TestConfig::new(folder, llm)
        .database(database_url)
        .write(folder)
}

pub struct PostgresServer {
    port: u16,
    folder: PathBuf,
}

static SERVER: OnceLock<Option<PostgresServer>> = OnceLock::new();
static DATABASES: AtomicU32 = AtomicU32::new(0);

fn server_binaries() -> Option<PathBuf> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
        .filter(|folder| folder.join("initdb").exists() && folder.join("postgres").exists())
        .collect();
    folders.sort();
    folders.pop()
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// `program` with `args`, as the `postgres` user when the tests run as root.
fn as_cluster_owner(program: &Path, args: &[&str]) -> Command {
    if running_as_root() {
        let mut command = Command::new("runuser");
        command
            .args(["-u", "postgres", "--"])
            .arg(program)
            .args(args);
        command
    } else {
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

impl PostgresServer {
    /// The process's cluster, started on first use; `None` (the test skips) when
    /// PostgreSQL is not installed and real servers are not required.
    pub fn shared() -> Option<&'static PostgresServer> {
        SERVER.get_or_init(PostgresServer::start).as_ref()
    }

    fn start() -> Option<PostgresServer> {
        let Some(binaries) = server_binaries() else {
            assert!(
                !require_real_servers(),
                "PostgreSQL is not installed: run scripts/install-test-postgres.sh"
            );
            eprintln!("skipped: PostgreSQL is not installed (scripts/install-test-postgres.sh)");
            return None;
        };
        // Not a TempDir: the watch removes it after the server stops, which outlives us.
        let folder = tempfile::Builder::new()
            .prefix("hearth-postgres-")
            .tempdir()
            .unwrap()
            .keep();
        if running_as_root() {
            let status = Command::new("chown")
                .arg("postgres")
                .arg(&folder)
                .status()
                .unwrap();
            assert!(status.success(), "chown postgres {}", folder.display());
        }
        let data = folder.join("data");
        let output = as_cluster_owner(
            &binaries.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                ROLE,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ],
        )
        .output()
        .expect("initdb runs");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let test_process = std::process::id().to_string();
        // Never waited for: the watch outlives the test process, to stop the server after it.
        #[allow(clippy::zombie_processes)]
        as_cluster_owner(
            Path::new("/bin/sh"),
            &[
                "-c",
                WATCH,
                "postgres-watch",
                &test_process,
                binaries.to_str().unwrap(),
                folder.to_str().unwrap(),
                &port.to_string(),
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("postgres starts");
        let server = PostgresServer { port, folder };
        server.wait_listening();
        Some(server)
    }

    fn wait_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "postgres never listened: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("server.log")).unwrap_or_default()
    }

    /// The CPU time (user and system, in seconds) every process of the server has used:
    /// the postmaster, its children alive now and those it has reaped.
    pub fn cpu_seconds(&self) -> f64 {
        let pid_file = std::fs::read_to_string(self.folder.join("data").join("postmaster.pid"))
            .unwrap_or_default();
        let Some(postmaster) = pid_file
            .lines()
            .next()
            .and_then(|pid| pid.trim().parse::<u32>().ok())
        else {
            return f64::NAN;
        };
        let mut seconds = process_cpu(postmaster, true);
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            if parent_of(pid) == Some(postmaster) {
                seconds += process_cpu(pid, false);
            }
        }
        seconds
    }

    pub fn url(&self, database: &str) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}/{database}", self.port)
    }

    /// Count the statements `database_url` runs from now on (`statements_run`).
    pub async fn count_statements(database_url: &str) {
        let mut connection = sqlx::PgConnection::connect(database_url).await.unwrap();
        sqlx::raw_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(&mut connection)
            .await
            .unwrap();
        sqlx::raw_sql("SELECT pg_stat_statements_reset()")
            .execute(&mut connection)
            .await
            .unwrap();
        connection.close().await.unwrap();
    }

    /// The statements `database_url` ran since `count_statements`, each one round trip of
    /// its workers (transactions' `BEGIN` and `COMMIT` included).
    pub async fn statements_run(database_url: &str) -> i64 {
        let mut connection = sqlx::PgConnection::connect(database_url).await.unwrap();
        let count: i64 = sqlx::query_scalar(
            "SELECT COALESCE(sum(calls), 0)::bigint FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_one(&mut connection)
        .await
        .unwrap();
        connection.close().await.unwrap();
        count
    }

    /// The `top` statements `database_url` ran most since `count_statements`: how many
    /// times each, the mean time PostgreSQL spent executing one in microseconds, and its
    /// text.
    pub async fn statements_most_run(database_url: &str, top: i64) -> Vec<(i64, f64, String)> {
        let mut connection = sqlx::PgConnection::connect(database_url).await.unwrap();
        let rows: Vec<(i64, f64, String)> = sqlx::query_as(
            "SELECT calls::bigint, mean_exec_time * 1000.0, query FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             ORDER BY calls DESC LIMIT $1",
        )
        .bind(top)
        .fetch_all(&mut connection)
        .await
        .unwrap();
        connection.close().await.unwrap();
        rows
    }

    /// A new, empty database of its own; its URL.
    pub async fn fresh_database(&self) -> String {
        let name = format!(
            "hearth_test_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        // The server may still be finishing its start-up when it first listens.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut admin = loop {
            match sqlx::PgConnection::connect(&self.url("postgres")).await {
                Ok(connection) => break connection,
                Err(error) if Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("postgres refuses connections: {error}\n{}", self.log()),
            }
        };
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.unwrap();
        self.url(&name)
    }
}

/// Fields of `/proc/<pid>/stat` after the command name (which may hold spaces).
fn stat_fields(pid: u32) -> Vec<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid).get(1).and_then(|ppid| ppid.parse().ok())
}

/// User and system CPU of `pid` in seconds, with its reaped children's when `reaped`.
fn process_cpu(pid: u32, reaped: bool) -> f64 {
    let fields = stat_fields(pid);
    let indexes: &[usize] = if reaped { &[11, 12, 13, 14] } else { &[11, 12] };
    indexes
        .iter()
        .filter_map(|index| fields.get(*index).and_then(|v| v.parse::<f64>().ok()))
        .sum::<f64>()
        / 100.0
}
