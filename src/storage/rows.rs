//! What every SQL adapter reads from a row the same way: a conversation from its
//! `channel` and `conversation_id` columns, an id by its one parser; and history entries
//! as the one JSON array both adapters insert from.

use std::str::FromStr;

use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::ids::{ConversationKey, IdError};
use crate::ports::{HistoryEntry, InboundExtras, ScriptRun, ScriptRunOutcome, StorageError};

/// An inbox message's `extras` column: JSON, or nothing for a message without any.
pub(crate) fn extras_json(extras: &InboundExtras) -> Result<Option<String>, StorageError> {
    (!extras.is_empty())
        .then(|| serde_json::to_string(extras))
        .transpose()
        .map_err(|error| StorageError::Corrupt(format!("inbox extras: {error}")))
}

/// The conversation of a row of `table`, from its `channel` and `conversation_id` columns,
/// read by the key's one parser: a row it refuses is unreadable.
pub(crate) fn conversation_from_row<R>(
    row: &R,
    table: &str,
) -> Result<ConversationKey, StorageError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let (channel, conversation_id): (String, String) =
        (row.get("channel"), row.get("conversation_id"));
    ConversationKey::new(&channel, &conversation_id)
        .map_err(|error| StorageError::Corrupt(format!("{table}: {error}")))
}

/// An id stored in `table.column`, read by its one parser: a value it refuses is
/// unreadable.
pub(crate) fn id_column<R, T>(row: &R, table: &str, column: &str) -> Result<T, StorageError>
where
    R: Row,
    T: FromStr<Err = IdError>,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    row.get::<String, _>(column)
        .parse()
        .map_err(|error| StorageError::Corrupt(format!("{table}.{column}: {error}")))
}

/// History entries as one JSON array, which each adapter inserts in a single statement
/// (SQLite's `inbox_answered_writes_history` trigger and `append`; PostgreSQL's
/// `insert_entries`).
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
pub(crate) fn script_run_from_row<R>(row: &R) -> Result<ScriptRun, StorageError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let conversation: String = row.get("conversation_key");
    let member: String = row.get("member_id");
    let values: String = row.get("run_values");
    Ok(ScriptRun {
        run_key: row.get("run_key"),
        conversation_key: conversation.parse().map_err(|_| {
            StorageError::Corrupt(format!("script run conversation {conversation:?}"))
        })?,
        member_id: member
            .parse()
            .map_err(|_| StorageError::Corrupt(format!("script run member {member:?}")))?,
        script: row.get("script"),
        values: serde_json::from_str(&values)
            .map_err(|_| StorageError::Corrupt(format!("script run values {values:?}")))?,
        outcome: ScriptRunOutcome::parse(&row.get::<String, _>("outcome"))?,
        error: row.get("error"),
        at_ms: row.get("at_ms"),
    })
}
