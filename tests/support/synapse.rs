//! A real Synapse homeserver on 127.0.0.1, run as a child process for tests that must prove
//! hearth speaks Matrix to a real server (sync, end-to-end encryption, restarts), not to a fake.
//!
//! `scripts/install-test-synapse.sh` installs Synapse into `$HEARTH_TEST_CACHE/synapse-venv`
//! (default `~/.cache/hearth-test`); this module writes each server its own loopback-only
//! config, SQLite database and signing key in a temporary folder. A test process runs one
//! server for all its tests (`shared_or_skip`, started on first use), each test with users of
//! its own (`fresh_prefix`), so tests running in parallel never see each other's users, rooms
//! or invites; a small shell watch removes its folder once the test process is gone, and the
//! server itself exits then. A test that stops or restarts the server starts one of its own
//! (`start_or_skip`), killed when dropped. With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing
//! install fails the test, otherwise the test skips. Users are made with the shared-secret
//! admin registration API, so no test depends on open registration.

// Not every includer uses the whole API.
#![allow(dead_code)]

mod launch;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha1::Sha1;

use super::real_llm::require_real_servers;
use launch::{StartPermit, release_port, reserve_port, versions_status};

/// The server name of every test homeserver: user ids are `@name:localhost`.
pub const SERVER_NAME: &str = "localhost";

/// How long Synapse may take to answer `/_matrix/client/versions` once its start has begun
/// (about 2 s on an idle machine; the whole suite runs beside it on 2 cores).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful stop may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Fresh ports tried when the probed one is taken before Synapse binds it.
const START_ATTEMPTS: usize = 3;
/// The most of the server's log quoted in an error.
const LOG_TAIL_BYTES: u64 = 6000;

/// Removes the shared server's folder once the test process (`$1`) is gone: the launcher's
/// watchdog ends the server (`$2`, recognised by its folder `$3` on its command line) within a
/// second of that, and the watch kills it if it has not after 10 s.
const WATCH: &str = r#"
while [ -d "/proc/$1" ]; do sleep 1; done
for _ in 1 2 3 4 5 6 7 8 9 10; do
    grep -qF "$3" "/proc/$2/cmdline" 2>/dev/null || break
    sleep 1
done
grep -qF "$3" "/proc/$2/cmdline" 2>/dev/null && kill -KILL "$2"
rm -rf "$3"
"#;

/// Runs Synapse's own entry point after starting a watchdog thread: when the test process dies
/// without dropping its `Synapse` (killed, or aborted), the server notices it has been
/// re-parented and exits instead of lingering. `sys.argv[1:]` (`--config-path X`) reaches
/// Synapse unchanged.
const LAUNCHER: &str = r#"
import os, runpy, threading, time
parent = os.getppid()
def watch():
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(3)
threading.Thread(target=watch, daemon=True).start()
runpy.run_module("synapse.app.homeserver", run_name="__main__", alter_sys=True)
"#;

/// A user made on the server, with the session the registration returned.
#[derive(Clone, Debug)]
pub struct RegisteredUser {
    /// `@localpart:localhost`.
    pub user_id: String,
    pub localpart: String,
    pub password: String,
    pub access_token: String,
    pub device_id: String,
}

/// A running (or, between `stop` and `start_again`, stopped) Synapse; killed when dropped.
pub struct Synapse {
    test: String,
    port: u16,
    shared_secret: String,
    child: Option<Child>,
    /// Config, database, signing key, media and log.
    dir: PathBuf,
    /// Deletes `dir` on drop, after the server is gone; `None` for the shared server, whose
    /// watch deletes it.
    cleanup: Option<tempfile::TempDir>,
    http: reqwest::Client,
}

/// The test process's shared server, started by the first `shared_or_skip`; never dropped.
static SHARED: OnceLock<Result<Synapse, String>> = OnceLock::new();
/// Prefixes handed out by `fresh_prefix`.
static PREFIXES: AtomicU32 = AtomicU32::new(0);

impl Synapse {
    /// `$HEARTH_TEST_CACHE/synapse-venv`, the cache defaulting to `~/.cache/hearth-test` (an
    /// empty variable counts as unset, as in the install script).
    pub fn venv_dir() -> PathBuf {
        let cache = match std::env::var_os("HEARTH_TEST_CACHE") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache")
                .join("hearth-test"),
        };
        cache.join("synapse-venv")
    }

    fn python() -> PathBuf {
        Self::venv_dir().join("bin").join("python")
    }

    /// The marker the install script writes once Synapse imports.
    fn marker() -> PathBuf {
        Self::venv_dir().join(".hearth-test-synapse-installed")
    }

    pub fn is_installed() -> bool {
        Self::python().is_file() && Self::marker().is_file()
    }

    /// Start a fresh server for `test`, or decide the test is skipped (`None`, after a note on
    /// stderr) because Synapse is not installed. Panics when it is installed but does not
    /// start, and when it is missing while `HEARTH_REQUIRE_REAL_SERVERS=1`.
    ///
    /// Blocks the calling thread for the few seconds Synapse takes to start: call it first
    /// thing in the test, before anything else runs on the test's runtime.
    #[track_caller]
    pub fn start_or_skip(test: &str) -> Option<Synapse> {
        if !Self::installed_or_skip(test) {
            return None;
        }
        match Self::start(test) {
            Ok(synapse) => Some(synapse),
            Err(err) => panic!("{test}: {err}"),
        }
    }

    /// The test process's server, started on first use (blocking the calling thread as
    /// `start_or_skip` does), or `None` when `test` is skipped as by `start_or_skip`. Other
    /// tests use it at the same time: make `test`'s users with a `fresh_prefix`, and never
    /// stop it. Panics when it does not start.
    #[track_caller]
    pub fn shared_or_skip(test: &str) -> Option<&'static Synapse> {
        if !Self::installed_or_skip(test) {
            return None;
        }
        match SHARED.get_or_init(Self::start_shared) {
            Ok(synapse) => Some(synapse),
            Err(err) => panic!("{test}: the shared synapse did not start: {err}"),
        }
    }

    /// A localpart prefix no other caller in this process gets, `test` in it for the logs:
    /// `matrix_reactions.3.` makes `@matrix_reactions.3.alice:localhost`.
    pub fn fresh_prefix(test: &str) -> String {
        let name: String = test
            .chars()
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
                _ => '_',
            })
            .take(40)
            .collect();
        format!("{name}.{}.", PREFIXES.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether Synapse is installed; when it is not, panics under
    /// `HEARTH_REQUIRE_REAL_SERVERS=1`, and otherwise says on stderr that `test` is skipped.
    #[track_caller]
    fn installed_or_skip(test: &str) -> bool {
        if Self::is_installed() {
            return true;
        }
        let marker = Self::marker();
        if require_real_servers() {
            panic!(
                "{test}: Synapse is not installed ({} is missing) and \
                 HEARTH_REQUIRE_REAL_SERVERS=1; run scripts/install-test-synapse.sh",
                marker.display()
            );
        }
        eprintln!(
            "SKIPPED {test}: Synapse is not installed ({} is missing); run \
             scripts/install-test-synapse.sh to enable this test, or set \
             HEARTH_REQUIRE_REAL_SERVERS=1 to make its absence an error",
            marker.display()
        );
        false
    }

    /// The shared server: started as any other, then its folder handed to a watch that
    /// outlives the test process (its own process group, so a Ctrl-C of the tests does not
    /// end it before it has cleaned up).
    fn start_shared() -> Result<Synapse, String> {
        let mut synapse = Self::start("shared synapse")?;
        let pid = synapse.pid().expect("a started server runs").to_string();
        let folder = synapse
            .dir
            .to_str()
            .ok_or_else(|| format!("synapse: {} is not UTF-8", synapse.dir.display()))?;
        // Never waited for: the watch outlives the test process, to clean up after it.
        #[allow(clippy::zombie_processes)]
        Command::new("/bin/sh")
            .args(["-c", WATCH, "synapse-watch"])
            .arg(std::process::id().to_string())
            .args([pid.as_str(), folder])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|err| format!("synapse: cannot start its watch: {err}"))?;
        if let Some(dir) = synapse.cleanup.take() {
            let _ = dir.keep();
        }
        Ok(synapse)
    }

    /// A fresh server: new folder, new port, new secrets; Synapse makes the signing key and the
    /// database on its first start.
    pub fn start(test: &str) -> Result<Synapse, String> {
        if !Self::python().is_file() {
            return Err(format!(
                "{} is missing; run scripts/install-test-synapse.sh",
                Self::python().display()
            ));
        }
        // No connection kept between requests: the shared server's client serves tests on
        // runtimes of their own, and a connection lives on the runtime that opened it.
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|err| format!("synapse: cannot build an HTTP client: {err}"))?;
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix(&format!("hearth-synapse-{}-", folder_safe(test)))
                .tempdir()
                .map_err(|err| format!("synapse: cannot create a data folder: {err}"))?;
            let mut synapse = Synapse {
                test: test.to_owned(),
                port: reserve_port()?,
                shared_secret: random_secret(),
                child: None,
                dir: dir.path().to_owned(),
                cleanup: Some(dir),
                http: http.clone(),
            };
            synapse.write_config()?;
            match synapse.boot() {
                Ok(()) => return Ok(synapse),
                // Another process bound the port between the probe and Synapse: try another.
                Err(err) if synapse.log_tail().contains("Address already in use") => {
                    last_error = err
                }
                Err(err) => return Err(err),
            }
        }
        Err(last_error)
    }

    /// Root for Matrix clients: `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn server_name(&self) -> &'static str {
        SERVER_NAME
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id, or `None` while it is stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The folder holding the config, database, signing key, media store and log.
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// `@localpart:localhost`.
    pub fn user_id(&self, localpart: &str) -> String {
        format!("@{localpart}:{SERVER_NAME}")
    }

    /// Make a user (an admin when `admin`) with the shared-secret registration API, as
    /// Synapse's `register_new_matrix_user` does; returns its first session. Panics (quoting
    /// the server's log) when the server refuses.
    pub async fn register(&self, localpart: &str, password: &str, admin: bool) -> RegisteredUser {
        match self.try_register(localpart, password, admin).await {
            Ok(user) => user,
            Err(err) => panic!(
                "{}: registering {localpart} failed: {err}\nsynapse log:\n{}",
                self.test,
                self.log_tail()
            ),
        }
    }

    async fn try_register(
        &self,
        localpart: &str,
        password: &str,
        admin: bool,
    ) -> Result<RegisteredUser, String> {
        let url = format!("{}/_synapse/admin/v1/register", self.base_url());
        let nonce = self.json(self.http.get(&url)).await?;
        let nonce = nonce["nonce"]
            .as_str()
            .ok_or_else(|| format!("no nonce in {nonce}"))?
            .to_owned();
        let mac = registration_mac(&self.shared_secret, &nonce, localpart, password, admin);
        let body = json!({
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": admin,
            "mac": mac,
        });
        let answer = self.json(self.http.post(&url).json(&body)).await?;
        let field = |name: &str| {
            answer[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("no {name} in the registration answer {answer}"))
        };
        Ok(RegisteredUser {
            user_id: field("user_id")?,
            localpart: localpart.to_owned(),
            password: password.to_owned(),
            access_token: field("access_token")?,
            device_id: field("device_id")?,
        })
    }

    /// Send a request and decode a JSON answer with a 2xx status.
    async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let response = request.send().await.map_err(|err| err.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|err| err.to_string())?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|err| format!("{err} in {text}"))
    }

    /// Stop the server gracefully (SIGTERM; SIGKILL after 10 s), keeping its folder and port
    /// for `start_again`. Clients see their connections refused until then.
    pub async fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            tokio::task::spawn_blocking(move || terminate(child))
                .await
                .expect("stopping synapse");
        }
    }

    /// Start the stopped server again with the same config, database, signing key and port,
    /// as an operator's restart would. Waits (without blocking the runtime, so clients keep
    /// retrying meanwhile) until it answers. Panics when it does not come back.
    pub async fn start_again(&mut self) {
        self.stop().await;
        let (dir, port) = (self.dir.clone(), self.port);
        let booted = tokio::task::spawn_blocking(move || boot_in(&dir, port))
            .await
            .expect("restarting synapse");
        match booted {
            Ok(child) => self.child = Some(child),
            Err(err) => panic!("{}: synapse did not come back: {err}", self.test),
        }
    }

    /// The end of the server's log (all of its runs), for failure messages.
    pub fn log_tail(&self) -> String {
        log_tail(&log_path(&self.dir))
    }

    fn config_path(&self) -> PathBuf {
        self.dir.join("homeserver.yaml")
    }

    /// Everything loopback-only and local: no federation listener, no key servers, no stats,
    /// cheap password hashing, and every configurable rate limit (Synapse 1.163's `rc_*`)
    /// far above what the tests send: Synapse's defaults throttle one test's burst of logins,
    /// messages and joins within seconds, and the shared server takes every test's at once,
    /// all from 127.0.0.1 (the per-address limits count them together).
    fn write_config(&self) -> Result<(), String> {
        let dir = &self.dir;
        let unlimited = json!({ "per_second": 100000, "burst_count": 100000 });
        let config = json!({
            "server_name": SERVER_NAME,
            "public_baseurl": format!("{}/", self.base_url()),
            "pid_file": dir.join("homeserver.pid"),
            "listeners": [{
                "port": self.port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": false,
                "x_forwarded": false,
                "resources": [{ "names": ["client"], "compress": false }],
            }],
            "database": { "name": "sqlite3", "args": { "database": dir.join("homeserver.db") } },
            "media_store_path": dir.join("media_store"),
            "signing_key_path": dir.join("localhost.signing.key"),
            "registration_shared_secret": self.shared_secret,
            "macaroon_secret_key": random_secret(),
            "form_secret": random_secret(),
            "report_stats": false,
            "enable_metrics": false,
            "enable_registration": false,
            "trusted_key_servers": [],
            "suppress_key_server_warning": true,
            "federation_domain_whitelist": [],
            "url_preview_enabled": false,
            // The attachment tests send a 50 MB file.
            "max_upload_size": "100M",
            "bcrypt_rounds": 4,
            "rc_message": unlimited,
            "rc_registration": unlimited,
            "rc_registration_token_validity": unlimited,
            "rc_login": { "address": unlimited, "account": unlimited, "failed_attempts": unlimited },
            "rc_admin_redaction": unlimited,
            "rc_joins": { "local": unlimited, "remote": unlimited },
            "rc_joins_per_room": unlimited,
            "rc_invites": { "per_room": unlimited, "per_user": unlimited, "per_issuer": unlimited },
            "rc_third_party_invite": unlimited,
            "rc_3pid_validation": unlimited,
            "rc_key_requests": unlimited,
            "rc_media_create": unlimited,
            "rc_presence": { "per_user": unlimited },
            "rc_delayed_event_mgmt": unlimited,
            "rc_room_creation": unlimited,
            "rc_reports": unlimited,
            "rc_user_directory": unlimited,
            "rc_profile": unlimited,
        });
        // YAML is a superset of JSON, and JSON quotes every path safely.
        let text = serde_json::to_string_pretty(&config).expect("config serializes");
        std::fs::write(self.config_path(), text).map_err(|err| {
            format!(
                "synapse: cannot write {}: {err}",
                self.config_path().display()
            )
        })
    }

    /// Spawn the server and wait until it answers.
    fn boot(&mut self) -> Result<(), String> {
        let child = boot_in(&self.dir, self.port)?;
        self.child = Some(child);
        Ok(())
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        // SIGKILL: nothing of a test server is worth a graceful stop, and SQLite is safe.
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        release_port(self.port);
    }
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("synapse.log")
}

/// Start Synapse on `dir`'s config (under a start permit) and wait until it answers.
fn boot_in(dir: &Path, port: u16) -> Result<Child, String> {
    let _permit = StartPermit::acquire();
    let mut child = spawn(dir)?;
    match wait_ready(&mut child, port, dir) {
        Ok(()) => Ok(child),
        Err(err) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(err)
        }
    }
}

fn spawn(dir: &Path) -> Result<Child, String> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(dir))
        .map_err(|err| format!("synapse: cannot open its log file: {err}"))?;
    let stderr = log
        .try_clone()
        .map_err(|err| format!("synapse: cannot share its log file: {err}"))?;
    let python = Synapse::python();
    Command::new(&python)
        .arg("-c")
        .arg(LAUNCHER)
        .arg("--config-path")
        .arg(dir.join("homeserver.yaml"))
        // Relative paths Synapse might derive (none are expected) stay inside the folder.
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        .spawn()
        .map_err(|err| {
            format!(
                "synapse: cannot run {}: {err}; rerun scripts/install-test-synapse.sh",
                python.display()
            )
        })
}

/// Poll `GET /_matrix/client/versions` until it answers 200.
fn wait_ready(child: &mut Child, port: u16, dir: &Path) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "synapse exited ({status}) before it answered on port {port}; its log:\n{}",
                log_tail(&log_path(dir))
            ));
        }
        if versions_status(address) == Some(200) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "synapse did not answer on port {port} within {READY_TIMEOUT:?}; its log:\n{}",
                log_tail(&log_path(dir))
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM, then SIGKILL if the server has not exited within `STOP_TIMEOUT`.
fn terminate(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn log_tail(path: &Path) -> String {
    let mut text = Vec::new();
    let read = File::open(path).and_then(|mut file| {
        let length = file.metadata()?.len();
        file.seek(SeekFrom::Start(length.saturating_sub(LOG_TAIL_BYTES)))?;
        file.read_to_end(&mut text)
    });
    match read {
        Ok(_) => String::from_utf8_lossy(&text).into_owned(),
        Err(err) => format!("(synapse log {} unreadable: {err})", path.display()),
    }
}

/// The `mac` of a shared-secret registration: hex HMAC-SHA1 over
/// `nonce \0 username \0 password \0 admin|notadmin`, keyed with the shared secret.
pub fn registration_mac(
    secret: &str,
    nonce: &str,
    username: &str,
    password: &str,
    admin: bool,
) -> String {
    let role = if admin { "admin" } else { "notadmin" };
    let mut mac = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update([nonce, username, password, role].join("\0").as_bytes());
    let digest = mac.finalize().into_bytes();
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A throwaway secret for one test server (not cryptographic: it guards nothing real).
fn random_secret() -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(32)
        .collect()
}

/// The test name as a file-name fragment.
fn folder_safe(test: &str) -> String {
    test.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect()
}
