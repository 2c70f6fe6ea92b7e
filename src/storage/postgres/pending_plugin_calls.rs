//! `PendingPluginCalls` on PostgreSQL: table `pending_plugin_calls`, the plugin call a
//! member is asked to complete, one per conversation and member.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::PgRow;

use super::{PostgresStore, database_error, id_column};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{PendingPluginCall, PendingPluginCalls, StorageError};

/// The columns of a call, in `PendingPluginCall`'s order (a literal: sqlx takes only
/// static SQL).
macro_rules! columns {
    () => {
        "conversation_key, member_id, plugin_id, capability_id, parameters, missing, \
         question, created_at_ms, expires_at_ms"
    };
}

fn json_column<T: serde::de::DeserializeOwned>(
    row: &PgRow,
    column: &str,
) -> Result<T, StorageError> {
    let text: String = row.get(column);
    serde_json::from_str(&text)
        .map_err(|error| StorageError::Corrupt(format!("pending_plugin_calls.{column}: {error}")))
}

fn call_from_row(row: &PgRow) -> Result<PendingPluginCall, StorageError> {
    Ok(PendingPluginCall {
        conversation_key: id_column(row, "pending_plugin_calls", "conversation_key")?,
        member_id: id_column(row, "pending_plugin_calls", "member_id")?,
        plugin_id: row.get("plugin_id"),
        capability_id: row.get("capability_id"),
        parameters: json_column(row, "parameters")?,
        missing: json_column(row, "missing")?,
        question: row.get("question"),
        created_at_ms: row.get("created_at_ms"),
        expires_at_ms: row.get("expires_at_ms"),
    })
}

fn to_json(value: &impl serde::Serialize, what: &str) -> Result<String, StorageError> {
    serde_json::to_string(value)
        .map_err(|error| StorageError::Invalid(format!("pending plugin call {what}: {error}")))
}

#[async_trait]
impl PendingPluginCalls for PostgresStore {
    async fn put(&self, call: &PendingPluginCall) -> Result<(), StorageError> {
        let parameters = to_json(&call.parameters, "parameters")?;
        let missing = to_json(&call.missing, "missing")?;
        // A new call replaces the member's earlier one in the conversation, whole.
        sqlx::query(concat!(
            "INSERT INTO pending_plugin_calls (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ",
            "ON CONFLICT (conversation_key, member_id) DO UPDATE SET ",
            "plugin_id = excluded.plugin_id, capability_id = excluded.capability_id, ",
            "parameters = excluded.parameters, missing = excluded.missing, ",
            "question = excluded.question, created_at_ms = excluded.created_at_ms, ",
            "expires_at_ms = excluded.expires_at_ms"
        ))
        .bind(call.conversation_key.as_str())
        .bind(call.member_id.as_str())
        .bind(&call.plugin_id)
        .bind(&call.capability_id)
        .bind(&parameters)
        .bind(&missing)
        .bind(&call.question)
        .bind(call.created_at_ms)
        .bind(call.expires_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn take_valid(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        // Delete and read in one statement: of two racing takes, one gets it.
        let taken = sqlx::query(concat!(
            "DELETE FROM pending_plugin_calls ",
            "WHERE conversation_key = $1 AND member_id = $2 RETURNING ",
            columns!()
        ))
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?
        .as_ref()
        .map(call_from_row)
        .transpose()?;
        Ok(taken.filter(|call| !call.is_expired(now_ms)))
    }

    async fn peek(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM pending_plugin_calls ",
            "WHERE conversation_key = $1 AND member_id = $2 AND expires_at_ms > $3"
        ))
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?
        .as_ref()
        .map(call_from_row)
        .transpose()
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        sqlx::query(
            "DELETE FROM pending_plugin_calls WHERE conversation_key = $1 AND member_id = $2",
        )
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected() > 0)
        .map_err(database_error)
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, StorageError> {
        sqlx::query("DELETE FROM pending_plugin_calls WHERE expires_at_ms <= $1")
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(database_error)
    }
}
