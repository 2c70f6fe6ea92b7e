//! The SQLite writer: the database's one writing connection, on a thread of its own,
//! committing the writes that arrive together in one transaction (group commit).
//!
//! SQLite allows one writer at a time. Through a pool, each write held that
//! connection for a round trip to the actors' thread and committed alone; here the
//! writer thread runs queued jobs back to back, so concurrent turns share commits
//! and never wait on each other's scheduling. A job's result is handed back only
//! after its transaction committed: "stored" always means durable.
//!
//! `stop` ends it in order: no job is taken after it, every job queued before it is run
//! and committed, the connection is closed, and the thread is joined. A store opened
//! read-only has no writer thread at all (`Writer::read_only`): every write is refused.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use futures::future::BoxFuture;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use super::database_error;
use crate::ports::StorageError;

/// Most jobs in one transaction, so one commit never grows without bound.
const MAX_JOBS_PER_COMMIT: usize = 256;
/// Most jobs waiting for the writer. Four full commits' worth: bursts of every running
/// turn, the telemetry batcher and the pruner fit without waiting while the disk keeps
/// up. Past it the disk is slower than the writers, and a queue that grew would only hold
/// more memory and more writes to lose; a full queue makes `run` wait instead, which
/// slows the turns that write where the pressure comes from.
const MAX_QUEUED_JOBS: usize = 4 * MAX_JOBS_PER_COMMIT;

/// Called once the job's transaction has committed (`Ok`) or failed (`Err`).
type Report = Box<dyn FnOnce(Result<(), String>) + Send>;
type Job = Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Report> + Send>;

/// What the writer thread is asked, in order.
enum Request {
    Job(Job),
    /// Take no more jobs, commit the queued ones, close the connection, then answer.
    Stop(oneshot::Sender<()>),
}

#[derive(Clone)]
pub(super) struct Writer {
    /// `None` for a store opened read-only.
    requests: Option<mpsc::Sender<Request>>,
    /// Taken by the first `stop`, which joins it.
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Writer {
    /// Open the writing connection on a new thread.
    pub async fn start(options: SqliteConnectOptions) -> Result<Writer, StorageError> {
        let (requests, queue) = mpsc::channel(MAX_QUEUED_JOBS);
        let (opened, connected) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("hearth-sqlite-writer".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = opened.send(Err(StorageError::Database(error.to_string())));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match SqliteConnection::connect_with(&options).await {
                        Ok(connection) => {
                            let _ = opened.send(Ok(()));
                            commit_in_groups(connection, queue).await;
                        }
                        Err(error) => {
                            let _ = opened.send(Err(database_error(error)));
                        }
                    }
                });
            })
            .map_err(|error| StorageError::Database(format!("cannot start the writer: {error}")))?;
        connected
            .await
            .map_err(|_| StorageError::Database("the writer thread died".into()))??;
        Ok(Writer {
            requests: Some(requests),
            thread: Arc::new(Mutex::new(Some(thread))),
        })
    }

    /// A writer of a database opened read-only: no thread, no connection; every write is
    /// refused.
    pub fn read_only() -> Writer {
        Writer {
            requests: None,
            thread: Arc::new(Mutex::new(None)),
        }
    }

    /// Run `work` on the writing connection inside a transaction shared with other
    /// jobs; its result comes back once that transaction has committed. `work` must be
    /// one statement, or make itself atomic (a savepoint), since the transaction is shared.
    /// Waits while the queue is full.
    pub async fn run<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static,
    {
        let Some(requests) = &self.requests else {
            return Err(StorageError::Database(
                "the database is opened read-only here; nothing is written".into(),
            ));
        };
        let (send_result, result) = oneshot::channel();
        let job: Job = Box::new(move |connection| {
            Box::pin(async move {
                let outcome = work(connection).await;
                let report: Report = Box::new(move |committed| {
                    let _ = send_result.send(match committed {
                        Ok(()) => outcome,
                        Err(error) => Err(StorageError::Database(error)),
                    });
                });
                report
            })
        });
        requests
            .send(Request::Job(job))
            .await
            .map_err(|_| StorageError::Database("the writer has stopped".into()))?;
        result.await.map_err(|_| {
            StorageError::Database("the write was abandoned: no transaction (see the log)".into())
        })?
    }

    /// Take no more writes, commit every write queued before this call, close the
    /// connection and join the thread. Later writes fail with "the writer has stopped".
    pub async fn stop(&self) {
        let Some(requests) = &self.requests else {
            return;
        };
        let (done, stopped) = oneshot::channel();
        // Refused once the thread stopped taking requests: it is ending already.
        if requests.send(Request::Stop(done)).await.is_ok() {
            let _ = stopped.await;
        }
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(thread) = thread {
            match tokio::task::spawn_blocking(move || thread.join()).await {
                Ok(Ok(())) => tracing::debug!("database writer stopped"),
                Ok(Err(_)) => tracing::error!("the database writer thread panicked"),
                Err(error) => tracing::error!(%error, "the database writer was not joined"),
            }
        }
    }
}

impl Writer {
    /// Like `run`, for several statements that must take effect together: they run in
    /// a savepoint, rolled back if `work` fails, so other jobs in the transaction stay.
    pub async fn run_atomically<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static,
    {
        self.run(move |connection| {
            Box::pin(async move {
                sqlx::query("SAVEPOINT job")
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                let outcome = work(&mut *connection).await;
                let end = if outcome.is_ok() {
                    "RELEASE job"
                } else {
                    "ROLLBACK TO job"
                };
                sqlx::query(end)
                    .execute(&mut *connection)
                    .await
                    .map_err(database_error)?;
                if outcome.is_err() {
                    // ROLLBACK TO keeps the savepoint open; release it too.
                    let _ = sqlx::query("RELEASE job").execute(&mut *connection).await;
                }
                outcome
            })
        })
        .await
    }
}

async fn commit_in_groups(mut connection: SqliteConnection, mut queue: mpsc::Receiver<Request>) {
    let mut requests = Vec::with_capacity(MAX_JOBS_PER_COMMIT);
    let mut jobs = Vec::with_capacity(MAX_JOBS_PER_COMMIT);
    let mut stopped_by = Vec::new();
    // After a stop the queue is closed: what was queued before it still comes, then none.
    while queue.recv_many(&mut requests, MAX_JOBS_PER_COMMIT).await > 0 {
        for request in requests.drain(..) {
            match request {
                Request::Job(job) => jobs.push(job),
                Request::Stop(done) => {
                    queue.close();
                    stopped_by.push(done);
                }
            }
        }
        if !jobs.is_empty() {
            commit_together(&mut connection, &mut jobs).await;
        }
    }
    // Closing the last connection of a WAL database checkpoints it and removes the log.
    if let Err(error) = connection.close().await {
        tracing::warn!(%error, "the database writer's connection did not close cleanly");
    }
    for done in stopped_by {
        let _ = done.send(());
    }
}

/// Run `jobs` in one transaction and report its outcome to each.
async fn commit_together(connection: &mut SqliteConnection, jobs: &mut Vec<Job>) {
    if let Err(error) = sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *connection)
        .await
    {
        // Nothing runs: dropping the jobs tells each caller its write was abandoned.
        tracing::error!(%error, jobs = jobs.len(), "cannot start a database transaction");
        jobs.clear();
        return;
    }
    let mut reports = Vec::with_capacity(jobs.len());
    for job in jobs.drain(..) {
        reports.push(job(&mut *connection).await);
    }
    let outcome = match sqlx::query("COMMIT").execute(&mut *connection).await {
        Ok(_) => Ok(()),
        Err(error) => {
            tracing::error!(%error, jobs = reports.len(), "database commit failed");
            let _ = sqlx::query("ROLLBACK").execute(&mut *connection).await;
            Err(error.to_string())
        }
    };
    for report in reports {
        report(outcome.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sqlx::sqlite::SqliteJournalMode;

    use super::*;

    async fn execute(writer: &Writer, statement: &'static str) -> Result<(), StorageError> {
        writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(statement)
                        .execute(&mut *connection)
                        .await
                        .map(|_| ())
                        .map_err(database_error)
                })
            })
            .await
    }

    /// A job holding the writer, once it holds it, until `release` is sent; the job.
    async fn hold(
        writer: &Writer,
    ) -> (
        oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<(), StorageError>>,
    ) {
        let (started, holding) = oneshot::channel::<()>();
        let (release, released) = oneshot::channel::<()>();
        let writer = writer.clone();
        let held = tokio::spawn(async move {
            let job = async move {
                let _ = started.send(());
                let _ = released.await;
                Ok(())
            };
            writer.run(move |_connection| Box::pin(job)).await
        });
        holding.await.unwrap();
        (release, held)
    }

    /// Wait (yielding to the other tasks) until `ready`, failing after a generous minute.
    async fn until(what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !ready() {
            assert!(std::time::Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_full_queue_makes_writes_wait_and_stop_commits_what_was_queued() {
        let folder = tempfile::tempdir().unwrap();
        let database = folder.path().join("writer.db");
        let options = SqliteConnectOptions::new()
            .filename(&database)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let writer = Writer::start(options.clone()).await.unwrap();
        execute(&writer, "CREATE TABLE t (n INTEGER)")
            .await
            .unwrap();
        let queue = writer.requests.clone().unwrap();

        // One job holds the writer until released, so nothing else is taken meanwhile.
        let (release, held) = hold(&writer).await;
        let queued: Vec<_> = (0..MAX_QUEUED_JOBS)
            .map(|_| {
                let writer = writer.clone();
                tokio::spawn(async move { execute(&writer, "INSERT INTO t VALUES (1)").await })
            })
            .collect();
        until("the queue is full", || queue.capacity() == 0).await;
        let mut waiting = Box::pin(execute(&writer, "INSERT INTO t VALUES (2)"));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        assert_eq!(queue.capacity(), 0, "the queue never grows past its bound");

        release.send(()).unwrap();
        held.await.unwrap().unwrap();
        waiting.await.unwrap();
        for job in queued {
            job.await.unwrap().unwrap();
        }
        // Queued before the stop (behind a job holding the writer again): committed by it.
        let (release, held) = hold(&writer).await;
        let last = tokio::spawn({
            let writer = writer.clone();
            async move { execute(&writer, "INSERT INTO t VALUES (3)").await }
        });
        until("the last write is queued", || {
            queue.capacity() == MAX_QUEUED_JOBS - 1
        })
        .await;
        let stopping = tokio::spawn({
            let writer = writer.clone();
            async move { writer.stop().await }
        });
        until("the stop is queued", || {
            queue.capacity() == MAX_QUEUED_JOBS - 2
        })
        .await;
        release.send(()).unwrap();
        stopping.await.unwrap();
        held.await.unwrap().unwrap();
        last.await.unwrap().unwrap();
        drop(queue);
        let refused = execute(&writer, "INSERT INTO t VALUES (4)").await;
        assert!(
            matches!(&refused, Err(StorageError::Database(message)) if message == "the writer has stopped"),
            "{refused:?}"
        );
        // The one connection closed: the write-ahead log was folded in and removed.
        assert!(!folder.path().join("writer.db-wal").exists());
        let mut reader = SqliteConnection::connect_with(&options).await.unwrap();
        let (count, sum): (i64, i64) = sqlx::query_as("SELECT COUNT(*), SUM(n) FROM t")
            .fetch_one(&mut reader)
            .await
            .unwrap();
        assert_eq!(count as usize, MAX_QUEUED_JOBS + 2);
        assert_eq!(sum as usize, MAX_QUEUED_JOBS + 2 + 3);
    }

    #[tokio::test]
    async fn a_read_only_writer_refuses_every_write() {
        let writer = Writer::read_only();
        let refused = execute(&writer, "CREATE TABLE t (n INTEGER)").await;
        assert!(
            matches!(&refused, Err(StorageError::Database(message)) if message.contains("read-only")),
            "{refused:?}"
        );
        writer.stop().await;
    }
}
