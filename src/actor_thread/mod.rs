//! The actors' thread watched. Every actor and turn runs on the actix System's one thread
//! (ARCHITECTURE.md, Threads): anything that holds it without yielding stalls every member.
//!
//! A tick on that thread asks to wake every `TICK` and measures how late it woke: the
//! histogram `hearth_actor_thread_stall_seconds`. A tick only runs once the stall is over,
//! so a watchdog on a thread of its own reads the tick's heartbeat: once the thread has not
//! beaten for over `STALL_LOGGED`, it notes the spans the thread is inside (`spans.rs`:
//! the turn's span names its conversation and profile), and when the thread beats again it
//! logs the stall once, with how long it lasted and what was running. A thread still held
//! after `STILL_STALLED` is logged then too, so a thread that never comes back is named.

pub mod spans;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use spans::SpanStack;

/// How often the tick asks to run.
const TICK: Duration = Duration::from_millis(200);
/// How often the watchdog looks at the heartbeat: more often than the tick, so no stall
/// over `STALL_LOGGED` passes between two looks.
const LOOK: Duration = Duration::from_millis(100);
/// A stall at least this long is logged.
pub const STALL_LOGGED: Duration = Duration::from_secs(1);
/// A thread held this long is logged while it is still held.
const STILL_STALLED: Duration = Duration::from_secs(10);

/// The tick's heartbeat, read by the watchdog.
struct Heartbeat {
    origin: Instant,
    /// When the tick last ran, in microseconds since `origin`.
    last_beat_micros: AtomicU64,
    /// The latest tick's lateness since the watchdog last took it, in microseconds.
    latest_late_micros: AtomicU64,
    /// The tick ended (the System stopped, or the watch was dropped).
    ended: AtomicBool,
}

impl Heartbeat {
    fn beat(&self, late: Duration) {
        let late = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        self.latest_late_micros.fetch_max(late, Ordering::Relaxed);
        let now = u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last_beat_micros.store(now, Ordering::Release);
    }

    fn last_beat(&self) -> u64 {
        self.last_beat_micros.load(Ordering::Acquire)
    }

    fn quiet_for(&self, last_beat: u64) -> Duration {
        let now = u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX);
        Duration::from_micros(now.saturating_sub(last_beat))
    }
}

/// The watch of the thread it was started on; it ends when dropped or stopped.
pub struct ActorThreadWatch {
    heartbeat: Arc<Heartbeat>,
    stack: Arc<SpanStack>,
    tick: tokio::task::JoinHandle<()>,
    stop_watchdog: Mutex<Option<Sender<()>>>,
}

impl ActorThreadWatch {
    /// Watch the thread this is called on: it must be the actix System's thread (the tick
    /// is spawned on it). Stalls are counted in `metrics` and logged through the subscriber
    /// in force here.
    pub fn start(metrics: Arc<Metrics>) -> Self {
        let heartbeat = Arc::new(Heartbeat {
            origin: Instant::now(),
            last_beat_micros: AtomicU64::new(0),
            latest_late_micros: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        });
        let stack = spans::watch_this_thread();
        let tick = actix::spawn(tick(heartbeat.clone(), metrics));
        let (stop_watchdog, stopped) = std::sync::mpsc::channel();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let watched = (heartbeat.clone(), stack.clone());
        let spawned = std::thread::Builder::new()
            .name("hearth-actor-watchdog".into())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    watchdog(&watched.0, &watched.1, &stopped);
                });
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "the actors' thread's watchdog did not start; stalls are only counted");
        }
        ActorThreadWatch {
            heartbeat,
            stack,
            tick,
            stop_watchdog: Mutex::new(Some(stop_watchdog)),
        }
    }

    /// End the tick and the watchdog.
    pub fn stop(&self) {
        self.tick.abort();
        self.heartbeat.ended.store(true, Ordering::Release);
        let mut sender = self
            .stop_watchdog
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Dropping the sender wakes the watchdog, which ends.
        sender.take();
    }
}

impl Drop for ActorThreadWatch {
    fn drop(&mut self) {
        self.stop();
        spans::unwatch_this_thread(&self.stack);
    }
}

/// Ends the watchdog when the tick's task goes, whoever drops it (an ended System too).
struct TickEnded(Arc<Heartbeat>);

impl Drop for TickEnded {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::Release);
    }
}

async fn tick(heartbeat: Arc<Heartbeat>, metrics: Arc<Metrics>) {
    let _ended = TickEnded(heartbeat.clone());
    heartbeat.beat(Duration::ZERO);
    loop {
        let asked = Instant::now();
        tokio::time::sleep(TICK).await;
        // Measured on the monotonic clock, not tokio's: a paused test clock jumps.
        let late = asked.elapsed().saturating_sub(TICK);
        metrics.observe_actor_thread_stall(late);
        heartbeat.beat(late);
    }
}

/// A stall being watched: since which beat, and what the thread was inside.
struct Stall {
    since_beat: u64,
    running: Option<String>,
    said_still: bool,
}

fn watchdog(heartbeat: &Heartbeat, stack: &SpanStack, stopped: &std::sync::mpsc::Receiver<()>) {
    let mut stall: Option<Stall> = None;
    loop {
        match stopped.recv_timeout(LOOK) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        if heartbeat.ended.load(Ordering::Acquire) {
            return;
        }
        let last_beat = heartbeat.last_beat();
        let quiet = heartbeat.quiet_for(last_beat);
        match &mut stall {
            None if quiet > STALL_LOGGED => {
                stall = Some(Stall {
                    since_beat: last_beat,
                    running: stack.describe(),
                    said_still: false,
                });
            }
            Some(held) if last_beat != held.since_beat => {
                let late = heartbeat.latest_late_micros.swap(0, Ordering::Relaxed);
                let lasted = Duration::from_micros(late);
                if lasted >= STALL_LOGGED {
                    log_stall(
                        lasted,
                        held.running.as_deref(),
                        "the actors' thread was held",
                    );
                }
                stall = None;
            }
            Some(held) if !held.said_still && quiet > STILL_STALLED => {
                held.said_still = true;
                log_stall(
                    quiet,
                    held.running.as_deref(),
                    "the actors' thread is still held",
                );
            }
            _ => {}
        }
    }
}

fn log_stall(lasted: Duration, running: Option<&str>, message: &str) {
    let stalled_ms = u64::try_from(lasted.as_millis()).unwrap_or(u64::MAX);
    let running = running.unwrap_or("no span (an actor's handler or a task without a span)");
    tracing::warn!(stalled_ms, running, "{message}: every member waited");
}
