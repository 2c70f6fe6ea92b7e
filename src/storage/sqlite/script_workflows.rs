//! `ScriptWorkflows` on SQLite: table `script_workflows`, keyed by conversation and member,
//! and `script_runs`, the runs that ended, once per run key.

use async_trait::async_trait;
use sqlx::Row;

use super::{SqliteStore, database_error};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{ScriptRun, ScriptWorkflow, ScriptWorkflows, StorageError};
use crate::storage::rows::script_run_from_row;

#[async_trait]
impl ScriptWorkflows for SqliteStore {
    async fn put(&self, workflow: &ScriptWorkflow) -> Result<(), StorageError> {
        if !workflow.state.is_object() {
            return Err(StorageError::Invalid(
                "a script workflow's state must be a json object".into(),
            ));
        }
        let state = workflow.state.to_string();
        let workflow = workflow.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT OR REPLACE INTO script_workflows \
                         (conversation_key, member_id, state, updated_at_ms) VALUES (?, ?, ?, ?)",
                    )
                    .bind(workflow.conversation_key.as_str())
                    .bind(workflow.member_id.as_str())
                    .bind(&state)
                    .bind(workflow.updated_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map(|_| ())
                    .map_err(database_error)
                })
            })
            .await
    }

    async fn get(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        fresh_since_ms: i64,
    ) -> Result<Option<ScriptWorkflow>, StorageError> {
        let row = sqlx::query(
            "SELECT state, updated_at_ms FROM script_workflows \
             WHERE conversation_key = ? AND member_id = ? AND updated_at_ms >= ?",
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
        self.delete_members_rows(
            "DELETE FROM script_workflows WHERE conversation_key = ? AND member_id = ?",
            conversation_key.as_str(),
            member_id.as_str(),
        )
        .await
    }

    async fn expire_stale(&self, fresh_since_ms: i64) -> Result<u64, StorageError> {
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query("DELETE FROM script_workflows WHERE updated_at_ms < ?")
                        .bind(fresh_since_ms)
                        .execute(&mut *connection)
                        .await
                        .map(|done| done.rows_affected())
                        .map_err(database_error)
                })
            })
            .await
    }

    async fn record_run(&self, run: &ScriptRun) -> Result<bool, StorageError> {
        if !run.values.is_object() {
            return Err(StorageError::Invalid(
                "a script run's values must be a json object".into(),
            ));
        }
        let run = run.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT OR IGNORE INTO script_runs (run_key, conversation_key, \
                         member_id, script, run_values, outcome, error, at_ms) \
                         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(&run.run_key)
                    .bind(run.conversation_key.as_str())
                    .bind(run.member_id.as_str())
                    .bind(&run.script)
                    .bind(run.values.to_string())
                    .bind(run.outcome.as_str())
                    .bind(&run.error)
                    .bind(run.at_ms)
                    .execute(&mut *connection)
                    .await
                    .map(|done| done.rows_affected() == 1)
                    .map_err(database_error)
                })
            })
            .await
    }

    async fn recent_runs(&self, limit: usize) -> Result<Vec<ScriptRun>, StorageError> {
        let rows = sqlx::query(
            "SELECT run_key, conversation_key, member_id, script, run_values, outcome, error, \
             at_ms FROM script_runs ORDER BY at_ms DESC, id DESC LIMIT ?",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.iter().map(script_run_from_row).collect()
    }
}
