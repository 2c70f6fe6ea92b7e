//! The ports SQLite and PostgreSQL keep alike, each written once: a file per port here
//! (`shopping_lists.rs`, ...) holds its statements, in `$N` placeholders both databases
//! bind by number, and its row mappings (over `SqlRow`, `rows.rs`), implemented for every
//! `SqlBackend`.
//!
//! A backend is one of the two stores (`sqlite/backend.rs`, `postgres/backend.rs`): the
//! few methods that run a `Statement` on its database. A read goes to the pool; a write
//! of one statement is one statement (SQLite: on the writer thread, `sqlite/writer.rs`;
//! PostgreSQL: on the pool, one round trip); `atomically` runs several in one transaction
//! (SQLite: a savepoint in the writer's; PostgreSQL: its own), with a lease's fence held.
//! What only one database has stays in its folder: SQLite's writer, PRAGMAs, read-only
//! mode and instance lock; PostgreSQL's pool, migrations and coordination. Each backend
//! keeps a history cache and members' facts (`SqlBackend::history`, `known_facts`), which
//! `memory.rs` and `profiles.rs` fill and tell of writes, and `members.rs` of each reading
//! of the family's version.
//!
//! Where the two dialects differ, `Dialect` says it, each difference in one method marked
//! `// dialect:`, or, for a difference one port alone has (the searches of notes and family
//! memory, retention's finished messages, telemetry's batch), one function or arm of that
//! port's file marked the same way; a statement built with one is built once per dialect
//! and kept (`per_dialect!`).

pub(crate) mod channel_state;
pub(crate) mod family_memory;
pub(crate) mod inbox;
pub(crate) mod intents;
pub(crate) mod members;
pub(crate) mod memory;
pub(crate) mod notes;
pub(crate) mod outbox;
pub(crate) mod pending;
pub(crate) mod pending_plugin_calls;
pub(crate) mod profiles;
pub(crate) mod registered_plugins;
pub(crate) mod retention;
pub(crate) mod schedules;
pub(crate) mod script_workflows;
pub(crate) mod shopping_lists;
pub(crate) mod telemetry;
pub(crate) mod turn_journal;
pub(crate) mod usage;
pub(crate) mod web_access;

use async_trait::async_trait;
use futures::future::BoxFuture;

pub(crate) use super::rows::{SqlRow, conversation_from_row, id_column};
use crate::ports::{Fence, StorageError};
use crate::storage::history_cache::HistoryCache;

/// A value bound to a statement's `$N`: text or an integer (either may be `NULL`), a
/// boolean, bytes (BLOB, BYTEA).
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(Option<String>),
    Integer(Option<i64>),
    Boolean(bool),
    Bytes(Vec<u8>),
}

/// `From` each type bound for `Arg`: `type => |value| the Arg`.
macro_rules! args_from {
    ($($type:ty => |$value:ident| $arg:expr),* $(,)?) => {
        $(impl From<$type> for Arg {
            fn from($value: $type) -> Self {
                $arg
            }
        })*
    };
}
args_from! {
    &str => |text| Arg::Text(Some(text.to_owned())),
    String => |text| Arg::Text(Some(text)),
    &String => |text| Arg::Text(Some(text.clone())),
    Option<&str> => |text| Arg::Text(text.map(str::to_owned)),
    Option<String> => |text| Arg::Text(text),
    &Option<String> => |text| Arg::Text(text.clone()),
    i64 => |number| Arg::Integer(Some(number)),
    Option<i64> => |number| Arg::Integer(number),
    bool => |flag| Arg::Boolean(flag),
    Vec<u8> => |bytes| Arg::Bytes(bytes),
}

/// One statement and the values of its `$1`, `$2`, ... in order.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    pub(crate) sql: &'static str,
    pub(crate) args: Vec<Arg>,
}

/// `sql`, with nothing bound yet.
pub(crate) fn sql(sql: &'static str) -> Statement {
    Statement {
        sql,
        args: Vec::new(),
    }
}

impl Statement {
    /// Bind the next `$N`.
    pub(crate) fn bind(mut self, value: impl Into<Arg>) -> Self {
        self.args.push(value.into());
        self
    }
}

/// A connection inside a transaction, running statements one after the other.
#[async_trait]
pub(crate) trait SqlConnection: Send {
    type Row: SqlRow + Send + Sync + 'static;
    /// The rows `statement` returns.
    async fn fetch(&mut self, statement: Statement) -> Result<Vec<Self::Row>, StorageError>;
    /// How many rows `statement` changed.
    async fn execute(&mut self, statement: Statement) -> Result<u64, StorageError>;
    /// The first row `statement` returns, if any.
    async fn fetch_optional(
        &mut self,
        statement: Statement,
    ) -> Result<Option<Self::Row>, StorageError> {
        Ok(self.fetch(statement).await?.into_iter().next())
    }
}

/// One of the two SQL stores, seen by the ports written once.
#[async_trait]
pub(crate) trait SqlBackend: Send + Sync + 'static {
    const DIALECT: Dialect;
    type Row: SqlRow + Send + Sync + 'static;
    type Connection: SqlConnection<Row = Self::Row>;

    /// The rows a statement that only reads returns, from the pool.
    async fn read(&self, statement: Statement) -> Result<Vec<Self::Row>, StorageError>;
    /// One statement that writes, alone: the rows it returns (`RETURNING`).
    async fn write(&self, statement: Statement) -> Result<Vec<Self::Row>, StorageError>;
    /// One statement that writes, alone: how many rows it changed.
    async fn write_count(&self, statement: Statement) -> Result<u64, StorageError>;
    /// One statement that writes, alone, while `fence` (if any) is its lease's current
    /// generation: the rows it returns. The fence's lease and generation are bound after
    /// the statement's own values, for its `Dialect::fence_held` (PostgreSQL checks it in
    /// the statement, writing nothing when it fails; SQLite checks it on the writer just
    /// before, `StorageError::Fenced` when it fails).
    async fn write_fenced(
        &self,
        fence: Option<&Fence>,
        statement: Statement,
    ) -> Result<Vec<Self::Row>, StorageError>;
    /// `work`'s statements taking effect together or not at all, while `fence` (if any)
    /// is its lease's current generation (else `StorageError::Fenced`, nothing written).
    async fn atomically_fenced<T, F>(
        &self,
        fence: Option<&Fence>,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Connection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static;

    /// The backend's history cache (`memory.rs`).
    fn history(&self) -> &std::sync::Mutex<HistoryCache>;
    /// The members' facts the backend keeps (`profiles.rs`).
    fn known_facts(&self) -> &profiles::KnownFacts;

    /// The family's version as just read (`Members`): PostgreSQL keeps members' facts under
    /// the newest it saw (`KnownFacts::family_read`); on SQLite the facts' version is moved
    /// by its own changes.
    fn family_read(&self, _version: i64) {}

    /// The first row `statement` returns, if any.
    async fn read_optional(&self, statement: Statement) -> Result<Option<Self::Row>, StorageError> {
        Ok(self.read(statement).await?.into_iter().next())
    }
    /// `write`'s first row, if any.
    async fn write_optional(
        &self,
        statement: Statement,
    ) -> Result<Option<Self::Row>, StorageError> {
        Ok(self.write(statement).await?.into_iter().next())
    }
    /// `atomically_fenced` with no fence.
    async fn atomically<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Connection) -> BoxFuture<'c, Result<T, StorageError>>
            + Send
            + 'static,
    {
        self.atomically_fenced(None, work).await
    }
}

/// Wait, in `connection`'s transaction, for every other transaction that took turns on
/// `key` to end (on PostgreSQL; SQLite's one writer runs one at a time already).
pub(crate) async fn take_turns<B: SqlBackend>(
    connection: &mut B::Connection,
    key: String,
) -> Result<(), StorageError> {
    match B::DIALECT.take_turns() {
        Some(statement) => connection.execute(sql(statement).bind(key)).await.map(drop),
        None => Ok(()),
    }
}

/// A database's error as the ports' (the statement's text is never in it).
pub(crate) fn database_error(error: sqlx::Error) -> StorageError {
    StorageError::Database(error.to_string())
}

/// `limit` as a statement's `LIMIT` value.
pub(crate) fn limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Which SQL a backend speaks; what differs between the two is said here (or in the one
/// port that needs it, marked `// dialect:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite = 0,
    Postgres = 1,
}

impl Dialect {
    pub(crate) const BOTH: [Dialect; 2] = [Dialect::Sqlite, Dialect::Postgres];

    // dialect: text compared byte by byte in ORDER BY, whatever PostgreSQL's collation
    // (SQLite's own order already is).
    pub(crate) fn byte_order(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " COLLATE \"C\"",
        }
    }

    // dialect: the smaller of two values (SQLite's two-argument `min`).
    pub(crate) fn least(self) -> &'static str {
        match self {
            Dialect::Sqlite => "min",
            Dialect::Postgres => "LEAST",
        }
    }

    // dialect: rows read to be changed locked until the transaction ends; SQLite has one
    // writer, whose transaction nothing else writes into meanwhile.
    pub(crate) fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    // dialect: what lists rows stored in the same millisecond the same way every time:
    // SQLite's `rowid`, the order they were stored in; PostgreSQL's tables keep no such
    // order, so their public `id`.
    pub(crate) fn stored_order(self) -> &'static str {
        match self {
            Dialect::Sqlite => "rowid",
            Dialect::Postgres => "id",
        }
    }

    // dialect: the statement making writers on several workers take turns on a key (`$1`)
    // until their transaction ends, PostgreSQL's advisory lock; SQLite's one writer runs
    // one transaction at a time already.
    pub(crate) fn take_turns(self) -> Option<&'static str> {
        match self {
            Dialect::Sqlite => None,
            Dialect::Postgres => Some("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"),
        }
    }

    // dialect: whether `member` (a `$N`) may answer a confirmation: one of its JSON list
    // `approvers`, or its own member when that list is empty.
    pub(crate) fn may_answer(self, member: &str) -> String {
        match self {
            Dialect::Sqlite => format!(
                "((approvers = '[]' AND member_id = {member}) \
                 OR EXISTS (SELECT 1 FROM json_each(approvers) WHERE value = {member}))"
            ),
            Dialect::Postgres => format!(
                "((jsonb_array_length(approvers::jsonb) = 0 AND member_id = {member}) \
                 OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(approvers::jsonb) \
                 AS approver WHERE approver = {member}))"
            ),
        }
    }

    // dialect: the condition of a fenced statement (`SqlBackend::write_fenced`), `lease`
    // and `generation` its `$N`: PostgreSQL's leases are rows, locked `FOR SHARE` while
    // checked, so a take by another worker comes wholly before or after the write;
    // SQLite's are this process's, checked on the writer before the statement.
    pub(crate) fn fence_held(self, lease: &str, generation: &str) -> String {
        match self {
            Dialect::Sqlite => "TRUE".to_owned(),
            Dialect::Postgres => format!(
                "({lease}::text IS NULL OR EXISTS (SELECT 1 FROM leases \
                 WHERE name = {lease} AND generation = {generation} FOR SHARE))"
            ),
        }
    }

    // dialect: the elements of a JSON array (text, `array`) as rows `entry`, read by
    // `entry->>'field'` on both, numbered `position` in the array's order.
    pub(crate) fn json_rows(self, array: &str) -> String {
        match self {
            Dialect::Sqlite => {
                format!(
                    "(SELECT value AS entry, key AS position FROM json_each({array})) AS entries"
                )
            }
            Dialect::Postgres => format!(
                "jsonb_array_elements({array}::jsonb) WITH ORDINALITY AS entries (entry, position)"
            ),
        }
    }

    // dialect: the UTC day (`YYYY-MM-DD`) of a time in milliseconds.
    pub(crate) fn utc_day(self, milliseconds: &str) -> String {
        match self {
            Dialect::Sqlite => format!("date({milliseconds} / 1000, 'unixepoch')"),
            Dialect::Postgres => format!(
                "to_char(to_timestamp({milliseconds} / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
            ),
        }
    }
}

/// The statement `build` makes for the backend's dialect, `$dialect`, as `&'static str`:
/// built once for each dialect and kept.
macro_rules! per_dialect {
    ($dialect:expr, $build:expr) => {{
        static BUILT: std::sync::OnceLock<[String; 2]> = std::sync::OnceLock::new();
        let built = BUILT.get_or_init(|| $crate::storage::sql::Dialect::BOTH.map($build));
        built[$dialect as usize].as_str()
    }};
}
pub(crate) use per_dialect;

/// For a backend's sqlx types (`$database`, its connection and row): `fn query`, a
/// `Statement` as sqlx's query with its values bound in order, and `SqlConnection` on the
/// connection, the same for both databases.
macro_rules! sqlx_connection {
    ($database:ty, $connection:ty, $row:ty) => {
        fn query(
            statement: $crate::storage::sql::Statement,
        ) -> sqlx::query::Query<'static, $database, <$database as sqlx::Database>::Arguments> {
            use $crate::storage::sql::Arg;
            let query = sqlx::query(statement.sql);
            statement
                .args
                .into_iter()
                .fold(query, |query, arg| match arg {
                    Arg::Text(text) => query.bind(text),
                    Arg::Integer(number) => query.bind(number),
                    Arg::Boolean(flag) => query.bind(flag),
                    Arg::Bytes(bytes) => query.bind(bytes),
                })
        }

        #[async_trait::async_trait]
        impl $crate::storage::sql::SqlConnection for $connection {
            type Row = $row;

            async fn fetch(&mut self, statement: Statement) -> Result<Vec<$row>, StorageError> {
                let fetched = query(statement).fetch_all(&mut *self).await;
                fetched.map_err(database_error)
            }

            async fn execute(&mut self, statement: Statement) -> Result<u64, StorageError> {
                let done = query(statement).execute(&mut *self).await;
                done.map(|done| done.rows_affected())
                    .map_err(database_error)
            }
        }
    };
}
pub(crate) use sqlx_connection;
