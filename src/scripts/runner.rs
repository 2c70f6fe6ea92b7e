//! Running one family script: a child process started directly (never through a shell
//! string), in its own process group, with the parameters as JSON on stdin and as
//! `--name=value` arguments (one argument each, so a value starting with `--` is never
//! read as an option), in the scripts folder, with a minimal environment (hearth's holds
//! its secrets), its output read up to a cap, and the whole group killed at the timeout
//! (and once the script ended, so nothing it started lingers).
//!
//! The group is only ever signalled while its leader, the script, is not reaped: the
//! script's end is awaited without reaping it (`waitid` with `WNOWAIT`), so its pid, which
//! is the group's id, cannot belong to another process when the group is killed. Output is
//! kept as it is read: a process that left the group (`setsid`) and still holds the pipes
//! costs the run at most `PIPE_GRACE` after the script's end, never what came before.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
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
        args.push(format!("--{name}={}", plain(value)));
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
    // Declared after `child`, so dropped before it: a run given up half-way (its turn
    // dropped) kills the group while the script is not reaped yet.
    let mut group = ProcessGroup::led_by(child.id());
    tracing::info!(script = %script.name, pid = ?group.leader, "family script started");
    let input = Value::Object(values.clone()).to_string();
    if let Some(mut stdin) = child.stdin.take() {
        // A script that never reads its stdin must not hold the run up.
        tokio::spawn(async move {
            let _ = stdin.write_all(input.as_bytes()).await;
        });
    }
    let cap = limits.max_output_bytes;
    let output = child.stdout.take().map(|pipe| Captured::read(pipe, cap));
    let errors = child.stderr.take().map(|pipe| Captured::read(pipe, cap));
    let timed_out = match tokio::time::timeout(limits.timeout, group.exited()).await {
        Ok(()) => false,
        Err(_) => {
            group.kill();
            group.exited().await;
            true
        }
    };
    // Whatever it left running in its group ends with it; the script is still unreaped.
    group.kill();
    let status = child.wait().await.ok();
    group.reaped();
    let pipes_close_by = tokio::time::Instant::now() + PIPE_GRACE;
    let (output, output_bytes) = Captured::kept(output, pipes_close_by).await;
    let (errors, _) = Captured::kept(errors, pipes_close_by).await;
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

/// The process group a script leads (`process_group(0)`: its id is the script's pid).
/// Signalled only while the script is not reaped; dropped before `reaped`, it kills the
/// group, so a run given up half-way leaves nothing running.
struct ProcessGroup {
    leader: Option<u32>,
    /// Set once the script was reaped: its pid, and so the group id, may be reused.
    reaped: bool,
}

impl ProcessGroup {
    fn led_by(leader: Option<u32>) -> Self {
        ProcessGroup {
            leader,
            reaped: false,
        }
    }

    /// Once the script has ended, without reaping it: until `Child::wait` reaps it, it is a
    /// zombie holding its pid.
    async fn exited(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.leader {
            let _ = tokio::task::spawn_blocking(move || wait_unreaped(pid)).await;
        }
    }

    /// SIGKILL to every process of the group, while its leader is not reaped.
    fn kill(&self) {
        if self.reaped {
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = self.leader.and_then(|pid| i32::try_from(pid).ok())
            && pid > 0
        {
            // SAFETY: kill(2) takes plain integers and touches no memory of this process; a
            // negative pid names the process group the script leads, whose id is not
            // reused while the unreaped leader holds it.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }

    /// The script was reaped: its group is never signalled again.
    fn reaped(&mut self) {
        self.reaped = true;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Block until process `pid`, a child of this process, has ended, leaving it unreaped
/// (`WNOWAIT`). Returns at once if it is not a child of ours any more.
#[cfg(unix)]
fn wait_unreaped(pid: u32) {
    let id = libc::id_t::from(pid);
    loop {
        // SAFETY: `info` is a zeroed siginfo_t owned by this frame, which waitid(2) fills.
        let outcome = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if outcome == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
        {
            return;
        }
    }
}

/// One output pipe of a script, read as it comes: up to `cap` bytes kept, every byte
/// counted (the rest is read and dropped, so the script never blocks on a full pipe).
struct Captured {
    read_so_far: Arc<Mutex<(Vec<u8>, u64)>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Captured {
    fn read(mut pipe: impl AsyncRead + Unpin + Send + 'static, cap: u64) -> Captured {
        let read_so_far = Arc::new(Mutex::new((Vec::new(), 0u64)));
        let shared = read_so_far.clone();
        let reader = tokio::spawn(async move {
            let mut buffer = vec![0u8; 16 * 1024];
            loop {
                match pipe.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => {
                        let mut guard = shared
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner());
                        let (kept, total) = &mut *guard;
                        let room =
                            usize::try_from(cap.saturating_sub(*total)).unwrap_or(usize::MAX);
                        kept.extend_from_slice(&buffer[..read.min(room)]);
                        *total = total.saturating_add(read as u64);
                    }
                }
            }
        });
        Captured {
            read_so_far,
            reader,
        }
    }

    /// What was read until the pipe closed or, when a process that left the script's group
    /// keeps it open, until `deadline`: kept either way.
    async fn kept(captured: Option<Captured>, deadline: tokio::time::Instant) -> (Vec<u8>, u64) {
        let Some(Captured {
            read_so_far,
            mut reader,
        }) = captured
        else {
            return (Vec::new(), 0);
        };
        if tokio::time::timeout_at(deadline, &mut reader)
            .await
            .is_err()
        {
            reader.abort();
            tracing::warn!(
                "a process the family script started outside its group keeps its output \
                 open; the output read so far is kept"
            );
        }
        std::mem::take(
            &mut *read_so_far
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use tokio::io::AsyncBufReadExt;

    use super::*;

    /// The state letter of process `pid` in `/proc`, `None` once it is gone.
    fn state(pid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        rest.trim_start().chars().next()
    }

    #[tokio::test]
    async fn the_group_is_killed_while_its_leader_still_holds_the_group_id() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "sleep 300 & echo $!; exit 0"])
            .stdout(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let sleeper: u32 = lines.next_line().await.unwrap().unwrap().parse().unwrap();
        let mut group = ProcessGroup::led_by(child.id());
        let leader = group.leader.unwrap();

        group.exited().await;
        // Ended but not reaped: a zombie still holding its pid, the group's id.
        assert_eq!(state(leader), Some('Z'));
        assert_eq!(child.id(), Some(leader));
        group.kill();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !matches!(state(sleeper), None | Some('Z')) {
            assert!(Instant::now() < deadline, "the script's sleeper still runs");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        child.wait().await.unwrap();
        group.reaped();
    }
}
