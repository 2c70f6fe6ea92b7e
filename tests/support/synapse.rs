//! A real Synapse homeserver on 127.0.0.1, run as a child process for tests that must prove
//! hearth speaks Matrix to a real server (sync, end-to-end encryption, restarts), not to a fake.
//!
//! `scripts/install-test-synapse.sh` installs Synapse into `$HEARTH_TEST_CACHE/synapse-venv`
//! (default `~/.cache/hearth-test`); this module writes each server its own loopback-only
//! config, SQLite database and signing key in a temporary folder, so tests running in parallel
//! never share a server. With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing install fails the
//! test, otherwise the test skips. Users are made with the shared-secret admin registration
//! API, so no test depends on open registration.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha1::Sha1;

use super::real_llm::require_real_servers;

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
    /// Config, database, signing key, media and log; deleted on drop, after the server is gone.
    dir: tempfile::TempDir,
    http: reqwest::Client,
}

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
        if !Self::is_installed() {
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
            return None;
        }
        match Self::start(test) {
            Ok(synapse) => Some(synapse),
            Err(err) => panic!("{test}: {err}"),
        }
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
        let http = reqwest::Client::builder()
            .no_proxy()
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
                dir,
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
        self.dir.path()
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
        let (dir, port) = (self.dir.path().to_owned(), self.port);
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
        log_tail(&log_path(self.dir.path()))
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("homeserver.yaml")
    }

    /// Everything loopback-only and local: no federation listener, no key servers, no stats,
    /// cheap password hashing, and rate limits far above what any test sends (Synapse's
    /// defaults throttle a test's burst of logins, messages and joins within seconds).
    fn write_config(&self) -> Result<(), String> {
        let dir = self.dir.path();
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
        let child = boot_in(self.dir.path(), self.port)?;
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

/// The HTTP status of `GET /_matrix/client/versions`, or `None` when nothing answers yet.
fn versions_status(address: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    stream
        .write_all(
            b"GET /_matrix/client/versions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .ok()?;
    // The status line is all that is needed: "HTTP/1.1 200 OK".
    let mut head = [0u8; 64];
    let mut filled = 0;
    while filled < head.len() {
        match stream.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(_) => return None,
        }
        if head[..filled].contains(&b'\n') {
            break;
        }
    }
    let line = std::str::from_utf8(&head[..filled]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
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

/// Ports handed to servers of this process and not yet released.
static TAKEN_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

fn taken_ports() -> MutexGuard<'static, BTreeSet<u16>> {
    TAKEN_PORTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A loopback port free right now for a server of this process. Chosen below the kernel's
/// ephemeral range, so that no outgoing connection (of which a test suite makes thousands)
/// takes it between this probe and Synapse's bind, nor while it is stopped for a restart.
fn reserve_port() -> Result<u16, String> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let mut taken = taken_ports();
    if ephemeral_low > 12000 {
        for _ in 0..200 {
            let port = fastrand::u16(10000..ephemeral_low);
            if !taken.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
                taken.insert(port);
                return Ok(port);
            }
        }
    }
    // An unusual kernel setting: let the OS pick one.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|err| format!("synapse: no free loopback port: {err}"))?;
    taken.insert(port);
    Ok(port)
}

fn release_port(port: u16) {
    taken_ports().remove(&port);
}

/// At most one Synapse start per core at a time in this process: a start is a second of
/// Python imports and schema creation at full CPU, and a dozen at once on 2 cores would each
/// take far longer than starting them in turn.
struct StartPermit;

static STARTS_RUNNING: Mutex<usize> = Mutex::new(0);
static START_FREED: Condvar = Condvar::new();

impl StartPermit {
    fn acquire() -> StartPermit {
        let limit = std::thread::available_parallelism()
            .map(|cores| cores.get())
            .unwrap_or(1)
            .clamp(1, 4);
        let mut running = STARTS_RUNNING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while *running >= limit {
            running = START_FREED
                .wait(running)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *running += 1;
        StartPermit
    }
}

impl Drop for StartPermit {
    fn drop(&mut self) {
        let mut running = STARTS_RUNNING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *running -= 1;
        START_FREED.notify_one();
    }
}
