//! What every actor stands on, built before any of them: the stores (the database opened
//! under its instance lock, or the stores a caller gave), the counters and readiness every
//! part reports to, and this process joined to the database's workers.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::{StartError, platforms};
use crate::config::{HearthConfig, LoadedConfig};
use crate::metrics::Metrics;
use crate::readiness::Readiness;
use crate::retention::{RetentionSettings, spawn_pruner};
use crate::storage::instance_lock::InstanceLock;
use crate::storage::{self, Stores};
use crate::workers::Worker;

/// The stores, and what opening them here holds.
pub(super) struct OpenedStores {
    pub stores: Stores,
    /// Held while running on a SQLite file opened here (a database url naming no file,
    /// PostgreSQL's or in-memory, has nothing to lock).
    pub instance_lock: Option<InstanceLock>,
    /// Whether the stores were opened here rather than given: `RunningApp::stop` closes
    /// only those.
    pub owns_stores: bool,
}

/// What the later steps all read.
pub(super) struct Foundation {
    pub stores: Stores,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// This process among the database's workers, when it opened the stores itself.
    pub worker: Option<Arc<Worker>>,
    /// `worker` where conversations and platforms move between workers: on PostgreSQL
    /// only, since SQLite has one process.
    pub shared_worker: Option<Arc<Worker>>,
}

/// The stores `given` (tests, and `hearth chat`, which holds the database's
/// instance lock itself), or the database of `database_url` opened here. First, since
/// everything else reads or writes them; the instance lock is taken before anything
/// touches the file (migrations included): one hearth per database.
pub(super) async fn open_stores(
    config: &HearthConfig,
    given: Option<Stores>,
    serves_http: bool,
) -> Result<OpenedStores, StartError> {
    let opened = match given {
        Some(stores) => OpenedStores {
            stores,
            instance_lock: None,
            owns_stores: false,
        },
        None => {
            let lock = InstanceLock::acquire_for_url(&config.database_url, serves_http).await?;
            let stores = storage::open(&config.database_url, config.database_connections()).await?;
            OpenedStores {
                stores,
                instance_lock: lock,
                owns_stores: true,
            }
        }
    };
    Ok(opened)
}

/// The counters and readiness every later part reports to, and this process
/// joined to the database's workers (heartbeats, leases, wake-ups) when it opened the
/// stores itself. Before the family and every actor, since they work through it among
/// the workers (the queue's and the channels' leases, the wake-ups of the family and the
/// schedulers).
pub(super) async fn join_workers(
    loaded: &LoadedConfig,
    stores: Stores,
    owns_stores: bool,
) -> Result<Foundation, StartError> {
    let metrics = Arc::new(Metrics::default());
    let readiness = Arc::new(Readiness::with_secrets(loaded.secrets.values()));
    let worker = if owns_stores {
        let worker = Worker::join(stores.coordination.clone(), readiness.clone()).await?;
        Some(Arc::new(worker))
    } else {
        None
    };
    // Conversations and platforms move between workers only on PostgreSQL: SQLite has one
    // process.
    let shared_worker = worker.clone().filter(|_| stores.postgres.is_some());
    Ok(Foundation {
        stores,
        metrics,
        readiness,
        worker,
        shared_worker,
    })
}

/// The background pruning of what is kept only for a while (config `retention`: history,
/// telemetry, finished messages, delivered outbox rows, settled reminders, attachments,
/// expired sign-ins). Started last, beside the running app; it ends with the app.
pub(super) fn start_pruner(loaded: &LoadedConfig, base: &Foundation) -> JoinHandle<()> {
    spawn_pruner(
        base.stores.retention.clone(),
        base.stores.web_access.clone(),
        RetentionSettings::from_config(
            &loaded.config.retention,
            platforms::attachment_dirs(loaded),
        ),
        base.metrics.clone(),
    )
}
