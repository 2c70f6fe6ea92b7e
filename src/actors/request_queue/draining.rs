//! Draining the queue for a stop (`DrainTurns`): from then on no turn starts, and the
//! answer comes once every running turn has ended with its outcome stored.
//!
//! What waits in a lane stays `accepted` in the inbox and runs after the next start, so
//! nothing is lost by not starting it; a turn cut off mid-way would only be resumed from
//! its journal. The caller bounds the wait (`RunningApp::stop`): a turn that runs on (a
//! slow model, a member's unanswered question) is left to that journal.

use actix::{Handler, Message, ResponseFuture};
use tokio::sync::oneshot;

use super::RequestQueue;

/// Start no more turns; answer once no turn runs.
///
/// Sent by `RunningApp::stop` (`app/mod.rs`); handled here, in `request_queue/draining.rs`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct DrainTurns;

/// Whether the queue drains, and who waits for its running turns to end.
#[derive(Default)]
pub(super) struct Draining {
    draining: bool,
    waiting: Vec<oneshot::Sender<()>>,
}

impl Draining {
    /// No turn may start.
    pub(super) fn stops_turns(&self) -> bool {
        self.draining
    }

    /// `running` turns run now: at none, whoever waits is answered.
    pub(super) fn turns_running(&mut self, running: usize) {
        if self.draining && running == 0 {
            for waiting in self.waiting.drain(..) {
                let _ = waiting.send(());
            }
        }
    }
}

impl Handler<DrainTurns> for RequestQueue {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _message: DrainTurns, _ctx: &mut Self::Context) -> Self::Result {
        let running = self.lanes.running();
        tracing::info!(running, "no new turns; waiting for the running ones");
        let (done, drained) = oneshot::channel();
        self.draining.draining = true;
        self.draining.waiting.push(done);
        self.draining.turns_running(running);
        Box::pin(async move {
            let _ = drained.await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_are_answered_once_no_turn_runs_and_only_while_draining() {
        let mut draining = Draining::default();
        let (done, mut drained) = oneshot::channel();
        draining.waiting.push(done);
        draining.turns_running(0);
        assert!(drained.try_recv().is_err(), "not draining: nobody is told");
        draining.draining = true;
        draining.turns_running(2);
        assert!(drained.try_recv().is_err(), "turns still run");
        draining.turns_running(0);
        assert_eq!(drained.try_recv(), Ok(()));
        assert!(draining.stops_turns());
    }
}
