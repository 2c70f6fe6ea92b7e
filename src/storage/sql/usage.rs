//! `UsageReport` on either SQL database: the members' messages per day (UTC) from `inbox`,
//! and the model calls made for them with their tokens and cost from `llm_calls`, grouped
//! in SQL; the intents engine's stages from `telemetry_events`.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{SqlBackend, SqlRow, limit, per_dialect, sql};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{
    DailyUsage, LlmSpend, StageEvent, StagedConversation, StorageError, UsageReport,
};

#[async_trait]
impl<B: SqlBackend> UsageReport for B {
    async fn staged_conversations(
        &self,
        count: usize,
    ) -> Result<Vec<StagedConversation>, StorageError> {
        let staged = sql(
            "SELECT conversation_key, MAX(at_ms) AS last_at_ms, MAX(id) AS last_id \
             FROM telemetry_events GROUP BY conversation_key \
             ORDER BY last_at_ms DESC, last_id DESC LIMIT $1",
        );
        let rows = self.read(staged.bind(limit(count))).await?;
        rows.iter()
            .map(|row| {
                let key = row.text("conversation_key")?;
                Ok(StagedConversation {
                    conversation_key: key.parse().map_err(|_| {
                        StorageError::Corrupt(format!("telemetry conversation {key:?}"))
                    })?,
                    last_at_ms: row.integer("last_at_ms")?,
                })
            })
            .collect()
    }

    async fn stages_of(
        &self,
        conversation_key: &ConversationKey,
        count: usize,
    ) -> Result<Vec<StageEvent>, StorageError> {
        let stages = sql(
            "SELECT at_ms, stage, payload FROM (SELECT id, at_ms, stage, payload \
             FROM telemetry_events WHERE conversation_key = $1 ORDER BY id DESC LIMIT $2) \
             AS newest ORDER BY id",
        );
        let rows = self
            .read(stages.bind(conversation_key.as_str()).bind(limit(count)))
            .await?;
        rows.iter()
            .map(|row| {
                Ok(StageEvent {
                    at_ms: row.integer("at_ms")?,
                    conversation_key: conversation_key.clone(),
                    stage: row.text("stage")?,
                    payload: serde_json::from_str(&row.text("payload")?)
                        .unwrap_or(serde_json::Value::Null),
                })
            })
            .collect()
    }

    async fn spent_on(&self, llm_name: &str) -> Result<LlmSpend, StorageError> {
        // A sum read back as an integer (PostgreSQL's SUM of a BIGINT is a NUMERIC).
        let spent = sql("SELECT COUNT(*) AS calls, \
             CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT) AS input_tokens, \
             CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION) AS cost_usd, \
             MIN(at_ms) AS since_ms FROM llm_calls WHERE llm_name = $1");
        let row = self.read_optional(spent.bind(llm_name)).await?;
        let row = row.ok_or_else(|| StorageError::Database("llm calls not summed".into()))?;
        Ok(LlmSpend {
            calls: u64::try_from(row.integer("calls")?).unwrap_or(0),
            input_tokens: u64::try_from(row.integer("input_tokens")?).unwrap_or(0),
            cost_usd: row.real("cost_usd")?,
            since_ms: row.optional_integer("since_ms")?,
        })
    }

    async fn daily_usage(&self, since_ms: i64) -> Result<Vec<DailyUsage>, StorageError> {
        let turns = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT {} AS day, member_id, COUNT(*) AS turns \
             FROM inbox WHERE received_at_ms >= $1 GROUP BY day, member_id",
            dialect.utc_day("received_at_ms")
        ));
        // A sum read back as an integer (PostgreSQL's SUM of a BIGINT is a NUMERIC).
        let calls = per_dialect!(B::DIALECT, |dialect| format!(
            "SELECT {} AS day, member_id, COUNT(*) AS calls, \
             CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
             CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, SUM(cost_usd) AS cost_usd \
             FROM llm_calls WHERE at_ms >= $1 AND member_id IS NOT NULL \
             GROUP BY day, member_id",
            dialect.utc_day("at_ms")
        ));
        let turns = self.read(sql(turns).bind(since_ms)).await?;
        let calls = self.read(sql(calls).bind(since_ms)).await?;
        let mut days: BTreeMap<(String, String), DailyUsage> = BTreeMap::new();
        let count = |value: i64| u64::try_from(value).unwrap_or(0);
        for row in turns {
            entry(&mut days, &row)?.turns = count(row.integer("turns")?);
        }
        for row in calls {
            let usage = entry(&mut days, &row)?;
            usage.llm_calls = count(row.integer("calls")?);
            usage.input_tokens = count(row.integer("input_tokens")?);
            usage.output_tokens = count(row.integer("output_tokens")?);
            usage.cost_usd = row.real("cost_usd")?;
        }
        Ok(DailyUsage::in_order(days.into_values()))
    }
}

/// The day and member of `row`, in `days`.
fn entry<'d>(
    days: &'d mut BTreeMap<(String, String), DailyUsage>,
    row: &impl SqlRow,
) -> Result<&'d mut DailyUsage, StorageError> {
    let (day, member) = (row.text("day")?, row.text("member_id")?);
    let member_id: MemberId = member
        .parse()
        .map_err(|error| StorageError::Corrupt(format!("member id {member:?}: {error}")))?;
    Ok(days
        .entry((day.clone(), member))
        .or_insert_with(|| DailyUsage::none(day, member_id)))
}
