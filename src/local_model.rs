//! The small local model hearth answers with when no other is configured or `--local-model`
//! asks for it: SmolLM2-135M-Instruct served by llama.cpp (xllamacpp) on 127.0.0.1, installed
//! by `scripts/install-local-llm.sh` with its launcher `hearth-local-llm PORT`.
//!
//! [`LocalModelServer::start`] runs the launcher as a child process on a free loopback port
//! and waits until its `/health` answers; the server speaks the OpenAI API under `/v1`, so the
//! ordinary OpenAI provider talks to it. The child dies with hearth: it is killed when the
//! server is stopped or dropped, and after a `kill -9` of hearth the launcher notices it was
//! re-parented and exits by itself within about a second. The server's own output is logged
//! at debug level and its last lines are kept for the error a failed start reports.

use std::collections::VecDeque;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// The name the launcher serves the model under (llama.cpp answers any name with it).
pub const MODEL_ALIAS: &str = "smollm2-135m";
/// The variable naming the install folder, read by the install script and by hearth alike.
pub const INSTALL_DIR_ENV: &str = "HEARTH_LOCAL_LLM_DIR";
/// The script that installs the model and its launcher.
pub const INSTALL_SCRIPT: &str = "scripts/install-local-llm.sh";
/// The launcher's file name inside the install folder's `bin`.
const LAUNCHER: &str = "hearth-local-llm";

/// How long the model may take to load and answer `/health`: a second or two on an idle
/// machine, much longer on a small busy one.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How often a start that takes a while says it is still waiting.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// Attempts with a fresh port, in case another process takes the probed port before the child.
const START_ATTEMPTS: usize = 3;
/// The server's last output lines kept for error messages.
const LOG_TAIL_LINES: usize = 40;

/// The install folder by the install script's rule: `$HEARTH_LOCAL_LLM_DIR`, else
/// `$HOME/.cache/hearth/local-llm` (an empty variable counts as unset). `None` when neither
/// is set.
pub fn install_dir(dir_variable: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    match (dir_variable, home) {
        (Some(dir), _) if !dir.is_empty() => Some(PathBuf::from(dir)),
        (_, Some(home)) if !home.is_empty() => Some(
            Path::new(home)
                .join(".cache")
                .join("hearth")
                .join("local-llm"),
        ),
        _ => None,
    }
}

/// Where the model and its launcher are installed (a Python venv).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelInstall {
    dir: PathBuf,
}

impl LocalModelInstall {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LocalModelInstall { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The launcher script the install script writes.
    pub fn launcher(&self) -> PathBuf {
        self.dir.join("bin").join(LAUNCHER)
    }

    /// The venv's python, which runs the launcher: a shebang cannot hold a long install path.
    fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LocalModelError {
    #[error(
        "the local model is not installed: {} is missing; run `bash {INSTALL_SCRIPT}` \
         (it installs into ${INSTALL_DIR_ENV}, default ~/.cache/hearth/local-llm), or \
         configure a model in `llms` and start without --local-model",
        launcher.display()
    )]
    NotInstalled { launcher: PathBuf },
    #[error("no free loopback port for the local model: {0}")]
    NoPort(std::io::Error),
    #[error(
        "cannot run the local model's launcher {} with {}: {source}; rerun `bash {INSTALL_SCRIPT}`",
        launcher.display(),
        python.display()
    )]
    Spawn {
        launcher: PathBuf,
        python: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the local model exited ({status}) before it was ready on 127.0.0.1:{port}; rerun \
         `bash {INSTALL_SCRIPT}` if it is broken; its last output:\n{log}"
    )]
    Exited {
        status: ExitStatus,
        port: u16,
        log: String,
    },
    #[error(
        "the local model was not ready on 127.0.0.1:{port} within {seconds} s; its last output:\n{log}"
    )]
    NotReady {
        port: u16,
        seconds: u64,
        log: String,
    },
}

/// The server's last output lines, shared with the tasks reading its pipes.
type LogTail = Arc<Mutex<VecDeque<String>>>;

/// The running server; killed when stopped or dropped.
pub struct LocalModelServer {
    child: tokio::sync::Mutex<Child>,
    port: u16,
    log: LogTail,
}

impl LocalModelServer {
    /// Runs the launcher of `install` on a free loopback port and waits until the model is
    /// loaded and answers, saying on the log while it waits.
    pub async fn start(install: &LocalModelInstall) -> Result<LocalModelServer, LocalModelError> {
        let launcher = install.launcher();
        if !tokio::fs::try_exists(&launcher).await.unwrap_or(false) {
            return Err(LocalModelError::NotInstalled { launcher });
        }
        let mut attempt = 1;
        loop {
            let port = free_port()?;
            let mut server = Self::spawn(install, port)?;
            match server.wait_ready().await {
                Ok(()) => return Ok(server),
                // It died on its own: most likely the port was taken meanwhile, so try another.
                Err(error @ LocalModelError::Exited { .. }) if attempt < START_ATTEMPTS => {
                    tracing::warn!(%error, "the local model did not start; trying another port");
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The root for OpenAI clients: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's last output lines, for failure messages.
    pub fn log_tail(&self) -> String {
        read_tail(&self.log)
    }

    /// Kills the server and waits for it to end. It keeps no state worth a graceful stop.
    pub async fn stop(&self) {
        let mut child = self.child.lock().await;
        if let Err(error) = child.kill().await {
            tracing::warn!(%error, "the local model could not be stopped");
        }
    }

    fn spawn(install: &LocalModelInstall, port: u16) -> Result<LocalModelServer, LocalModelError> {
        let python = install.python();
        let mut child = Command::new(&python)
            .arg(install.launcher())
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| LocalModelError::Spawn {
                launcher: install.launcher(),
                python: python.clone(),
                source,
            })?;
        let log = LogTail::default();
        // Both pipes are read to their end, so the server never blocks on a full one.
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(keep_output(stdout, log.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_output(stderr, log.clone()));
        }
        Ok(LocalModelServer {
            child: tokio::sync::Mutex::new(child),
            port,
            log,
        })
    }

    /// Polls `/health` until it answers 200 (it answers 503 while the model loads).
    async fn wait_ready(&mut self) -> Result<(), LocalModelError> {
        let started = Instant::now();
        let mut next_progress = started + PROGRESS_EVERY;
        let health = format!("http://127.0.0.1:{}/health", self.port);
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_default();
        tracing::info!(port = self.port, "starting the local model ({MODEL_ALIAS})");
        loop {
            if let Ok(Some(status)) = self.child.get_mut().try_wait() {
                return Err(LocalModelError::Exited {
                    status,
                    port: self.port,
                    log: self.log_tail(),
                });
            }
            let answered = client.get(&health).send().await;
            if answered.is_ok_and(|response| response.status().is_success()) {
                tracing::info!(
                    port = self.port,
                    seconds = started.elapsed().as_secs(),
                    "the local model is ready"
                );
                return Ok(());
            }
            let now = Instant::now();
            if now >= started + READY_TIMEOUT {
                return Err(LocalModelError::NotReady {
                    port: self.port,
                    seconds: READY_TIMEOUT.as_secs(),
                    log: self.log_tail(),
                });
            }
            if now >= next_progress {
                tracing::info!(
                    seconds = started.elapsed().as_secs(),
                    "still waiting for the local model to load"
                );
                next_progress = now + PROGRESS_EVERY;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// What a newcomer is told once the local model answers: what it is and how to use a real one.
pub fn notice(base_url: &str) -> String {
    format!(
        "hearth answers with a very small local model: SmolLM2-135M-Instruct (135 million \
         parameters), served by llama.cpp at {base_url}. It is there to try hearth out without \
         an account: its answers are often wrong or rambling, and it does not call hearth's \
         tools (reminders, notes, ...).\n\
         For a real model, start without --local-model and with a model in `llms`: the example \
         configuration's `llms.main` is OpenAI's gpt-4o-mini with the key in OPENAI_API_KEY, \
         or point `llms.main.base_url` and `llms.main.model` at your own Ollama or llama.cpp \
         server (e.g. HEARTH__LLMS__MAIN__BASE_URL=http://127.0.0.1:11434/v1 \
         HEARTH__LLMS__MAIN__MODEL=qwen2.5)."
    )
}

/// A loopback port free right now (the OS picks it; the listener is closed again).
fn free_port() -> Result<u16, LocalModelError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(LocalModelError::NoPort)
}

/// Reads one of the server's pipes to its end: each line logged at debug level and kept in
/// the tail. Lines are read as bytes, so output that is not UTF-8 never stops the reading.
async fn keep_output(pipe: impl AsyncRead + Unpin, log: LogTail) {
    let mut reader = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        tracing::debug!(target: "hearth::local_model::server", "{text}");
        let Ok(mut tail) = log.lock() else { return };
        if tail.len() == LOG_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}

fn read_tail(log: &LogTail) -> String {
    match log.lock() {
        Ok(tail) => tail.iter().cloned().collect::<Vec<_>>().join("\n"),
        Err(_) => "(the output is unreadable)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_folder_follows_the_install_scripts_rule() {
        assert_eq!(
            install_dir(Some("/opt/llm"), Some("/home/a")),
            Some(PathBuf::from("/opt/llm"))
        );
        assert_eq!(
            install_dir(Some(""), Some("/home/a")),
            Some(PathBuf::from("/home/a/.cache/hearth/local-llm"))
        );
        assert_eq!(install_dir(None, None), None);
    }

    #[tokio::test]
    async fn a_missing_launcher_names_the_install_script() {
        let folder = tempfile::tempdir().unwrap();
        let install = LocalModelInstall::new(folder.path().join("local-llm"));
        let error = match LocalModelServer::start(&install).await {
            Ok(_) => panic!("nothing is installed, yet the local model started"),
            Err(error) => error,
        };
        assert!(
            matches!(error, LocalModelError::NotInstalled { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("bash scripts/install-local-llm.sh"),
            "{message}"
        );
        assert!(
            message.contains(&install.launcher().display().to_string()),
            "{message}"
        );
    }
}
