//! One hearth per database: an exclusive OS file lock on `<database file>.lock`, held
//! while a process runs on the database, with what identifies the holder written inside
//! (pid, the HTTP address it listens on, start time).
//!
//! The lock is the operating system's (`File::try_lock`, `flock` on Unix): it goes away
//! with the process however the process ends, kill -9 included, so a lock file left
//! behind never blocks a restart; only a living holder does. The file is opened
//! close-on-exec, so child processes (MCP servers, command plugins) never inherit it.

use std::fmt;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::sqlite::SqliteConnectOptions;

/// What the lock file says about the process holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// Whether the holder serves the HTTP API (`hearth run` with `http.enabled`).
    pub serves_http: bool,
    /// The address it listens on, once bound (`None` while it is still starting).
    pub http_address: Option<SocketAddr>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "pid {}", self.pid)?;
        match (self.serves_http, self.http_address) {
            (_, Some(address)) => write!(formatter, ", http api at {address}")?,
            (true, None) => write!(formatter, ", http api starting")?,
            (false, None) => write!(formatter, ", no http api")?,
        }
        write!(formatter, ", started {}", self.started_at)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InstanceLockError {
    #[error(
        "the database {} is in use by another hearth ({}): stop that process first, \
         or talk to it with `hearth chat --user <id>`; two processes on one database \
         would answer messages twice",
        .database.display(),
        describe(.holder.as_ref())
    )]
    Held {
        database: PathBuf,
        /// `None` when the lock file could not be read.
        holder: Option<LockHolder>,
    },
    #[error("cannot lock the database {} with {}: {source}", .database.display(), .lock_file.display())]
    Io {
        database: PathBuf,
        lock_file: PathBuf,
        source: std::io::Error,
    },
    #[error("the database lock task stopped: {0}")]
    Task(String),
}

fn describe(holder: Option<&LockHolder>) -> String {
    match holder {
        Some(holder) => holder.to_string(),
        None => "its lock file could not be read".into(),
    }
}

/// The SQLite database file `database_url` names, or `None` when it names no file (an
/// in-memory database, which the adapter refuses anyway, or another kind of database).
pub fn sqlite_database_file(database_url: &str) -> Option<PathBuf> {
    if !database_url.starts_with("sqlite:")
        || database_url.contains(":memory:")
        || database_url.contains("mode=memory")
    {
        return None;
    }
    let options = SqliteConnectOptions::from_str(database_url).ok()?;
    Some(options.get_filename().to_path_buf())
}

/// The lock file beside `database`: `<database file>.lock`.
pub fn lock_file_of(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The held lock of one database. Released by `release`, or when dropped, or when the
/// process ends.
pub struct InstanceLock {
    database: PathBuf,
    lock_file: PathBuf,
    holder: LockHolder,
    /// `None` once released. Shared with the blocking task that rewrites the holder.
    file: Arc<Mutex<Option<File>>>,
}

impl fmt::Debug for InstanceLock {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("InstanceLock")
            .field("lock_file", &self.lock_file)
            .field("holder", &self.holder)
            .finish()
    }
}

impl InstanceLock {
    /// Take the lock of the database `database_url` names; `Ok(None)` when it names no
    /// database file (nothing to lock).
    pub async fn acquire_for_url(
        database_url: &str,
        serves_http: bool,
    ) -> Result<Option<InstanceLock>, InstanceLockError> {
        match sqlite_database_file(database_url) {
            Some(database) => Self::acquire(database, serves_http).await.map(Some),
            None => Ok(None),
        }
    }

    /// Take the lock of `database` without waiting, or say who holds it.
    pub async fn acquire(
        database: PathBuf,
        serves_http: bool,
    ) -> Result<InstanceLock, InstanceLockError> {
        tokio::task::spawn_blocking(move || acquire_blocking(database, serves_http))
            .await
            .map_err(|error| InstanceLockError::Task(error.to_string()))?
    }

    /// Write the address the HTTP API listens on into the lock file, for `hearth chat`.
    pub async fn record_http_address(
        &mut self,
        address: SocketAddr,
    ) -> Result<(), InstanceLockError> {
        let mut holder = self.holder.clone();
        holder.http_address = Some(address);
        let file = self.file.clone();
        let written = holder.clone();
        let result = tokio::task::spawn_blocking(move || {
            match file
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_mut()
            {
                Some(file) => write_holder(file, &written),
                // Released meanwhile: nobody is left to read it.
                None => Ok(()),
            }
        })
        .await
        .map_err(|error| InstanceLockError::Task(error.to_string()))?;
        result.map_err(|source| self.io_error(source))?;
        self.holder = holder;
        Ok(())
    }

    /// Let another process take the database. Closing the file is what releases an OS
    /// lock; the stale holder left in the file is never read while nobody holds it.
    pub fn release(&self) {
        let file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(file) = file {
            let _ = file.unlock();
            tracing::debug!(lock_file = %self.lock_file.display(), "database lock released");
        }
    }

    fn io_error(&self, source: std::io::Error) -> InstanceLockError {
        InstanceLockError::Io {
            database: self.database.clone(),
            lock_file: self.lock_file.clone(),
            source,
        }
    }
}

fn acquire_blocking(
    database: PathBuf,
    serves_http: bool,
) -> Result<InstanceLock, InstanceLockError> {
    let lock_file = lock_file_of(&database);
    let io_error = |source| InstanceLockError::Io {
        database: database.clone(),
        lock_file: lock_file.clone(),
        source,
    };
    if let Some(folder) = lock_file.parent()
        && !folder.as_os_str().is_empty()
    {
        std::fs::create_dir_all(folder).map_err(io_error)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_file)
        .map_err(io_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = read_holder(&lock_file);
            return Err(InstanceLockError::Held { database, holder });
        }
        Err(TryLockError::Error(source)) => return Err(io_error(source)),
    }
    let holder = LockHolder {
        pid: std::process::id(),
        started_at: crate::clock::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        serves_http,
        http_address: None,
    };
    write_holder(&mut file, &holder).map_err(io_error)?;
    tracing::debug!(lock_file = %lock_file.display(), pid = holder.pid, "database locked");
    Ok(InstanceLock {
        database,
        lock_file,
        holder,
        file: Arc::new(Mutex::new(Some(file))),
    })
}

/// The holder a locked file names. The holder writes it just after taking the lock, so
/// a read in between finds it empty or half written: it is read again for a moment.
fn read_holder(lock_file: &Path) -> Option<LockHolder> {
    for _ in 0..20 {
        if let Ok(text) = std::fs::read_to_string(lock_file)
            && let Ok(holder) = serde_json::from_str(&text)
        {
            return Some(holder);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    None
}

fn write_holder(file: &mut File, holder: &LockHolder) -> std::io::Result<()> {
    let mut text = serde_json::to_string(holder).map_err(std::io::Error::other)?;
    text.push('\n');
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(text.as_bytes())?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_file_sits_beside_the_database() {
        let database = sqlite_database_file("sqlite:///srv/hearth/hearth.db").unwrap();
        assert_eq!(database, PathBuf::from("/srv/hearth/hearth.db"));
        assert_eq!(
            lock_file_of(&database),
            PathBuf::from("/srv/hearth/hearth.db.lock")
        );
        assert_eq!(sqlite_database_file("sqlite::memory:"), None);
        assert_eq!(sqlite_database_file("postgres://localhost/hearth"), None);
    }

    #[test]
    fn a_holder_describes_itself_without_and_with_http() {
        let mut holder = LockHolder {
            pid: 42,
            started_at: "2026-01-02T03:04:05Z".into(),
            serves_http: false,
            http_address: None,
        };
        assert_eq!(
            holder.to_string(),
            "pid 42, no http api, started 2026-01-02T03:04:05Z"
        );
        holder.serves_http = true;
        holder.http_address = Some("127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            holder.to_string(),
            "pid 42, http api at 127.0.0.1:8080, started 2026-01-02T03:04:05Z"
        );
    }
}
