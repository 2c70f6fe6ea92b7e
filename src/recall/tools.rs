//! `search_memory`, the tool that finds again what the family told hearth, and what
//! `processing_config.recall: auto` gives the model with each message
//! (`ToolsProvider::message_note`). Both read as the asking member (`ToolContext`), never
//! as anyone an argument names.
//!
//! The tool takes a query, optional days `since` and `until` (`YYYY-MM-DD`, both included,
//! in the member's zone: `family[].timezone`, else the profile's) and an optional `source`
//! (`chat`, `note` or `document`).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Days, NaiveDate, Utc};
use serde_json::{Value, json};

use super::search::MemorySearch;
use super::texts::{AUTO_HITS, Reading, TOOL_HITS};
use crate::family::Family;
use crate::llm::ToolSpec;
use crate::local_time::{LocalDay, ZoneName, parse_local_day, resolve_local};
use crate::ports::{MemoryFilter, MemoryKind, StorageError, memory_query_words};
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub const SEARCH_MEMORY: &str = "search_memory";

/// Every memory tool, as `enable_local_tools` names them.
pub const MEMORY_TOOL_NAMES: &[&str] = &[SEARCH_MEMORY];

/// A query longer than this is refused.
pub const MAX_QUERY_CHARS: usize = 300;

/// A profile's memory tool, and its snippets with each message under `recall: auto`.
pub struct MemoryToolset {
    search: Arc<MemorySearch>,
    family: Arc<Family>,
    profile_zone: ZoneName,
    /// Give each message's snippets (`recall: auto`).
    auto: bool,
}

/// What a call asks: its query and its filter, and the filter said in words for the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryQuery {
    pub query: String,
    pub filter: MemoryFilter,
    /// " among notes from 2026-03-01 to 2026-03-31"; empty without filters.
    pub scope: String,
}

fn text_argument<'a>(arguments: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim())),
        Some(other) => Err(ToolError::invalid(
            SEARCH_MEMORY,
            format!("`{name}` must be a string, got {other}"),
        )),
    }
}

/// A day as `YYYY-MM-DD`, nothing else (the model knows today's date from its prompt).
fn day_argument(arguments: &Value, name: &str) -> Result<Option<NaiveDate>, ToolError> {
    let Some(text) = text_argument(arguments, name)? else {
        return Ok(None);
    };
    match parse_local_day(text) {
        Ok(LocalDay::Date(date)) => Ok(Some(date)),
        _ => Err(ToolError::invalid(
            SEARCH_MEMORY,
            format!("`{name}` must be a day written YYYY-MM-DD, got {text:?}"),
        )),
    }
}

/// The first instant of `date` in `zone` (a day starting in a skipped hour starts after it).
fn start_of(date: NaiveDate, zone: ZoneName) -> i64 {
    resolve_local(zone, date.and_time(chrono::NaiveTime::MIN))
        .instant
        .timestamp_millis()
}

/// The call's arguments read: `query` (required, at most `MAX_QUERY_CHARS`), `since` and
/// `until` as days in `zone` (`until` included), `source` one kind. Each refusal names the
/// value and what it must be.
pub fn read_arguments(arguments: &Value, zone: ZoneName) -> Result<MemoryQuery, ToolError> {
    let query = text_argument(arguments, "query")?.ok_or_else(|| {
        ToolError::invalid(SEARCH_MEMORY, "`query` is missing: say what to look for")
    })?;
    if query.chars().count() > MAX_QUERY_CHARS {
        let start: String = query.chars().take(40).collect();
        return Err(ToolError::invalid(
            SEARCH_MEMORY,
            format!(
                "the query \"{start}…\" is longer than {MAX_QUERY_CHARS} characters; use a few words"
            ),
        ));
    }
    let since = day_argument(arguments, "since")?;
    let until = day_argument(arguments, "until")?;
    if let (Some(since), Some(until)) = (since, until)
        && since > until
    {
        return Err(ToolError::invalid(
            SEARCH_MEMORY,
            format!("`since` {since} is after `until` {until}; give the earlier day first"),
        ));
    }
    let kind = match text_argument(arguments, "source")? {
        None => None,
        Some(text) => Some(
            MemoryKind::ALL
                .into_iter()
                .find(|kind| kind.as_str().eq_ignore_ascii_case(text))
                .ok_or_else(|| {
                    ToolError::invalid(
                        SEARCH_MEMORY,
                        format!("`source` {text:?} is none of chat, note, document (leave it out for all)"),
                    )
                })?,
        ),
    };
    let mut scope = String::new();
    if let Some(kind) = kind {
        scope.push_str(&format!(" among {}s", kind.as_str()));
    }
    match (since, until) {
        (Some(since), Some(until)) => scope.push_str(&format!(" from {since} to {until}")),
        (Some(since), None) => scope.push_str(&format!(" since {since}")),
        (None, Some(until)) => scope.push_str(&format!(" until {until}")),
        (None, None) => {}
    }
    Ok(MemoryQuery {
        query: query.to_owned(),
        filter: MemoryFilter {
            since_ms: since.map(|day| start_of(day, zone)),
            // The day after `until` starts where the search stops.
            until_ms: until
                .and_then(|day| day.checked_add_days(Days::new(1)))
                .map(|day| start_of(day, zone)),
            kinds: kind.into_iter().collect(),
        },
        scope,
    })
}

impl MemoryToolset {
    pub fn new(
        search: Arc<MemorySearch>,
        family: Arc<Family>,
        profile_zone: ZoneName,
        auto: bool,
    ) -> Self {
        MemoryToolset {
            search,
            family,
            profile_zone,
            auto,
        }
    }

    /// The member's own zone, else the profile's: where their days are read and said.
    fn zone_of(&self, context: &ToolContext) -> ZoneName {
        self.family
            .member(context.member_id.as_str())
            .and_then(|member| member.timezone)
            .and_then(|zone| ZoneName::parse(&zone).ok())
            .unwrap_or(self.profile_zone)
    }

    fn reading<'a>(&'a self, context: &'a ToolContext, now: DateTime<Utc>) -> Reading<'a> {
        Reading {
            reader: &context.member_id,
            family: &self.family,
            zone: self.zone_of(context),
            now,
            here: &context.conversation_key,
        }
    }

    async fn search_memory(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let asked = read_arguments(arguments, self.zone_of(context))?;
        if !self.search.by_meaning_too() && memory_query_words(&asked.query).is_empty() {
            return Err(ToolError::invalid(
                SEARCH_MEMORY,
                format!(
                    "the query {:?} has only words too common to look for; give the words \
                     that matter",
                    asked.query
                ),
            ));
        }
        let found = self
            .search
            .find(&context.member_id, &asked.query, &asked.filter, TOOL_HITS)
            .await
            .map_err(storage)?;
        tracing::info!(
            member = %context.member_id,
            hits = found.hits.len(),
            "memory searched"
        );
        let reading = self.reading(context, crate::clock::now());
        Ok(reading.tool_text(&asked.query, &asked.scope, &found.hits, &found.words))
    }
}

/// A storage refusal of the member's input is theirs to correct; anything else failed.
fn storage(error: StorageError) -> ToolError {
    match error {
        StorageError::Invalid(message) => ToolError::invalid(SEARCH_MEMORY, message),
        other => ToolError::failed(SEARCH_MEMORY, other),
    }
}

#[async_trait]
impl ToolsProvider for MemoryToolset {
    async fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: SEARCH_MEMORY.into(),
            description: "Search what the family told hearth before: the member's chats with \
                          hearth, group chats they wrote in, the family's notes and their own \
                          private ones, documents. Use it when the member refers to something \
                          said or written earlier that is not in this conversation. Gives up \
                          to 6 short snippets, best first, each saying where it comes from \
                          (a chat, a note's title, a document's name), who said it and when."
                .into(),
            parameters: json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "What to look for, in a few words or a short question."},
                "since": {"type": "string", "description": "Optional: only from this day on, YYYY-MM-DD in the member's time zone."},
                "until": {"type": "string", "description": "Optional: only up to this day (included), YYYY-MM-DD."},
                "source": {"type": "string", "enum": ["chat", "note", "document"], "description": "Optional: only chats, only notes or only documents."}
            }, "required": ["query"]}),
        }]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        match name {
            SEARCH_MEMORY => self.search_memory(arguments, context).await,
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn message_note(&self, context: &ToolContext, text: &str) -> Option<String> {
        if !self.auto || text.trim().is_empty() {
            return None;
        }
        let found = self
            .search
            .find(
                &context.member_id,
                text,
                &MemoryFilter::default(),
                AUTO_HITS,
            )
            .await;
        match found {
            Ok(found) => self
                .reading(context, crate::clock::now())
                .auto_text(&found.hits, &found.words),
            Err(error) => {
                // The turn goes on without them; the model can still search.
                tracing::warn!(%error, member = %context.member_id, "memory not searched for the message");
                None
            }
        }
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
