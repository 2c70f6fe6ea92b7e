//! `PendingPluginCalls` on either SQL database: table `pending_plugin_calls`, the plugin
//! call a member is asked to complete, one per conversation and member.

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, id_column, sql};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{PendingPluginCall, PendingPluginCalls, StorageError};

/// The columns of a call, in `PendingPluginCall`'s order (a literal: statements are
/// static text).
macro_rules! columns {
    () => {
        "conversation_key, member_id, plugin_id, capability_id, parameters, missing, \
         question, created_at_ms, expires_at_ms"
    };
}

fn call_from_row(row: &impl SqlRow) -> Result<PendingPluginCall, StorageError> {
    Ok(PendingPluginCall {
        conversation_key: id_column(row, "pending_plugin_calls", "conversation_key")?,
        member_id: id_column(row, "pending_plugin_calls", "member_id")?,
        plugin_id: row.text("plugin_id")?,
        capability_id: row.text("capability_id")?,
        parameters: row.json("pending_plugin_calls", "parameters")?,
        missing: row.json("pending_plugin_calls", "missing")?,
        question: row.text("question")?,
        created_at_ms: row.integer("created_at_ms")?,
        expires_at_ms: row.integer("expires_at_ms")?,
    })
}

fn to_json(value: &impl serde::Serialize, what: &str) -> Result<String, StorageError> {
    serde_json::to_string(value)
        .map_err(|error| StorageError::Invalid(format!("pending plugin call {what}: {error}")))
}

#[async_trait]
impl<B: SqlBackend> PendingPluginCalls for B {
    async fn put(&self, call: &PendingPluginCall) -> Result<(), StorageError> {
        // A new call replaces the member's earlier one in the conversation, whole.
        let put = sql(concat!(
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
        .bind(to_json(&call.parameters, "parameters")?)
        .bind(to_json(&call.missing, "missing")?)
        .bind(&call.question)
        .bind(call.created_at_ms)
        .bind(call.expires_at_ms);
        self.write_count(put).await.map(drop)
    }

    async fn take_valid(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        // Delete and read in one statement: of two racing takes, one gets it.
        let take = sql(concat!(
            "DELETE FROM pending_plugin_calls ",
            "WHERE conversation_key = $1 AND member_id = $2 RETURNING ",
            columns!()
        ))
        .bind(conversation_key.as_str())
        .bind(member_id.as_str());
        let taken = self.write_optional(take).await?;
        let taken = taken.as_ref().map(call_from_row).transpose()?;
        Ok(taken.filter(|call| !call.is_expired(now_ms)))
    }

    async fn peek(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<Option<PendingPluginCall>, StorageError> {
        let peek = sql(concat!(
            "SELECT ",
            columns!(),
            " FROM pending_plugin_calls ",
            "WHERE conversation_key = $1 AND member_id = $2 AND expires_at_ms > $3"
        ))
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .bind(now_ms);
        let row = self.read_optional(peek).await?;
        row.as_ref().map(call_from_row).transpose()
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        let clear =
            sql("DELETE FROM pending_plugin_calls WHERE conversation_key = $1 AND member_id = $2")
                .bind(conversation_key.as_str())
                .bind(member_id.as_str());
        Ok(self.write_count(clear).await? > 0)
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, StorageError> {
        let expire = sql("DELETE FROM pending_plugin_calls WHERE expires_at_ms <= $1");
        self.write_count(expire.bind(now_ms)).await
    }
}
