//! The supervisor's reconnects on tokio's paused clock: a server that cannot be reached is
//! tried again after waits doubling from 1 s to a minute, readiness saying when, and
//! stopping hearth ends a wait at once. A server with neither command nor url fails every
//! attempt without a process or a socket, so only the waits are measured.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::server::{ServerShared, supervise};
use super::servers::McpOptions;
use crate::config::McpServerConfig;

/// Waits, on the paused clock, until the server's detail changes from `seen`; the new one.
async fn next_detail(shared: &ServerShared, seen: &str) -> String {
    loop {
        let detail = shared.state().detail;
        if detail != seen {
            return detail;
        }
        // Sleeping lets the paused clock run on to the supervisor's next timer.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_server_is_tried_again_after_waits_doubling_to_a_minute() {
    let shared = Arc::new(ServerShared::new(
        "gone",
        &McpServerConfig::default(),
        McpOptions::default(),
    ));
    let (stop, stopped) = watch::channel(false);
    let (first_attempt, first_attempt_done) = oneshot::channel();
    let started = Instant::now();
    let supervisor = tokio::spawn(supervise(shared.clone(), stopped, first_attempt));
    first_attempt_done.await.unwrap();
    let mut detail = shared.state().detail;
    assert!(detail.ends_with("(attempt 1, next in 1s)"), "{detail}");
    let mut attempts_at = Vec::new();
    for attempt in 2..=9 {
        detail = next_detail(&shared, &detail).await;
        attempts_at.push(started.elapsed().as_secs());
        assert!(
            detail.contains(&format!("(attempt {attempt}, next in ")),
            "{detail}"
        );
    }
    // Each attempt after the waits before it: 1, 2, 4, 8, 16, 32, then a minute each.
    assert_eq!(attempts_at, [1, 3, 7, 15, 31, 63, 123, 183]);
    assert!(detail.ends_with("next in 60s)"), "{detail}");
    // Stopping during a wait ends it now, not a minute later.
    let stopping = Instant::now();
    stop.send(true).unwrap();
    supervisor.await.unwrap();
    assert_eq!(stopping.elapsed(), Duration::ZERO);
    assert!(!shared.state().connected);
}
