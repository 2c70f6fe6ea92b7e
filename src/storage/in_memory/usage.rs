//! `UsageReport` in memory: the same sums as the SQLite adapter, over the stored messages
//! and the recorded model calls.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::DateTime;

use super::InMemoryStore;
use crate::ids::ConversationKey;
use crate::ids::MemberId;
use crate::ports::{
    DailyUsage, LlmSpend, StageEvent, StagedConversation, StorageError, TelemetryEvent, UsageReport,
};

fn day_of(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .map(|at| at.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

#[async_trait]
impl UsageReport for InMemoryStore {
    async fn staged_conversations(
        &self,
        limit: usize,
    ) -> Result<Vec<StagedConversation>, StorageError> {
        let state = self.lock();
        let mut last: BTreeMap<String, (i64, usize, ConversationKey)> = BTreeMap::new();
        for (order, event) in state.events.iter().enumerate() {
            if let TelemetryEvent::Stage {
                at_ms,
                conversation_key,
                ..
            } = event
            {
                last.insert(
                    conversation_key.to_string(),
                    (*at_ms, order, conversation_key.clone()),
                );
            }
        }
        let mut conversations: Vec<(i64, usize, ConversationKey)> = last.into_values().collect();
        conversations.sort_by_key(|newest| std::cmp::Reverse((newest.0, newest.1)));
        Ok(conversations
            .into_iter()
            .take(limit)
            .map(|(last_at_ms, _, conversation_key)| StagedConversation {
                conversation_key,
                last_at_ms,
            })
            .collect())
    }

    async fn stages_of(
        &self,
        conversation_key: &ConversationKey,
        limit: usize,
    ) -> Result<Vec<StageEvent>, StorageError> {
        let state = self.lock();
        let stages: Vec<StageEvent> = state
            .events
            .iter()
            .filter_map(|event| match event {
                TelemetryEvent::Stage {
                    at_ms,
                    conversation_key: key,
                    stage,
                    payload,
                } if key == conversation_key => Some(StageEvent {
                    at_ms: *at_ms,
                    conversation_key: key.clone(),
                    stage: stage.clone(),
                    payload: payload.clone(),
                }),
                _ => None,
            })
            .collect();
        let skip = stages.len().saturating_sub(limit);
        Ok(stages.into_iter().skip(skip).collect())
    }

    async fn spent_on(&self, llm_name: &str) -> Result<LlmSpend, StorageError> {
        let state = self.lock();
        let mut spent = LlmSpend::default();
        for event in &state.events {
            if let TelemetryEvent::LlmCall(call) = event
                && call.llm_name == llm_name
            {
                spent.calls += 1;
                spent.input_tokens += call.input_tokens;
                spent.cost_usd += call.cost_usd;
                spent.since_ms = Some(spent.since_ms.map_or(call.at_ms, |at| at.min(call.at_ms)));
            }
        }
        Ok(spent)
    }

    async fn daily_usage(&self, since_ms: i64) -> Result<Vec<DailyUsage>, StorageError> {
        let state = self.lock();
        let mut days: BTreeMap<(String, String), DailyUsage> = BTreeMap::new();
        for record in &state.inbox {
            if record.inbound.received_at_ms >= since_ms {
                let day = day_of(record.inbound.received_at_ms);
                entry(&mut days, day, &record.inbound.member_id).turns += 1;
            }
        }
        for event in &state.events {
            if let TelemetryEvent::LlmCall(call) = event
                && call.at_ms >= since_ms
                && let Some(member) = &call.member_id
            {
                let usage = entry(&mut days, day_of(call.at_ms), member);
                usage.llm_calls += 1;
                usage.input_tokens += call.input_tokens;
                usage.output_tokens += call.output_tokens;
                usage.cost_usd += call.cost_usd;
            }
        }
        Ok(DailyUsage::in_order(days.into_values()))
    }
}

fn entry<'a>(
    days: &'a mut BTreeMap<(String, String), DailyUsage>,
    day: String,
    member: &MemberId,
) -> &'a mut DailyUsage {
    days.entry((day.clone(), member.to_string()))
        .or_insert_with(|| DailyUsage::none(day, member.clone()))
}
