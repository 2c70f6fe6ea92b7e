//! The intents engine's ports on either SQL database: `PlanExecutions` (table
//! `plan_executions`, the whole plan as JSON beside the columns it is found by) and
//! `IntentRecords` (table `intent_records`). A stored plan is replaced only at the version
//! it was read at, so of two writers of the same plan the second is refused as stale.

use async_trait::async_trait;

use super::{SqlBackend, SqlConnection, SqlRow, per_dialect, sql};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{
    IntentRecords, PlanExecution, PlanExecutions, StepStatus, StorageError, canceled_plan,
};

/// The statuses of an open plan, as stored in `plan_executions.status`.
const OPEN: [&str; 2] = ["waiting_user", "blocked"];

/// The plan of a row of `plan_executions` (its `plan` and `version` columns).
fn plan_from_row(row: &impl SqlRow) -> Result<PlanExecution, StorageError> {
    let mut plan: PlanExecution = row.json("plan_executions", "plan")?;
    // The column is the truth: plans stored before versions have none in their JSON.
    plan.version = u64::try_from(row.integer("version")?).unwrap_or(0);
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

#[async_trait]
impl<B: SqlBackend> PlanExecutions for B {
    async fn save_plan(&self, plan: &mut PlanExecution) -> Result<(), StorageError> {
        let version = plan.version + 1;
        let (text, stored_version) = plan_text(plan, version)?;
        let new = plan.version == 0;
        // One statement each: a new plan is inserted unless its id is taken, a stored one
        // replaced only at the version it was read at.
        let save = sql(if new {
            "INSERT INTO plan_executions (conversation_key, member_id, profile_id, \
             intent_id, status, current_index, plan, created_at_ms, updated_at_ms, \
             version, plan_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (plan_id) DO NOTHING"
        } else {
            "UPDATE plan_executions SET conversation_key = $1, member_id = $2, \
             profile_id = $3, intent_id = $4, status = $5, current_index = $6, plan = $7, \
             created_at_ms = $8, updated_at_ms = $9, version = $10 \
             WHERE plan_id = $11 AND version = $12"
        })
        .bind(plan.conversation_key.as_str())
        .bind(plan.member_id.as_str())
        .bind(&plan.profile_id)
        .bind(&plan.intent_id)
        .bind(plan.status().as_str())
        .bind(i64::try_from(plan.current_index).unwrap_or(i64::MAX))
        .bind(text)
        .bind(plan.created_at_ms)
        .bind(plan.updated_at_ms)
        .bind(stored_version)
        .bind(&plan.plan_id);
        let save = if new {
            save
        } else {
            save.bind(i64::try_from(plan.version).unwrap_or(i64::MAX))
        };
        if self.write_count(save).await? != 1 {
            return Err(StorageError::Stale(format!("plan {}", plan.plan_id)));
        }
        plan.version = version;
        Ok(())
    }

    async fn plan(&self, plan_id: &str) -> Result<Option<PlanExecution>, StorageError> {
        let plan = sql("SELECT plan, version FROM plan_executions WHERE plan_id = $1");
        let row = self.read_optional(plan.bind(plan_id)).await?;
        row.as_ref().map(plan_from_row).transpose()
    }

    async fn open_plan(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> Result<Option<PlanExecution>, StorageError> {
        let open = sql(
            "SELECT plan, version FROM plan_executions WHERE conversation_key = $1 \
             AND member_id = $2 AND status IN ($3, $4) \
             ORDER BY created_at_ms DESC, plan_id DESC LIMIT 1",
        )
        .bind(conversation_key.as_str())
        .bind(member_id.as_str())
        .bind(OPEN[0])
        .bind(OPEN[1]);
        let row = self.read_optional(open).await?;
        row.as_ref().map(plan_from_row).transpose()
    }

    async fn cancel_open_plans(
        &self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
        now_ms: i64,
    ) -> Result<u64, StorageError> {
        // The open plans locked as read, so no other worker moves one in between; and one
        // transaction, so a plan that cannot be read cancels none.
        let open = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT plan, version FROM plan_executions WHERE conversation_key = $1 \
             AND member_id = $2 AND status IN ($3, $4) ORDER BY plan_id{}",
            dialect.for_update()
        ));
        let open = sql(open)
            .bind(conversation_key.as_str())
            .bind(member_id.as_str())
            .bind(OPEN[0])
            .bind(OPEN[1]);
        self.atomically(move |connection| {
            Box::pin(async move {
                let mut count = 0;
                for row in connection.fetch(open).await? {
                    let read = plan_from_row(&row)?;
                    let read_at = i64::try_from(read.version).unwrap_or(i64::MAX);
                    let plan = canceled_plan(read, now_ms);
                    let (text, version) = plan_text(&plan, plan.version + 1)?;
                    let cancel = sql("UPDATE plan_executions SET status = $1, plan = $2, \
                         updated_at_ms = $3, version = $4 WHERE plan_id = $5 AND version = $6")
                    .bind(StepStatus::Canceled.as_str())
                    .bind(text)
                    .bind(now_ms)
                    .bind(version)
                    .bind(&plan.plan_id)
                    .bind(read_at);
                    count += connection.execute(cancel).await?;
                }
                Ok(count)
            })
        })
        .await
    }
}

#[async_trait]
impl<B: SqlBackend> IntentRecords for B {
    async fn get_record(
        &self,
        collection: &str,
        id: &str,
    ) -> Result<Option<serde_json::Value>, StorageError> {
        let get = sql("SELECT record FROM intent_records WHERE collection = $1 AND id = $2");
        let row = self.read_optional(get.bind(collection).bind(id)).await?;
        row.map(|row| {
            serde_json::from_str(&row.text("record")?).map_err(|error| {
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
        let put = sql(
            "INSERT INTO intent_records (collection, id, record) VALUES ($1, $2, $3) \
             ON CONFLICT (collection, id) DO UPDATE SET record = excluded.record",
        );
        self.write_count(put.bind(collection).bind(id).bind(record.to_string()))
            .await
            .map(drop)
    }
}
