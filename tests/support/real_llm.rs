//! A real llama.cpp server (xllamacpp serving SmolLM2-135M-Instruct) on 127.0.0.1, run as a
//! child process for tests that must prove hearth talks to a real OpenAI-compatible backend.
//!
//! `scripts/install-test-llm.sh` installs it under `$HEARTH_TEST_CACHE` (default
//! `~/.cache/hearth-test`); this module only finds and runs its launcher. With
//! `HEARTH_REQUIRE_REAL_SERVERS=1` a missing install fails the test, otherwise the test skips.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model name the launcher registers; llama.cpp serves its one model under any name.
pub const REAL_LLM_MODEL: &str = "smollm2-135m";

/// How long the server may take to load the model and answer `/health`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Attempts with a fresh port, in case another process takes the probed port before the child.
const START_ATTEMPTS: usize = 3;
/// The most of the server's log quoted in an error.
const LOG_TAIL_BYTES: u64 = 4000;

/// The running server; killed when dropped.
pub struct RealLlmServer {
    child: Child,
    port: u16,
    /// The child's stdout and stderr, kept for error messages.
    log: tempfile::NamedTempFile,
}

impl RealLlmServer {
    /// `$HEARTH_TEST_CACHE/llm-venv`, the cache defaulting to `~/.cache/hearth-test` (an empty
    /// variable counts as unset, as in the install script).
    pub fn venv_dir() -> PathBuf {
        let cache = match std::env::var_os("HEARTH_TEST_CACHE") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache")
                .join("hearth-test"),
        };
        cache.join("llm-venv")
    }

    /// The launcher script the install script writes.
    pub fn launcher_path() -> PathBuf {
        Self::venv_dir().join("bin").join("hearth-test-llm")
    }

    pub fn is_installed() -> bool {
        Self::launcher_path().is_file()
    }

    /// Start the server for a test, or decide the test is skipped (`None`, after a note on
    /// stderr) because the server is not installed. Panics when it is installed but does not
    /// start, and when it is missing while `HEARTH_REQUIRE_REAL_SERVERS=1`.
    #[track_caller]
    pub fn start_or_skip(test: &str) -> Option<RealLlmServer> {
        if !Self::is_installed() {
            let launcher = Self::launcher_path();
            if require_real_servers() {
                panic!(
                    "{test}: the real LLM server is not installed ({} is missing) and \
                     HEARTH_REQUIRE_REAL_SERVERS=1; run scripts/install-test-llm.sh",
                    launcher.display()
                );
            }
            eprintln!(
                "SKIPPED {test}: the real LLM server is not installed ({} is missing); run \
                 scripts/install-test-llm.sh to enable this test, or set \
                 HEARTH_REQUIRE_REAL_SERVERS=1 to make its absence an error",
                launcher.display()
            );
            return None;
        }
        match Self::start() {
            Ok(server) => Some(server),
            Err(err) => panic!("{test}: {err}"),
        }
    }

    /// Spawn the launcher on a free loopback port and wait until `/health` answers 200.
    pub fn start() -> Result<RealLlmServer, String> {
        let launcher = Self::launcher_path();
        if !launcher.is_file() {
            return Err(format!(
                "{} is missing; run scripts/install-test-llm.sh",
                launcher.display()
            ));
        }
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port()?;
            let mut server = Self::spawn(port)?;
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                // It died on its own: most likely the port was taken meanwhile, so try another.
                Err(err) if server.exited() => last_error = err,
                Err(err) => return Err(err),
            }
        }
        Err(last_error)
    }

    /// Root for OpenAI clients: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The end of the server's log (stdout and stderr), for failure messages.
    pub fn log_tail(&self) -> String {
        let mut file = self.log.as_file();
        let length = file.metadata().map(|meta| meta.len()).unwrap_or(0);
        let mut text = Vec::new();
        let read = file
            .seek(SeekFrom::Start(length.saturating_sub(LOG_TAIL_BYTES)))
            .and_then(|_| file.read_to_end(&mut text));
        match read {
            Ok(_) => String::from_utf8_lossy(&text).into_owned(),
            Err(err) => format!("(server log unreadable: {err})"),
        }
    }

    fn spawn(port: u16) -> Result<RealLlmServer, String> {
        let log = tempfile::NamedTempFile::new()
            .map_err(|err| format!("real llm server: cannot create a log file: {err}"))?;
        let stdout = log
            .reopen()
            .map_err(|err| format!("real llm server: cannot open the log file: {err}"))?;
        let stderr = log
            .reopen()
            .map_err(|err| format!("real llm server: cannot open the log file: {err}"))?;
        // The venv's python runs the script, so a cache path a shebang cannot hold still works.
        let python = Self::venv_dir().join("bin").join("python");
        let child = Command::new(&python)
            .arg(Self::launcher_path())
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|err| {
                format!(
                    "real llm server: cannot run {} {}: {err}; rerun scripts/install-test-llm.sh",
                    python.display(),
                    Self::launcher_path().display()
                )
            })?;
        Ok(RealLlmServer { child, port, log })
    }

    /// Poll `/health` until it answers 200 (it answers 503 while the model loads).
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "real llm server exited ({status}) before it was ready on port {}; its log:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            if health_status(address) == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "real llm server not ready on port {} after {READY_TIMEOUT:?}; its log:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for RealLlmServer {
    fn drop(&mut self) {
        // SIGKILL: the server keeps no state worth a graceful stop. Should this never run
        // (the test process killed), the launcher exits by itself once orphaned.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when `HEARTH_REQUIRE_REAL_SERVERS=1`: missing real servers fail tests instead of skipping.
pub fn require_real_servers() -> bool {
    std::env::var("HEARTH_REQUIRE_REAL_SERVERS").is_ok_and(|value| value.trim() == "1")
}

/// A loopback port free right now (the OS picks it; the listener is closed again).
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|err| format!("real llm server: no free loopback port: {err}"))
}

/// The HTTP status of `GET /health`, or `None` when nothing (readable) answers yet.
fn health_status(address: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
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
