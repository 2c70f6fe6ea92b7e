//! Running one family script: a child process started directly (never through a shell
//! string), in its own process group, with the parameters as JSON on stdin and as
//! `--name value` arguments, in the scripts folder, with a minimal environment (hearth's
//! holds its secrets), its output read up to a cap, and the whole group killed at the
//! timeout (and once the script ended, so nothing it started lingers).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::manifest::{Script, ScriptKind};
use super::parameters::plain;

/// How much of each stream the model (and the stored result) gets.
const SHOWN_OUTPUT_CHARS: usize = 1500;
const SHOWN_ERROR_CHARS: usize = 500;
/// After the script ended (or was killed), how long its pipes may stay open.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// How a run ended, as the model reads it and the workflow keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    pub script: String,
    /// The exit code; none when the script was killed (timeout) or ended by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The start of its standard output, and the end of its error output.
    pub output: String,
    pub errors: String,
    /// Bytes it wrote to standard output, and whether more than the cap was dropped.
    pub output_bytes: u64,
    pub truncated: bool,
    pub duration_ms: u64,
}

impl ExecutionResult {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// The tool result of the run.
    pub fn describe(&self) -> String {
        let mut text = if self.timed_out {
            format!(
                "{} ran past its timeout and was stopped (it and every process it started) \
                 after {} ms.",
                self.script, self.duration_ms
            )
        } else {
            match self.exit_code {
                Some(0) => format!("{} finished successfully (exit code 0).", self.script),
                Some(code) => format!("{} failed with exit code {code}.", self.script),
                None => format!("{} was ended by a signal.", self.script),
            }
        };
        if !self.output.is_empty() {
            text.push_str(&format!("\noutput:\n{}", self.output));
        }
        if self.truncated || self.output.chars().count() >= SHOWN_OUTPUT_CHARS {
            text.push_str(&format!(
                "\n(output shortened: it wrote {} bytes)",
                self.output_bytes
            ));
        }
        if !self.errors.is_empty() {
            text.push_str(&format!("\nerror output:\n{}", self.errors));
        }
        text
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("script {script}: cannot start {program:?}: {reason}")]
    Start {
        script: String,
        program: String,
        reason: String,
    },
}

/// What a run may use.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    pub timeout: Duration,
    pub max_output_bytes: u64,
}

/// Run `script` of `folder` with `values`, within `limits`.
pub async fn run_script(
    folder: &Path,
    script: &Script,
    values: &Map<String, Value>,
    limits: RunLimits,
    idempotency_key: Option<&str>,
) -> Result<ExecutionResult, RunError> {
    let file = folder.join(&script.path);
    let (program, mut args) = match script.kind {
        ScriptKind::Python => ("python3".to_string(), vec![file.display().to_string()]),
        ScriptKind::Shell => ("sh".to_string(), vec![file.display().to_string()]),
        ScriptKind::Executable => (file.display().to_string(), Vec::new()),
    };
    for (name, value) in values {
        args.push(format!("--{name}"));
        args.push(plain(value));
    }
    let mut command = tokio::process::Command::new(&program);
    command
        .args(&args)
        .current_dir(folder)
        // Only what a program needs to run: hearth's environment holds its secrets.
        .env_clear()
        .envs(
            ["PATH", "HOME", "LANG", "LC_ALL", "TZ"]
                .into_iter()
                .filter_map(|name| std::env::var(name).ok().map(|value| (name, value))),
        )
        .env("HEARTH_SCRIPT", &script.name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(key) = idempotency_key {
        command.env("HEARTH_IDEMPOTENCY_KEY", key);
    }
    // Its own process group, so the timeout stops everything it started.
    #[cfg(unix)]
    command.process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|error| RunError::Start {
        script: script.name.clone(),
        program: program.clone(),
        reason: error.to_string(),
    })?;
    let group = child.id();
    tracing::info!(script = %script.name, pid = ?group, "family script started");
    let input = Value::Object(values.clone()).to_string();
    if let Some(mut stdin) = child.stdin.take() {
        // A script that never reads its stdin must not hold the run up.
        tokio::spawn(async move {
            let _ = stdin.write_all(input.as_bytes()).await;
        });
    }
    let cap = limits.max_output_bytes;
    let output = child
        .stdout
        .take()
        .map(|pipe| tokio::spawn(read_capped(pipe, cap)));
    let errors = child
        .stderr
        .take()
        .map(|pipe| tokio::spawn(read_capped(pipe, cap)));
    let (status, timed_out) = match tokio::time::timeout(limits.timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            kill_group(group);
            (child.wait().await.ok(), true)
        }
    };
    // Whatever it left running in its group ends with it.
    kill_group(group);
    let (output, output_bytes) = collect(output).await;
    let (errors, _) = collect(errors).await;
    let result = ExecutionResult {
        script: script.name.clone(),
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|status| status.code())
        },
        timed_out,
        output: first_chars(&String::from_utf8_lossy(&output), SHOWN_OUTPUT_CHARS),
        errors: last_chars(&String::from_utf8_lossy(&errors), SHOWN_ERROR_CHARS),
        output_bytes,
        truncated: output_bytes > cap,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    tracing::info!(
        script = %script.name,
        exit_code = ?result.exit_code,
        timed_out,
        output_bytes,
        "family script ended"
    );
    Ok(result)
}

/// Stop every process of the group led by `leader` (gone already: nothing to do).
fn kill_group(leader: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = leader.and_then(|pid| i32::try_from(pid).ok())
        && pid > 0
    {
        // SAFETY: kill(2) takes plain integers and touches no memory of this process; a
        // negative pid names the process group the script leads (`process_group(0)`).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = leader;
}

/// Up to `cap` bytes of `pipe`, and how many it gave in all (the rest is read and dropped,
/// so the script never blocks on a full pipe).
async fn read_capped(mut pipe: impl AsyncRead + Unpin, cap: u64) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut total: u64 = 0;
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let room = usize::try_from(cap.saturating_sub(total)).unwrap_or(usize::MAX);
                kept.extend_from_slice(&buffer[..read.min(room)]);
                total = total.saturating_add(read as u64);
            }
        }
    }
    (kept, total)
}

/// What a reader got, waiting at most `PIPE_GRACE` for a pipe a stray process keeps open.
async fn collect(reader: Option<tokio::task::JoinHandle<(Vec<u8>, u64)>>) -> (Vec<u8>, u64) {
    let Some(mut reader) = reader else {
        return (Vec::new(), 0);
    };
    match tokio::time::timeout(PIPE_GRACE, &mut reader).await {
        Ok(Ok(read)) => read,
        _ => {
            reader.abort();
            (Vec::new(), 0)
        }
    }
}

fn first_chars(text: &str, limit: usize) -> String {
    text.trim().chars().take(limit).collect()
}

fn last_chars(text: &str, limit: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(limit)).collect()
}
