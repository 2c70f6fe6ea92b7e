//! `UsageReport` on PostgreSQL: the members' messages per day (UTC) from `inbox`, and the
//! model calls made for them with their tokens and cost from `llm_calls`, grouped in SQL.

use std::collections::BTreeMap;

use async_trait::async_trait;
use sqlx::Row;

use super::{PostgresStore, database_error};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{DailyUsage, StageEvent, StagedConversation, StorageError, UsageReport};

#[async_trait]
impl UsageReport for PostgresStore {
    async fn staged_conversations(
        &self,
        limit: usize,
    ) -> Result<Vec<StagedConversation>, StorageError> {
        let rows = sqlx::query(
            "SELECT conversation_key, MAX(at_ms) AS last_at_ms, MAX(id) AS last_id \
             FROM telemetry_events GROUP BY conversation_key \
             ORDER BY last_at_ms DESC, last_id DESC LIMIT $1",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        rows.into_iter()
            .map(|row| {
                let key: String = row.get("conversation_key");
                Ok(StagedConversation {
                    conversation_key: key.parse().map_err(|_| {
                        StorageError::Corrupt(format!("telemetry conversation {key:?}"))
                    })?,
                    last_at_ms: row.get("last_at_ms"),
                })
            })
            .collect()
    }

    async fn stages_of(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
    ) -> Result<Vec<StageEvent>, StorageError> {
        let rows = sqlx::query(
            "SELECT at_ms, stage, payload FROM (SELECT id, at_ms, stage, payload \
             FROM telemetry_events WHERE conversation_key = $1 ORDER BY id DESC LIMIT $2) \
             AS newest ORDER BY id",
        )
        .bind(conversation_key.as_str())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        Ok(rows
            .into_iter()
            .map(|row| StageEvent {
                at_ms: row.get("at_ms"),
                conversation_key: conversation_key.clone(),
                stage: row.get("stage"),
                payload: serde_json::from_str(&row.get::<String, _>("payload"))
                    .unwrap_or(serde_json::Value::Null),
            })
            .collect())
    }

    async fn daily_usage(&self, since_ms: i64) -> Result<Vec<DailyUsage>, StorageError> {
        let turns = sqlx::query(
            "SELECT to_char(to_timestamp(received_at_ms / 1000) AT TIME ZONE 'UTC', \
             'YYYY-MM-DD') AS day, member_id, COUNT(*) AS turns \
             FROM inbox WHERE received_at_ms >= $1 GROUP BY day, member_id",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        // SUM of a BIGINT is a NUMERIC on PostgreSQL: read back as BIGINT.
        let calls = sqlx::query(
            "SELECT to_char(to_timestamp(at_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') \
             AS day, member_id, COUNT(*) AS calls, \
             SUM(input_tokens)::bigint AS input_tokens, \
             SUM(output_tokens)::bigint AS output_tokens, SUM(cost_usd) AS cost_usd \
             FROM llm_calls WHERE at_ms >= $1 AND member_id IS NOT NULL \
             GROUP BY day, member_id",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(database_error)?;
        let mut days: BTreeMap<(String, String), DailyUsage> = BTreeMap::new();
        let count = |value: i64| u64::try_from(value).unwrap_or(0);
        for row in turns {
            entry(&mut days, row.get("day"), row.get("member_id"))?.turns = count(row.get("turns"));
        }
        for row in calls {
            let usage = entry(&mut days, row.get("day"), row.get("member_id"))?;
            usage.llm_calls = count(row.get("calls"));
            usage.input_tokens = count(row.get("input_tokens"));
            usage.output_tokens = count(row.get("output_tokens"));
            usage.cost_usd = row.get("cost_usd");
        }
        Ok(DailyUsage::in_order(days.into_values()))
    }
}

fn entry(
    days: &mut BTreeMap<(String, String), DailyUsage>,
    day: String,
    member: String,
) -> Result<&mut DailyUsage, StorageError> {
    let member_id: MemberId = member
        .parse()
        .map_err(|error| StorageError::Corrupt(format!("member id {member:?}: {error}")))?;
    Ok(days
        .entry((day.clone(), member))
        .or_insert_with(|| DailyUsage::none(day, member_id)))
}
