//! Reading a row of either SQL database: `SqlRow`, a column read as text, an integer, a
//! number, a boolean or bytes, written once for every sqlx row (the SQLite and PostgreSQL rows
//! alike), a value that does not decode being `StorageError::Corrupt`, never a panic; and
//! what both adapters read from a row the same way: a conversation from its `channel` and
//! `conversation_id` columns, an id by its one parser, a family script's run; history
//! entries as the one JSON array both adapters insert from.

use std::str::FromStr;

use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::ids::{ConversationKey, IdError};
use crate::llm::Role;
use crate::ports::{HistoryEntry, InboundExtras, ScriptRun, ScriptRunOutcome, StorageError};

/// An inbox message's `extras` column: JSON, or nothing for a message without any.
pub(crate) fn extras_json(extras: &InboundExtras) -> Result<Option<String>, StorageError> {
    (!extras.is_empty())
        .then(|| serde_json::to_string(extras))
        .transpose()
        .map_err(|error| StorageError::Corrupt(format!("inbox extras: {error}")))
}

/// A row of either database, read by column name.
pub(crate) trait SqlRow {
    fn text(&self, column: &str) -> Result<String, StorageError>;
    fn optional_text(&self, column: &str) -> Result<Option<String>, StorageError>;
    fn integer(&self, column: &str) -> Result<i64, StorageError>;
    fn optional_integer(&self, column: &str) -> Result<Option<i64>, StorageError>;
    fn real(&self, column: &str) -> Result<f64, StorageError>;
    fn flag(&self, column: &str) -> Result<bool, StorageError>;
    fn bytes(&self, column: &str) -> Result<Vec<u8>, StorageError>;

    /// A JSON column (stored as text) of `table`, parsed.
    fn json<T: serde::de::DeserializeOwned>(
        &self,
        table: &str,
        column: &str,
    ) -> Result<T, StorageError> {
        serde_json::from_str(&self.text(column)?)
            .map_err(|error| StorageError::Corrupt(format!("{table}.{column}: {error}")))
    }
}

fn decoded<'r, R, T>(row: &'r R, column: &str) -> Result<T, StorageError>
where
    R: Row,
    T: Decode<'r, R::Database> + Type<R::Database>,
    for<'a> &'a str: ColumnIndex<R>,
{
    row.try_get(column)
        .map_err(|error| StorageError::Corrupt(format!("column {column}: {error}")))
}

impl<R> SqlRow for R
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, column: &str) -> Result<String, StorageError> {
        decoded(self, column)
    }
    fn optional_text(&self, column: &str) -> Result<Option<String>, StorageError> {
        decoded(self, column)
    }
    fn integer(&self, column: &str) -> Result<i64, StorageError> {
        decoded(self, column)
    }
    fn optional_integer(&self, column: &str) -> Result<Option<i64>, StorageError> {
        decoded(self, column)
    }
    fn real(&self, column: &str) -> Result<f64, StorageError> {
        decoded(self, column)
    }
    fn flag(&self, column: &str) -> Result<bool, StorageError> {
        decoded(self, column)
    }
    fn bytes(&self, column: &str) -> Result<Vec<u8>, StorageError> {
        decoded(self, column)
    }
}

/// The conversation of a row of `table`, from its `channel` and `conversation_id` columns,
/// read by the key's one parser: a row it refuses is unreadable.
pub(crate) fn conversation_from_row(
    row: &impl SqlRow,
    table: &str,
) -> Result<ConversationKey, StorageError> {
    let (channel, conversation_id) = (row.text("channel")?, row.text("conversation_id")?);
    ConversationKey::new(&channel, &conversation_id)
        .map_err(|error| StorageError::Corrupt(format!("{table}: {error}")))
}

/// An id stored in `table.column`, read by its one parser: a value it refuses is
/// unreadable.
pub(crate) fn id_column<T>(row: &impl SqlRow, table: &str, column: &str) -> Result<T, StorageError>
where
    T: FromStr<Err = IdError>,
{
    row.text(column)?
        .parse()
        .map_err(|error| StorageError::Corrupt(format!("{table}.{column}: {error}")))
}

/// A history entry from a `messages` row (columns `role`, `content`, `profile_id`,
/// `inbox_id`, `tool_calls`, `tool_call_id`, `created_at_ms`).
pub(crate) fn history_entry_from_row(row: &impl SqlRow) -> Result<HistoryEntry, StorageError> {
    let role = row.text("role")?;
    Ok(HistoryEntry {
        role: Role::parse(&role)
            .ok_or_else(|| StorageError::Corrupt(format!("message role {role:?}")))?,
        content: row.text("content")?,
        profile_id: row.text("profile_id")?,
        inbox_id: row.optional_text("inbox_id")?,
        tool_calls: match row.optional_text("tool_calls")? {
            Some(text) => serde_json::from_str(&text)
                .map_err(|error| StorageError::Corrupt(error.to_string()))?,
            None => Vec::new(),
        },
        tool_call_id: row.optional_text("tool_call_id")?,
        created_at_ms: row.integer("created_at_ms")?,
    })
}

/// History entries as one JSON array, which each adapter inserts in a single statement
/// (`sql::memory::remember`, for a turn's end and `append`).
pub(crate) fn entries_json(
    conversation_key: &str,
    entries: &[HistoryEntry],
) -> Result<String, StorageError> {
    let rows: Vec<serde_json::Value> = entries
        .iter()
        .map(|entry| {
            let tool_calls = if entry.tool_calls.is_empty() {
                None
            } else {
                Some(serde_json::to_string(&entry.tool_calls)?)
            };
            Ok(serde_json::json!({
                "conversation_key": conversation_key,
                "inbox_id": entry.inbox_id,
                "profile_id": entry.profile_id,
                "role": entry.role.as_str(),
                "content": entry.content,
                "tool_calls": tool_calls,
                "tool_call_id": entry.tool_call_id,
                "is_chat_text": i64::from(entry.is_chat_text()),
                "created_at_ms": entry.created_at_ms,
            }))
        })
        .collect::<Result<_, serde_json::Error>>()
        .map_err(|error| StorageError::Corrupt(error.to_string()))?;
    Ok(serde_json::Value::Array(rows).to_string())
}

/// A family script run as `script_runs` keeps it, on either adapter.
pub(crate) fn script_run_from_row(row: &impl SqlRow) -> Result<ScriptRun, StorageError> {
    let conversation = row.text("conversation_key")?;
    let member = row.text("member_id")?;
    let values = row.text("run_values")?;
    Ok(ScriptRun {
        run_key: row.text("run_key")?,
        conversation_key: conversation.parse().map_err(|_| {
            StorageError::Corrupt(format!("script run conversation {conversation:?}"))
        })?,
        member_id: member
            .parse()
            .map_err(|_| StorageError::Corrupt(format!("script run member {member:?}")))?,
        script: row.text("script")?,
        values: serde_json::from_str(&values)
            .map_err(|_| StorageError::Corrupt(format!("script run values {values:?}")))?,
        outcome: ScriptRunOutcome::parse(&row.text("outcome")?)?,
        error: row.optional_text("error")?,
        at_ms: row.integer("at_ms")?,
    })
}
