//! The tasks a channel runs besides its actor, under one cancellation token and one task
//! set: its event source (polling, a sync loop) and its delivery workers. Stopping the
//! channel cancels the token, so the event source stops at once and each delivery worker
//! ends after the part it is sending (noted as sent), and then waits for them, at most
//! `STOP_WAIT`: a part is not cut off mid-send, and what is left stays in the outbox for
//! the next start.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The longest a stop waits for the parts being sent.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Default)]
pub(crate) struct ChannelTasks {
    token: CancellationToken,
    tracker: TaskTracker,
}

impl ChannelTasks {
    /// Run `task` until it ends or the channel stops (then it is dropped where it waits).
    pub(crate) fn spawn_cancellable<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let token = self.token.clone();
        self.tracker.spawn(async move {
            token.run_until_cancelled(task).await;
        });
    }

    /// Run `task`, which watches a `child_token` itself to end at a point of its choosing.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(task);
    }

    /// A token cancelled when the channel stops, or earlier by its holder: for a part of
    /// the channel that may end on its own (the event source of a worker that no longer
    /// leads its platform).
    pub(crate) fn child_token(&self) -> CancellationToken {
        self.token.child_token()
    }

    /// Run `task` until it ends or `token` (a `child_token`) is cancelled.
    pub(crate) fn spawn_until<F>(&self, token: CancellationToken, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(async move {
            token.run_until_cancelled(task).await;
        });
    }

    /// Stop every task: cancel the token, then wait for the tasks to end, at most
    /// `limit`; whether they all ended.
    pub(crate) fn stop(&self, limit: Duration) -> impl Future<Output = bool> + 'static {
        self.token.cancel();
        self.tracker.close();
        let tracker = self.tracker.clone();
        async move { tokio::time::timeout(limit, tracker.wait()).await.is_ok() }
    }
}
