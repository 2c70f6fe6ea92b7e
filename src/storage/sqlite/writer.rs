//! The SQLite writer: the database's one writing connection, on a thread of its own,
//! committing the writes that arrive together in one transaction (group commit).
//!
//! SQLite allows one writer at a time. Through a pool, each write held that
//! connection for a round trip to the actors' thread and committed alone; here the
//! writer thread runs queued jobs back to back, so concurrent turns share commits
//! and never wait on each other's scheduling. A job's result is handed back only
//! after its transaction committed: "stored" always means durable.

use futures::future::BoxFuture;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use super::database_error;
use crate::ports::StorageError;

/// Most jobs in one transaction, so one commit never grows without bound.
const MAX_JOBS_PER_COMMIT: usize = 256;

/// Called once the job's transaction has committed (`Ok`) or failed (`Err`).
type Report = Box<dyn FnOnce(Result<(), String>) + Send>;
type Job = Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Report> + Send>;

#[derive(Clone)]
pub(super) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Writer {
    /// Open the writing connection on a new thread.
    pub async fn start(options: SqliteConnectOptions) -> Result<Writer, StorageError> {
        let (jobs, queue) = mpsc::unbounded_channel();
        let (opened, connected) = oneshot::channel();
        std::thread::Builder::new()
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
        Ok(Writer { jobs })
    }

    /// Run `work` on the writing connection inside a transaction shared with other
    /// jobs; its result comes back once that transaction has committed. `work` must be
    /// one statement, or make itself atomic (a savepoint), since the transaction is shared.
    pub async fn run<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static,
    {
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
        self.jobs
            .send(job)
            .map_err(|_| StorageError::Database("the writer has stopped".into()))?;
        result.await.map_err(|_| {
            StorageError::Database("the write was abandoned: no transaction (see the log)".into())
        })?
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

async fn commit_in_groups(
    mut connection: SqliteConnection,
    mut queue: mpsc::UnboundedReceiver<Job>,
) {
    let mut jobs = Vec::with_capacity(MAX_JOBS_PER_COMMIT);
    while queue.recv_many(&mut jobs, MAX_JOBS_PER_COMMIT).await > 0 {
        if let Err(error) = sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut connection)
            .await
        {
            // Nothing runs: dropping the jobs tells each caller its write was abandoned.
            tracing::error!(%error, jobs = jobs.len(), "cannot start a database transaction");
            jobs.clear();
            continue;
        }
        let mut reports = Vec::with_capacity(jobs.len());
        for job in jobs.drain(..) {
            reports.push(job(&mut connection).await);
        }
        let outcome = match sqlx::query("COMMIT").execute(&mut connection).await {
            Ok(_) => Ok(()),
            Err(error) => {
                tracing::error!(%error, jobs = reports.len(), "database commit failed");
                let _ = sqlx::query("ROLLBACK").execute(&mut connection).await;
                Err(error.to_string())
            }
        };
        for report in reports {
            report(outcome.clone());
        }
    }
}
