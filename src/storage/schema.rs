//! Whether a database's applied migrations are this binary's, read the same way for
//! SQLite and PostgreSQL: what opens a database without migrating it (read-only, or
//! beside a running hearth) refuses one left half migrated, migrated by a newer hearth,
//! or older than this one, saying what to run.

use sqlx::migrate::Migrator;

use crate::ports::StorageError;

/// `recorded` is the database's `(version, success)` of each applied migration, in
/// order; `database` names it in the error (never with a password).
pub(super) fn check_recorded(
    recorded: &[(i64, bool)],
    migrator: &Migrator,
    database: &str,
) -> Result<(), StorageError> {
    let known: Vec<i64> = migrator
        .iter()
        .filter(|migration| migration.migration_type.is_up_migration())
        .map(|migration| migration.version)
        .collect();
    let latest = known.last().copied().unwrap_or(0);
    let applied = recorded.last().map(|(version, _)| *version).unwrap_or(0);
    if let Some((version, _)) = recorded.iter().find(|(_, success)| !success) {
        return Err(StorageError::Database(format!(
            "the database {database} has migration {version} half applied; \
             run `hearth migrate` to finish it"
        )));
    }
    if let Some((version, _)) = recorded
        .iter()
        .find(|(version, _)| !known.contains(version))
    {
        return Err(StorageError::Database(format!(
            "the database {database} has migration {version}, which this hearth does not \
             know (it knows up to {latest}): it was migrated by a newer hearth; use that one"
        )));
    }
    if let Some(missing) = known
        .iter()
        .find(|version| !recorded.iter().any(|(applied, _)| applied == *version))
    {
        return Err(StorageError::Database(format!(
            "the database {database} is at schema version {applied}, older than this \
             hearth's {latest} (migration {missing} is missing): run `hearth migrate` first"
        )));
    }
    Ok(())
}
