//! The intents engine's ports on SQLite: `PlanExecutions` (table `plan_executions`, the whole
//! plan as JSON beside the columns it is found by) and `IntentRecords` (table
//! `intent_records`).

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::{SqliteStore, database_error};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{
    IntentRecords, PlanExecution, PlanExecutions, StepStatus, StorageError, canceled_plan,
};

/// The statuses of an open plan, as stored in `plan_executions.status`.
const OPEN: [&str; 2] = ["waiting_user", "blocked"];

/// The plan of a row of `plan_executions` (its `plan` and `version` columns).
fn plan_from_row(row: &SqliteRow) -> Result<PlanExecution, StorageError> {
    let mut plan: PlanExecution = serde_json::from_str(&row.get::<String, _>("plan"))
        .map_err(|error| StorageError::Corrupt(format!("plan_executions.plan: {error}")))?;
    // The column is the truth: plans stored before versions have none in their JSON.
    plan.version = u64::try_from(row.get::<i64, _>("version")).unwrap_or(0);
    Ok(plan)
}

/// `plan` as stored at `version`: its JSON text and the version as a column value.
fn plan_text(plan: &PlanExecution, version: u64) -> Result<(String, i64), StorageError> {
    let invalid = |what: String| StorageError::Invalid(format!("plan {}: {what}", plan.plan_id));
    let stored = i64::try_from(version).map_err(|error| invalid(error.to_string()))?;
    let text = serde_json::to_string(&PlanExecution {
        version,
        ..plan.clone()
    })
    .map_err(|error| invalid(error.to_string()))?;
    Ok((text, stored))
}

fn stale(plan_id: &str) -> StorageError {
    StorageError::Stale(format!("plan {plan_id}"))
}

#[async_trait]
impl PlanExecutions for SqliteStore {
    async fn save_plan(&self, plan: &mut PlanExecution) -> Result<(), StorageError> {
        let version = plan.version + 1;
        let (text, stored_version) = plan_text(plan, version)?;
        let read_at = i64::try_from(plan.version).unwrap_or(i64::MAX);
        let saved = plan.clone();
        // One statement each: a new plan is inserted unless its id is taken, a stored one
        // replaced only at the version it was read at.
        let written = self
            .writer
            .run(move |connection| {
                Box::pin(async move {
                    let new = saved.version == 0;
                    let query = if new {
                        sqlx::query(
                            "INSERT INTO plan_executions (conversation_key, member_id, \
                             profile_id, intent_id, status, current_index, plan, created_at_ms, \
                             updated_at_ms, version, plan_id) \
                             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                             ON CONFLICT (plan_id) DO NOTHING",
                        )
                    } else {
                        sqlx::query(
                            "UPDATE plan_executions SET conversation_key = ?, member_id = ?, \
                             profile_id = ?, intent_id = ?, status = ?, current_index = ?, \
                             plan = ?, created_at_ms = ?, updated_at_ms = ?, version = ? \
                             WHERE plan_id = ? AND version = ?",
                        )
                    };
                    let query = query
                        .bind(saved.conversation_key.as_str())
                        .bind(saved.member_id.as_str())
                        .bind(&saved.profile_id)
                        .bind(&saved.intent_id)
                        .bind(saved.status().as_str())
                        .bind(i64::try_from(saved.current_index).unwrap_or(i64::MAX))
                        .bind(&text)
                        .bind(saved.created_at_ms)
                        .bind(saved.updated_at_ms)
                        .bind(stored_version)
                        .bind(&saved.plan_id);
                    let query = if new { query } else { query.bind(read_at) };
                    query
                        .execute(&mut *connection)
                        .await
                        .map(|done| done.rows_affected() == 1)
                        .map_err(database_error)
                })
            })
            .await?;
        if !written {
            return Err(stale(&plan.plan_id));
        }
        plan.version = version;
        Ok(())
    }

    async fn plan(&self, plan_id: &str) -> Result<Option<PlanExecution>, StorageError> {
        let row = sqlx::query("SELECT plan, version FROM plan_executions WHERE plan_id = ?")
            .bind(plan_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(plan_from_row).transpose()
    }

    async fn open_plan(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<Option<PlanExecution>, StorageError> {
        let row = sqlx::query(
            "SELECT plan, version FROM plan_executions WHERE conversation_key = ? \
             AND member_id = ? AND status IN (?, ?) \
             ORDER BY created_at_ms DESC, plan_id DESC LIMIT 1",
        )
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .bind(OPEN[0])
        .bind(OPEN[1])
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        row.as_ref().map(plan_from_row).transpose()
    }

    async fn cancel_open_plans(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<u64, StorageError> {
        let (conversation_key, member_id) = (conversation_key.to_string(), member_id.to_string());
        // Several statements: in a savepoint, so a plan that cannot be read cancels none.
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let rows = sqlx::query(
                        "SELECT plan, version FROM plan_executions WHERE conversation_key = ? \
                         AND member_id = ? AND status IN (?, ?)",
                    )
                    .bind(&conversation_key)
                    .bind(&member_id)
                    .bind(OPEN[0])
                    .bind(OPEN[1])
                    .fetch_all(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    let mut count = 0;
                    for row in rows {
                        let read = plan_from_row(&row)?;
                        let read_at = i64::try_from(read.version).unwrap_or(i64::MAX);
                        let plan = canceled_plan(read, now_ms);
                        let (text, version) = plan_text(&plan, plan.version + 1)?;
                        sqlx::query(
                            "UPDATE plan_executions SET status = ?, plan = ?, updated_at_ms = ?, \
                             version = ? WHERE plan_id = ? AND version = ?",
                        )
                        .bind(StepStatus::Canceled.as_str())
                        .bind(&text)
                        .bind(now_ms)
                        .bind(version)
                        .bind(&plan.plan_id)
                        .bind(read_at)
                        .execute(&mut *connection)
                        .await
                        .map_err(database_error)?;
                        count += 1;
                    }
                    Ok(count)
                })
            })
            .await
    }
}

#[async_trait]
impl IntentRecords for SqliteStore {
    async fn get_record(
        &self,
        collection: &str,
        id: &str,
    ) -> Result<Option<serde_json::Value>, StorageError> {
        let row = sqlx::query("SELECT record FROM intent_records WHERE collection = ? AND id = ?")
            .bind(collection)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.map(|row| {
            serde_json::from_str(&row.get::<String, _>("record")).map_err(|error| {
                StorageError::Corrupt(format!("intent_records {collection}/{id}: {error}"))
            })
        })
        .transpose()
    }

    async fn put_record(
        &self,
        collection: &str,
        id: &str,
        record: &serde_json::Value,
    ) -> Result<(), StorageError> {
        let (collection, id, record) = (collection.to_owned(), id.to_owned(), record.to_string());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT OR REPLACE INTO intent_records (collection, id, record) \
                         VALUES (?, ?, ?)",
                    )
                    .bind(&collection)
                    .bind(&id)
                    .bind(&record)
                    .execute(&mut *connection)
                    .await
                    .map(|_| ())
                    .map_err(database_error)
                })
            })
            .await
    }
}
