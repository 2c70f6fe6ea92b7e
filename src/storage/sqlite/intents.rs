//! The intents engine's ports on SQLite: `PlanExecutions` (table `plan_executions`, the whole
//! plan as JSON beside the columns it is found by) and `IntentRecords` (table
//! `intent_records`).

use async_trait::async_trait;
use sqlx::Row;

use super::{SqliteStore, database_error};
use crate::ports::{
    IntentRecords, PlanExecution, PlanExecutions, StepStatus, StorageError, canceled_plan,
};

/// The statuses of an open plan, as stored in `plan_executions.status`.
const OPEN: [&str; 2] = ["waiting_user", "blocked"];

fn plan_from_text(text: &str) -> Result<PlanExecution, StorageError> {
    serde_json::from_str(text)
        .map_err(|error| StorageError::Corrupt(format!("plan_executions.plan: {error}")))
}

#[async_trait]
impl PlanExecutions for SqliteStore {
    async fn save_plan(&self, plan: &PlanExecution) -> Result<(), StorageError> {
        let text = serde_json::to_string(plan)
            .map_err(|error| StorageError::Invalid(format!("plan {}: {error}", plan.plan_id)))?;
        let plan = plan.clone();
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT OR REPLACE INTO plan_executions (plan_id, conversation_key, \
                         member_id, profile_id, intent_id, status, current_index, plan, \
                         created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(&plan.plan_id)
                    .bind(&plan.conversation_key)
                    .bind(&plan.member_id)
                    .bind(&plan.profile_id)
                    .bind(&plan.intent_id)
                    .bind(plan.status().as_str())
                    .bind(i64::try_from(plan.current_index).unwrap_or(i64::MAX))
                    .bind(&text)
                    .bind(plan.created_at_ms)
                    .bind(plan.updated_at_ms)
                    .execute(&mut *connection)
                    .await
                    .map(|_| ())
                    .map_err(database_error)
                })
            })
            .await
    }

    async fn plan(&self, plan_id: &str) -> Result<Option<PlanExecution>, StorageError> {
        let row = sqlx::query("SELECT plan FROM plan_executions WHERE plan_id = ?")
            .bind(plan_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.map(|row| plan_from_text(&row.get::<String, _>("plan")))
            .transpose()
    }

    async fn open_plan(
        &self,
        conversation_key: &str,
        member_id: &str,
    ) -> Result<Option<PlanExecution>, StorageError> {
        let row = sqlx::query(
            "SELECT plan FROM plan_executions WHERE conversation_key = ? AND member_id = ? \
             AND status IN (?, ?) ORDER BY created_at_ms DESC, plan_id DESC LIMIT 1",
        )
        .bind(conversation_key)
        .bind(member_id)
        .bind(OPEN[0])
        .bind(OPEN[1])
        .fetch_optional(&self.pool)
        .await
        .map_err(database_error)?;
        row.map(|row| plan_from_text(&row.get::<String, _>("plan")))
            .transpose()
    }

    async fn cancel_open_plans(
        &self,
        conversation_key: &str,
        member_id: &str,
        now_ms: i64,
    ) -> Result<u64, StorageError> {
        let (conversation_key, member_id) = (conversation_key.to_owned(), member_id.to_owned());
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let rows = sqlx::query(
                        "SELECT plan FROM plan_executions WHERE conversation_key = ? \
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
                        let plan =
                            canceled_plan(plan_from_text(&row.get::<String, _>("plan"))?, now_ms);
                        let text = serde_json::to_string(&plan).map_err(|error| {
                            StorageError::Invalid(format!("plan {}: {error}", plan.plan_id))
                        })?;
                        sqlx::query(
                            "UPDATE plan_executions SET status = ?, plan = ?, updated_at_ms = ? \
                             WHERE plan_id = ?",
                        )
                        .bind(StepStatus::Canceled.as_str())
                        .bind(&text)
                        .bind(now_ms)
                        .bind(&plan.plan_id)
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

/// One stored stage event of `telemetry_events`, for `hearth telemetry`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredStage {
    pub id: i64,
    pub at_ms: i64,
    pub conversation_key: String,
    pub stage: String,
    pub payload: serde_json::Value,
}

impl SqliteStore {
    /// The stage events of a conversation (`conversation_key`), oldest first, at most `limit`
    /// of the newest.
    pub async fn stage_events(
        &self,
        conversation_key: &str,
        limit: u32,
    ) -> Result<Vec<StoredStage>, StorageError> {
        let rows = sqlx::query(
            "SELECT id, at_ms, conversation_key, stage, payload FROM (SELECT * FROM \
             telemetry_events WHERE conversation_key = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
        )
        .bind(conversation_key)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(rows
            .into_iter()
            .map(|row| StoredStage {
                id: row.get("id"),
                at_ms: row.get("at_ms"),
                conversation_key: row.get("conversation_key"),
                stage: row.get("stage"),
                payload: serde_json::from_str(&row.get::<String, _>("payload"))
                    .unwrap_or(serde_json::Value::Null),
            })
            .collect())
    }
}
