//! `ScriptWorkflows` on PostgreSQL: table `script_workflows`, the state of a script a
//! member is walking through, one per conversation and member.

use async_trait::async_trait;
use sqlx::Row;

use super::{PostgresStore, database_error};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::ScriptRun;
use crate::ports::{ScriptWorkflow, ScriptWorkflows, StorageError};
use crate::storage::rows::script_run_from_row;

#[async_trait]
impl ScriptWorkflows for PostgresStore {
    async fn record_run(&self, run: &ScriptRun) -> Result<bool, StorageError> {
        if !run.values.is_object() {
            return Err(StorageError::Invalid(
                "a script run's values must be a json object".into(),
            ));
        }
        sqlx::query(
            "INSERT INTO script_runs (run_key, conversation_key, member_id, script, \
             run_values, outcome, error, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (run_key) DO NOTHING",
        )
        .bind(&run.run_key)
        .bind(run.conversation_key.as_str())
        .bind(run.member_id.as_str())
        .bind(&run.script)
        .bind(run.values.to_string())
        .bind(run.outcome.as_str())
        .bind(&run.error)
        .bind(run.at_ms)
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected() == 1)
        .map_err(database_error)
    }

    async fn recent_runs(&self, limit: usize) -> Result<Vec<ScriptRun>, StorageError> {
        let rows = sqlx::query(
            "SELECT run_key, conversation_key, member_id, script, run_values, outcome, error, \
             at_ms FROM script_runs ORDER BY at_ms DESC, id DESC LIMIT $1",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(script_run_from_row).collect()
    }

    async fn put(&self, workflow: &ScriptWorkflow) -> Result<(), StorageError> {
        if !workflow.state.is_object() {
            return Err(StorageError::Invalid(
                "a script workflow's state must be a json object".into(),
            ));
        }
        sqlx::query(
            "INSERT INTO script_workflows (conversation_key, member_id, state, updated_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (conversation_key, member_id) DO UPDATE SET \
             state = excluded.state, updated_at_ms = excluded.updated_at_ms",
        )
        .bind(workflow.conversation_key.as_str())
        .bind(workflow.member_id.as_str())
        .bind(workflow.state.to_string())
        .bind(workflow.updated_at_ms)
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(database_error)
    }

    async fn get(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        fresh_since_ms: i64,
    ) -> Result<Option<ScriptWorkflow>, StorageError> {
        let row = sqlx::query(
            "SELECT state, updated_at_ms FROM script_workflows \
             WHERE conversation_key = $1 AND member_id = $2 AND updated_at_ms >= $3",
        )
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .bind(fresh_since_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let text: String = row.get("state");
        let state = serde_json::from_str(&text)
            .map_err(|error| StorageError::Corrupt(format!("script_workflows.state: {error}")))?;
        Ok(Some(ScriptWorkflow {
            conversation_key: conversation_key.clone(),
            member_id: member_id.clone(),
            state,
            updated_at_ms: row.get("updated_at_ms"),
        }))
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        sqlx::query("DELETE FROM script_workflows WHERE conversation_key = $1 AND member_id = $2")
            .bind(conversation_key.as_str())
            .bind(member_id.as_str())
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected() > 0)
            .map_err(database_error)
    }

    async fn expire_stale(&self, fresh_since_ms: i64) -> Result<u64, StorageError> {
        sqlx::query("DELETE FROM script_workflows WHERE updated_at_ms < $1")
            .bind(fresh_since_ms)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(database_error)
    }
}
