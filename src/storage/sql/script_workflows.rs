//! `ScriptWorkflows` on either SQL database: table `script_workflows`, the state of a
//! script a member is walking through, one per conversation and member; and `script_runs`,
//! the runs that ended, once per run key.

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, limit, sql};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{ScriptRun, ScriptWorkflow, ScriptWorkflows, StorageError};
use crate::storage::rows::script_run_from_row;

#[async_trait]
impl<B: SqlBackend> ScriptWorkflows for B {
    async fn put(&self, workflow: &ScriptWorkflow) -> Result<(), StorageError> {
        if !workflow.state.is_object() {
            return Err(StorageError::Invalid(
                "a script workflow's state must be a json object".into(),
            ));
        }
        let put = sql("INSERT INTO script_workflows \
             (conversation_key, member_id, state, updated_at_ms) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (conversation_key, member_id) DO UPDATE SET \
             state = excluded.state, updated_at_ms = excluded.updated_at_ms")
        .bind(workflow.conversation_key.as_str())
        .bind(workflow.member_id.as_str())
        .bind(workflow.state.to_string())
        .bind(workflow.updated_at_ms);
        self.write_count(put).await.map(drop)
    }

    async fn get(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        fresh_since_ms: i64,
    ) -> Result<Option<ScriptWorkflow>, StorageError> {
        let get = sql("SELECT state, updated_at_ms FROM script_workflows \
             WHERE conversation_key = $1 AND member_id = $2 AND updated_at_ms >= $3")
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .bind(fresh_since_ms);
        let Some(row) = self.read_optional(get).await? else {
            return Ok(None);
        };
        Ok(Some(ScriptWorkflow {
            conversation_key: conversation_key.clone(),
            member_id: member_id.clone(),
            state: row.json("script_workflows", "state")?,
            updated_at_ms: row.integer("updated_at_ms")?,
        }))
    }

    async fn clear(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<bool, StorageError> {
        let clear =
            sql("DELETE FROM script_workflows WHERE conversation_key = $1 AND member_id = $2")
                .bind(conversation_key.as_str())
                .bind(member_id.as_str());
        Ok(self.write_count(clear).await? > 0)
    }

    async fn expire_stale(&self, fresh_since_ms: i64) -> Result<u64, StorageError> {
        let expire = sql("DELETE FROM script_workflows WHERE updated_at_ms < $1");
        self.write_count(expire.bind(fresh_since_ms)).await
    }

    async fn record_run(&self, run: &ScriptRun) -> Result<bool, StorageError> {
        if !run.values.is_object() {
            return Err(StorageError::Invalid(
                "a script run's values must be a json object".into(),
            ));
        }
        let record = sql(
            "INSERT INTO script_runs (run_key, conversation_key, member_id, \
             script, run_values, outcome, error, at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_key) DO NOTHING",
        )
        .bind(&run.run_key)
        .bind(run.conversation_key.as_str())
        .bind(run.member_id.as_str())
        .bind(&run.script)
        .bind(run.values.to_string())
        .bind(run.outcome.as_str())
        .bind(&run.error)
        .bind(run.at_ms);
        Ok(self.write_count(record).await? == 1)
    }

    async fn recent_runs(&self, count: usize) -> Result<Vec<ScriptRun>, StorageError> {
        let recent = sql(
            "SELECT run_key, conversation_key, member_id, script, run_values, \
             outcome, error, at_ms FROM script_runs ORDER BY at_ms DESC, id DESC LIMIT $1",
        );
        let rows = self.read(recent.bind(limit(count))).await?;
        rows.iter().map(script_run_from_row).collect()
    }
}
