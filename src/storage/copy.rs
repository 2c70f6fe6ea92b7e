//! `hearth copy-store`: every table of a SQLite database copied into an empty PostgreSQL
//! database, in one PostgreSQL transaction that commits only when every table's row count
//! matches, so a copy that fails leaves the target as empty as it was.
//!
//! SQLite hands each row over as a JSON object (`json_object`), and PostgreSQL reads a
//! batch of them back into typed rows (`jsonb_populate_recordset`; a BLOB goes as the
//! `\x` hex text PostgreSQL reads as BYTEA): the two schemas agree
//! on table and column names, so no table is spelled out here and a table added by a
//! later migration is copied too. Parents are copied before the tables whose foreign keys
//! name them, and every identity's sequence is moved past the ids copied and past every id
//! SQLite ever gave in that table (its `sqlite_sequence`, which remembers ids of rows
//! since deleted), so PostgreSQL never hands out an id twice.

use std::collections::{BTreeMap, BTreeSet};

use futures::TryStreamExt;
use sqlx::{AssertSqlSafe, PgConnection, Row, SqlitePool};

use super::postgres::PostgresStore;
use super::sqlite::SqliteStore;
use crate::ports::StorageError;

/// Rows sent to PostgreSQL in one statement.
const ROWS_PER_BATCH: usize = 500;

/// SQLite's own tables, the migrations' record (each database keeps its own), and the
/// FTS5 indexes of notes and family memory (PostgreSQL computes its own search columns).
fn copied(table: &str) -> bool {
    !(table.starts_with("sqlite_")
        || table.starts_with("_sqlx")
        || table.starts_with("notes_fts")
        || table.starts_with("memory_fts"))
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(
        "the target database is not empty: table {table} has {rows} rows; copy-store only \
         fills a new database (create an empty one, or drop this one's tables)"
    )]
    TargetNotEmpty { table: String, rows: i64 },
    #[error(
        "table {table} of the SQLite database has no twin on PostgreSQL{column}: the two \
         schemas differ; migrate both with this hearth (`hearth migrate`)"
    )]
    SchemaDiffers { table: String, column: String },
    #[error(
        "table {table}: {copied} rows copied but the SQLite database has {expected}; \
         nothing was kept"
    )]
    CountsDiffer {
        table: String,
        copied: i64,
        expected: i64,
    },
}

fn sqlite_error(error: sqlx::Error) -> StorageError {
    StorageError::Database(format!("reading the SQLite database: {error}"))
}

fn postgres_error(error: sqlx::Error) -> StorageError {
    StorageError::Database(format!("writing the PostgreSQL database: {error}"))
}

/// One table copied: its name and rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedTable {
    pub table: String,
    pub rows: i64,
}

/// Copy every table of `from` into `to`, which must hold no row yet. `progress` hears
/// each table as it is done.
pub async fn copy_store(
    from: &SqliteStore,
    to: &PostgresStore,
    mut progress: impl FnMut(&CopiedTable),
) -> Result<Vec<CopiedTable>, CopyError> {
    let source = from.reader();
    let tables = tables_in_copy_order(source).await?;
    let mut transaction = to.pool_for_copy().begin().await.map_err(postgres_error)?;
    for table in &tables {
        let rows: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&mut *transaction)
            .await
            .map_err(|_| CopyError::SchemaDiffers {
                table: table.clone(),
                column: String::new(),
            })?;
        if rows > 0 {
            return Err(CopyError::TargetNotEmpty {
                table: table.clone(),
                rows,
            });
        }
    }
    let mut copied = Vec::new();
    for table in &tables {
        let columns = columns_of(source, &mut transaction, table).await?;
        let rows = copy_table(source, &mut transaction, table, &columns).await?;
        let expected: i64 =
            sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(source)
                .await
                .map_err(sqlite_error)?;
        if rows != expected {
            return Err(CopyError::CountsDiffer {
                table: table.clone(),
                copied: rows,
                expected,
            });
        }
        let done = CopiedTable {
            table: table.clone(),
            rows,
        };
        progress(&done);
        copied.push(done);
    }
    move_identities_past_copied_ids(source, &mut transaction).await?;
    transaction.commit().await.map_err(postgres_error)?;
    Ok(copied)
}

/// The tables to copy, each after the tables its foreign keys name.
async fn tables_in_copy_order(source: &SqlitePool) -> Result<Vec<String>, CopyError> {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .fetch_all(source)
            .await
            .map_err(sqlite_error)?;
    let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in names.into_iter().filter(|name| copied(name)) {
        let named: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?)")
                .bind(&name)
                .fetch_all(source)
                .await
                .map_err(sqlite_error)?;
        parents.insert(name, named.into_iter().collect());
    }
    let mut ordered: Vec<String> = Vec::new();
    while ordered.len() < parents.len() {
        let ready: Vec<String> = parents
            .iter()
            .filter(|(table, _)| !ordered.contains(table))
            .filter(|(table, named)| {
                named
                    .iter()
                    .all(|parent| parent == *table || ordered.contains(parent))
            })
            .map(|(table, _)| table.clone())
            .collect();
        if ready.is_empty() {
            return Err(StorageError::Corrupt(
                "the SQLite tables' foreign keys name each other in a circle".into(),
            )
            .into());
        }
        ordered.extend(ready);
    }
    Ok(ordered)
}

/// The columns of `table` on SQLite, each checked to be a column PostgreSQL takes, and
/// whether it holds bytes (`BLOB`).
async fn columns_of(
    source: &SqlitePool,
    target: &mut PgConnection,
    table: &str,
) -> Result<Vec<(String, bool)>, CopyError> {
    let columns: Vec<(String, bool)> =
        sqlx::query_as("SELECT name, upper(type) = 'BLOB' FROM pragma_table_info(?) ORDER BY cid")
            .bind(table)
            .fetch_all(source)
            .await
            .map_err(sqlite_error)?;
    let writable: BTreeSet<String> = sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER'",
    )
    .bind(table)
    .fetch_all(&mut *target)
    .await
    .map_err(postgres_error)?
    .into_iter()
    .collect();
    if writable.is_empty() {
        return Err(CopyError::SchemaDiffers {
            table: table.to_string(),
            column: String::new(),
        });
    }
    if let Some((missing, _)) = columns
        .iter()
        .find(|(column, _)| !writable.contains(column))
    {
        return Err(CopyError::SchemaDiffers {
            table: table.to_string(),
            column: format!(" (column {missing})"),
        });
    }
    Ok(columns)
}

/// Every row of `table`, read as JSON objects and written in batches; how many.
async fn copy_table(
    source: &SqlitePool,
    target: &mut PgConnection,
    table: &str,
    columns: &[(String, bool)],
) -> Result<i64, CopyError> {
    let pairs: Vec<String> = columns
        .iter()
        .map(|(column, bytes)| match bytes {
            true => format!(
                "'{column}', CASE WHEN \"{column}\" IS NOT NULL THEN '\\x' || hex(\"{column}\") END"
            ),
            false => format!("'{column}', \"{column}\""),
        })
        .collect();
    let read = format!("SELECT json_object({}) FROM {table}", pairs.join(", "));
    let quoted: Vec<String> = columns
        .iter()
        .map(|(column, _)| format!("\"{column}\""))
        .collect();
    let write = format!(
        "INSERT INTO {table} ({list}) OVERRIDING SYSTEM VALUE SELECT {list} \
         FROM jsonb_populate_recordset(NULL::{table}, $1::jsonb)",
        list = quoted.join(", ")
    );
    let mut rows = sqlx::query(AssertSqlSafe(read)).fetch(source);
    let mut batch: Vec<String> = Vec::with_capacity(ROWS_PER_BATCH);
    let mut written = 0_i64;
    while let Some(row) = rows.try_next().await.map_err(sqlite_error)? {
        batch.push(row.get::<String, _>(0));
        if batch.len() == ROWS_PER_BATCH {
            written += write_batch(target, &write, &mut batch).await?;
        }
    }
    if !batch.is_empty() {
        written += write_batch(target, &write, &mut batch).await?;
    }
    Ok(written)
}

async fn write_batch(
    target: &mut PgConnection,
    write: &str,
    batch: &mut Vec<String>,
) -> Result<i64, CopyError> {
    let array = format!("[{}]", batch.join(","));
    batch.clear();
    let done = sqlx::query(AssertSqlSafe(write.to_string()))
        .bind(array)
        .execute(&mut *target)
        .await
        .map_err(postgres_error)?;
    Ok(i64::try_from(done.rows_affected()).unwrap_or(i64::MAX))
}

/// Each identity column's sequence set to the largest id copied or ever given by SQLite
/// (an `AUTOINCREMENT` table's `sqlite_sequence`), so the next row the database numbers
/// follows them: an id a deleted row had is never given again.
async fn move_identities_past_copied_ids(
    source: &SqlitePool,
    target: &mut PgConnection,
) -> Result<(), CopyError> {
    let identities: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND is_identity = 'YES'",
    )
    .fetch_all(&mut *target)
    .await
    .map_err(postgres_error)?;
    let given = ids_sqlite_gave(source).await?;
    for (table, column) in identities {
        let ever_given = given.get(&table).copied().unwrap_or(0);
        sqlx::query(AssertSqlSafe(format!(
            "SELECT setval(pg_get_serial_sequence('{table}', '{column}'), \
             GREATEST(COALESCE(max(\"{column}\"), 0), $1, 1), \
             GREATEST(COALESCE(max(\"{column}\"), 0), $1) > 0) FROM {table}"
        )))
        .bind(ever_given)
        .execute(&mut *target)
        .await
        .map_err(postgres_error)?;
    }
    Ok(())
}

/// The largest id SQLite gave in each `AUTOINCREMENT` table, deleted rows' included.
async fn ids_sqlite_gave(source: &SqlitePool) -> Result<BTreeMap<String, i64>, CopyError> {
    let has_sequences: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence')",
    )
    .fetch_one(source)
    .await
    .map_err(sqlite_error)?;
    if !has_sequences {
        return Ok(BTreeMap::new());
    }
    let rows: Vec<(String, i64)> = sqlx::query_as("SELECT name, seq FROM sqlite_sequence")
        .fetch_all(source)
        .await
        .map_err(sqlite_error)?;
    Ok(rows.into_iter().collect())
}
