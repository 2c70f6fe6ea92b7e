//! `hearth copy-store --from sqlite://… --to postgres://…`: moves a family from SQLite to
//! PostgreSQL. The SQLite database is locked as a running hearth would lock it (so none
//! runs on it meanwhile) and only read; the PostgreSQL database is migrated, must hold no
//! row, and receives every table in one transaction (see `storage::copy`).

use anyhow::{Context, bail};

use hearth::redaction::redact_url_password;
use hearth::storage::copy::{CopiedTable, copy_store};
use hearth::storage::instance_lock::InstanceLock;
use hearth::storage::is_postgres_url;
use hearth::storage::postgres::PostgresStore;
use hearth::storage::sqlite::SqliteStore;

pub async fn copy(from: String, to: String) -> anyhow::Result<()> {
    if !from.starts_with("sqlite:") {
        bail!(
            "--from {:?} is not a SQLite database: give the sqlite:// url of the database \
             to copy (the `database_url` hearth ran with)",
            redact_url_password(&from)
        );
    }
    if !is_postgres_url(&to) {
        bail!(
            "--to {:?} is not a PostgreSQL database: give a postgres:// url of an empty \
             database, e.g. postgres://hearth@localhost/hearth",
            redact_url_password(&to)
        );
    }
    // Held to the end: no hearth may start on the SQLite file while it is copied.
    let _lock = InstanceLock::acquire_for_url(&from, false).await?;
    let source = SqliteStore::connect_read_only(&from)
        .await
        .with_context(|| format!("cannot open {}", redact_url_password(&from)))?;
    let target = PostgresStore::connect(&to, 4).await?;
    target
        .migrate()
        .await
        .with_context(|| format!("cannot migrate {}", redact_url_password(&to)))?;
    eprintln!(
        "copying {} into {}",
        redact_url_password(&from),
        redact_url_password(&to)
    );
    let copied = copy_store(&source, &target, |table: &CopiedTable| {
        eprintln!("  {}: {} rows", table.table, table.rows);
    })
    .await;
    source.close().await;
    target.close().await;
    let copied = copied?;
    let rows: i64 = copied.iter().map(|table| table.rows).sum();
    eprintln!(
        "copied {} tables, {rows} rows; every table's count checked. Set \
         `database_url: {}` and start hearth.",
        copied.len(),
        redact_url_password(&to)
    );
    Ok(())
}
