//! The calendar tools a profile may enable: `search_calendar_events`, `add_calendar_event`,
//! `modify_calendar_event` and `delete_calendar_event`. Times are the member's local dates
//! and times in their zone, said back in their words. A write names the version of the
//! event it was shown (`If-Match`), so a change made elsewhere meanwhile is reported and
//! never overwritten; a new event's UID comes from the turn journal's key, so a turn
//! repeated after a crash finds its event instead of making a second one. A confirmation
//! shows the event as it is and as it would be (`render_call`).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

use super::account::{CalendarProblem, ProfileCalendars};
use super::caldav::{CalDavError, Resource};
use super::events::{EventData, EventFields, changed_event_text, new_event_text};
use super::phrasing::{say_event, say_occurrence};
use super::reading::{
    Found, READ_TIME_LIMIT, SearchRange, off_the_actors_thread, read_events_off_thread,
};
use super::timing::{as_event, event_fields, text};
use crate::family::Family;
use crate::ids::MemberId;
use crate::llm::ToolSpec;
use crate::local_time::phrasing::today_in;
use crate::local_time::{ZoneName, parse_local_day, resolve_local};
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub const SEARCH_CALENDAR_EVENTS: &str = "search_calendar_events";
pub const ADD_CALENDAR_EVENT: &str = "add_calendar_event";
pub const MODIFY_CALENDAR_EVENT: &str = "modify_calendar_event";
pub const DELETE_CALENDAR_EVENT: &str = "delete_calendar_event";

/// Every calendar tool, as `enable_local_tools` names them.
pub const CALENDAR_TOOL_NAMES: &[&str] = &[
    SEARCH_CALENDAR_EVENTS,
    ADD_CALENDAR_EVENT,
    MODIFY_CALENDAR_EVENT,
    DELETE_CALENDAR_EVENT,
];

/// At most this many occurrences are listed for one search.
const MAX_LISTED: usize = 60;
/// The longest `words` a search takes.
const MAX_WORDS_CHARS: usize = 200;
/// The longest range one search covers.
const MAX_RANGE_DAYS: i64 = 366;

/// One profile's calendar tools.
pub struct CalendarToolset {
    calendars: Arc<ProfileCalendars>,
    family: Arc<Family>,
    profile_zone: ZoneName,
}

/// An ETag as a write sends it: search shows it without its quotes.
fn etag_from(version: &str) -> String {
    let version = version.trim();
    if version.starts_with('"') || version.starts_with("W/") {
        version.to_owned()
    } else {
        format!("\"{version}\"")
    }
}

/// An ETag as search shows it (and a page's form carries it): without its quotes.
pub fn shown_version(etag: &str) -> &str {
    etag.trim_matches('"')
}

/// The UID of the event a turn adds: the same for the same turn, title and time, so the
/// call repeated after a crash (or asked again after an unknown outcome) finds its event.
fn event_uid(context: &ToolContext, fields: &EventFields) -> String {
    let Some(key) = &context.idempotency_key else {
        return format!("hearth-{}", uuid::Uuid::now_v7());
    };
    let turn = key.rsplit_once('.').map_or(key.as_str(), |(turn, _)| turn);
    let name = format!(
        "{turn}\n{}\n{:?}",
        fields.summary.to_lowercase(),
        fields.start
    );
    let uid = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes());
    format!("hearth-{uid}")
}

impl CalendarToolset {
    pub fn new(
        calendars: Arc<ProfileCalendars>,
        family: Arc<Family>,
        profile_zone: ZoneName,
    ) -> Self {
        CalendarToolset {
            calendars,
            family,
            profile_zone,
        }
    }

    /// The member's own zone (their settings' over `family[].timezone`), else the
    /// profile's: where their days and times are read and said.
    pub fn zone_for(&self, member_id: &MemberId) -> ZoneName {
        self.family
            .member(member_id.as_str())
            .and_then(|member| member.timezone)
            .and_then(|zone| ZoneName::parse(&zone).ok())
            .unwrap_or(self.profile_zone)
    }

    fn zone_of(&self, context: &ToolContext) -> ZoneName {
        self.zone_for(&context.member_id)
    }

    /// The event `id` names, checked to be in `version` as a write would check it: its
    /// calendar's name and the event, for showing it before a change.
    pub async fn event_at(
        &self,
        id: &str,
        version: &str,
    ) -> Result<(String, EventData), ToolError> {
        let arguments = json!({"id": id, "version": version});
        let (calendar, _, event) = self.current(MODIFY_CALENDAR_EVENT, &arguments).await?;
        Ok((calendar, event))
    }

    async fn search(&self, arguments: &Value, zone: ZoneName) -> Result<String, ToolError> {
        let tool = SEARCH_CALENDAR_EVENTS;
        let now = crate::clock::now();
        let today = today_in(zone, now);
        let day = |name: &str| -> Result<Option<chrono::NaiveDate>, ToolError> {
            text(arguments, name)
                .map_err(|message| ToolError::invalid(tool, message))?
                .filter(|text| !text.is_empty())
                .map(|text| {
                    parse_local_day(text)
                        .map(|day| day.date_from(today))
                        .map_err(|error| ToolError::invalid(tool, format!("`{name}`: {error}")))
                })
                .transpose()
        };
        let words = text(arguments, "words")
            .map_err(|message| ToolError::invalid(tool, message))?
            .unwrap_or_default();
        if words.chars().count() > MAX_WORDS_CHARS {
            return Err(ToolError::invalid(
                tool,
                format!("`words` is longer than {MAX_WORDS_CHARS} characters; search for fewer"),
            ));
        }
        let words: Vec<String> = words.split_whitespace().map(str::to_lowercase).collect();
        let first = day("from")?.unwrap_or(today);
        let default_days = if words.is_empty() { 6 } else { 365 };
        let last = day("to")?.unwrap_or(first + TimeDelta::days(default_days));
        if last < first {
            return Err(ToolError::invalid(
                tool,
                format!("`to` {last} is before `from` {first}"),
            ));
        }
        if (last - first).num_days() > MAX_RANGE_DAYS {
            return Err(ToolError::invalid(
                tool,
                format!("search at most {MAX_RANGE_DAYS} days at once"),
            ));
        }
        let from = resolve_local(zone, first.and_time(Default::default())).instant;
        let to = resolve_local(
            zone,
            (last + TimeDelta::days(1)).and_time(Default::default()),
        )
        .instant;
        let range = SearchRange {
            from,
            to,
            zone,
            words: words.clone(),
        };
        let searched = self
            .calendars
            .search(range)
            .await
            .map_err(|problem| ToolError::failed(tool, problem))?;
        let range = format!(
            "{} to {} ({zone})",
            first.format("%a %-d %b %Y"),
            last.format("%a %-d %b %Y")
        );
        let mut lines = Vec::new();
        if searched.found.is_empty() {
            if !searched.problems.is_empty()
                && searched.problems.len() >= self.calendars.source_count()
            {
                return Err(ToolError::failed(
                    tool,
                    format!(
                        "the calendar could not be searched: {}",
                        searched.problems.join("; ")
                    ),
                ));
            }
            lines.push(match words.is_empty() {
                true => format!("No events from {range}."),
                false => format!("No events matching {:?} from {range}.", words.join(" ")),
            });
        } else {
            lines.push(format!("Events from {range}:"));
            for found in searched.found.iter().take(MAX_LISTED) {
                lines.push(format!("- {}", line_of(found, zone, now)));
            }
            let more = searched.found.len().saturating_sub(MAX_LISTED) + searched.more;
            if more > 0 {
                lines.push(format!(
                    "... and {more} more; search a shorter range to see them."
                ));
            }
        }
        for problem in &searched.problems {
            lines.push(format!("Not searched: {problem}."));
        }
        for rule in &searched.not_expanded {
            lines.push(format!(
                "\"{}\" repeats by a rule hearth could not expand ({}: {}); only its first time is listed, if it falls in these days.",
                rule.summary, rule.rule, rule.reason
            ));
        }
        if searched.more_not_expanded > 0 {
            lines.push(format!(
                "... and {} more repeating events could not be expanded.",
                searched.more_not_expanded
            ));
        }
        Ok(lines.join("\n"))
    }

    fn writable(&self, tool: &str) -> Result<(), ToolError> {
        if self.calendars.read_only() {
            return Err(ToolError::failed(
                tool,
                "this profile's calendars are read only (calendar_config.caldav.read_only, or only ical_urls); nothing was written",
            ));
        }
        Ok(())
    }

    async fn add(
        &self,
        arguments: &Value,
        context: &ToolContext,
        zone: ZoneName,
    ) -> Result<String, ToolError> {
        let tool = ADD_CALENDAR_EVENT;
        self.writable(tool)?;
        let now = crate::clock::now();
        let fields = event_fields(arguments, None, zone, now)
            .map_err(|message| ToolError::invalid(tool, message))?;
        let calendar_name =
            text(arguments, "calendar").map_err(|message| ToolError::invalid(tool, message))?;
        let calendar = self
            .calendars
            .target(calendar_name)
            .await
            .map_err(|problem| ToolError::failed(tool, problem))?;
        let uid = event_uid(context, &fields);
        let url = calendar.url.join(&format!("{uid}.ics")).map_err(|error| {
            ToolError::failed(tool, format!("no address for the event: {error}"))
        })?;
        let client = self
            .calendars
            .client()
            .map_err(|problem| ToolError::failed(tool, problem))?;
        let written = client
            .put(&url, new_event_text(&uid, &fields, now), None)
            .await;
        self.calendars.note(written.as_ref().err());
        let said = say_event(&as_event(&uid, &fields), zone, now);
        match written {
            Ok(true) => {
                tracing::info!(calendar = %calendar.name, uid = %uid, "calendar event added");
                Ok(format!("Added to {}: {said}.", calendar.name))
            }
            // Its UID is this turn's: the same call ran before (hearth stopped after it).
            Ok(false) => Ok(format!(
                "Already in {} (added before): {said}.",
                calendar.name
            )),
            Err(error) => Err(ToolError::failed(tool, error)),
        }
    }

    /// The event `arguments` name, checked to be in the version they name.
    async fn current(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<(String, Resource, EventData), ToolError> {
        let id = text(arguments, "id")
            .map_err(|message| ToolError::invalid(tool, message))?
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                ToolError::invalid(
                    tool,
                    "`id` must name the event as search_calendar_events shows it",
                )
            })?;
        let version = text(arguments, "version")
            .map_err(|message| ToolError::invalid(tool, message))?
            .filter(|version| !version.is_empty())
            .ok_or_else(|| {
                ToolError::invalid(
                    tool,
                    "`version` must be the event's version as search_calendar_events shows it",
                )
            })?;
        let (calendar, resource) =
            self.calendars
                .event(id)
                .await
                .map_err(|problem| match problem {
                    CalendarProblem::UnknownEvent { .. } => ToolError::invalid(tool, problem),
                    other => ToolError::failed(tool, other),
                })?;
        if resource.etag.as_deref().map(etag_from) != Some(etag_from(version)) {
            return Err(ToolError::failed(
                tool,
                CalDavError::Changed.to_string() + "; search again to see it as it is now",
            ));
        }
        let event = read_events_off_thread(resource.text.clone())
            .await
            .map_err(|reason| {
                ToolError::failed(tool, format!("the event cannot be read: {reason}"))
            })?
            .into_iter()
            .find(|event| event.recurrence_id.is_none())
            .ok_or_else(|| ToolError::failed(tool, "the calendar object holds no event"))?;
        Ok((calendar.name, resource, event))
    }

    async fn modify(&self, arguments: &Value, zone: ZoneName) -> Result<String, ToolError> {
        let tool = MODIFY_CALENDAR_EVENT;
        self.writable(tool)?;
        let now = crate::clock::now();
        let (calendar, resource, event) = self.current(tool, arguments).await?;
        let fields = event_fields(arguments, Some(&event), zone, now)
            .map_err(|message| ToolError::invalid(tool, message))?;
        let old_text = resource.text.clone();
        let fields_written = fields.clone();
        let text = off_the_actors_thread("writing the change", READ_TIME_LIMIT, move || {
            changed_event_text(&old_text, &fields_written, now)
        })
        .await
        .map_err(|error| ToolError::failed(tool, error))?
        .map_err(|reason| ToolError::failed(tool, reason))?;
        let client = self
            .calendars
            .client()
            .map_err(|problem| ToolError::failed(tool, problem))?;
        let etag = resource.etag.as_deref().map(etag_from).unwrap_or_default();
        let written = client.put(&resource.url, text, Some(&etag)).await;
        self.calendars.note(written.as_ref().err());
        written.map_err(|error| ToolError::failed(tool, error))?;
        Ok(format!(
            "Changed in {calendar}: {}.",
            say_event(&as_event(&event.uid, &fields), zone, now)
        ))
    }

    async fn delete(&self, arguments: &Value, zone: ZoneName) -> Result<String, ToolError> {
        let tool = DELETE_CALENDAR_EVENT;
        self.writable(tool)?;
        let now = crate::clock::now();
        let (calendar, resource, event) = self.current(tool, arguments).await?;
        let client = self
            .calendars
            .client()
            .map_err(|problem| ToolError::failed(tool, problem))?;
        let etag = resource.etag.as_deref().map(etag_from).unwrap_or_default();
        let deleted = client.delete(&resource.url, &etag).await;
        self.calendars.note(deleted.as_ref().err());
        deleted.map_err(|error| ToolError::failed(tool, error))?;
        Ok(format!(
            "Deleted from {calendar}: {}.",
            say_event(&event, zone, now)
        ))
    }

    /// What a write would do, for the member's confirmation.
    async fn describe(&self, name: &str, arguments: &Value, zone: ZoneName) -> Option<String> {
        let now = crate::clock::now();
        match name {
            ADD_CALENDAR_EVENT => {
                let fields = event_fields(arguments, None, zone, now).ok()?;
                let calendar_name = text(arguments, "calendar").ok()?;
                let calendar = self.calendars.target(calendar_name).await.ok()?;
                Some(format!(
                    "Add to {}:\n{}",
                    calendar.name,
                    say_event(&as_event("", &fields), zone, now)
                ))
            }
            MODIFY_CALENDAR_EVENT | DELETE_CALENDAR_EVENT => {
                let (calendar, _, event) = match self.current(name, arguments).await {
                    Ok(found) => found,
                    Err(error) => {
                        return Some(format!(
                            "{name} {}\n(It cannot run as asked: {}.)",
                            arguments.get("id").cloned().unwrap_or_default(),
                            tool_error_text(&error)
                        ));
                    }
                };
                let before = say_event(&event, zone, now);
                if name == DELETE_CALENDAR_EVENT {
                    return Some(format!("Delete from {calendar}:\n{before}"));
                }
                let after = match event_fields(arguments, Some(&event), zone, now) {
                    Ok(fields) => say_event(&as_event(&event.uid, &fields), zone, now),
                    Err(message) => format!("(not possible: {message})"),
                };
                Some(format!(
                    "Change in {calendar}:\nNow: {before}\nAfter: {after}"
                ))
            }
            _ => None,
        }
    }
}

/// What a tool's error says, without the tool's name: the words a member reads.
pub fn tool_error_text(error: &ToolError) -> String {
    match error {
        ToolError::Failed { message, .. } | ToolError::InvalidArguments { message, .. } => {
            message.clone()
        }
        other => other.to_string(),
    }
}

/// Whether a write failed because the event changed elsewhere since it was shown.
pub fn is_changed_elsewhere(error: &ToolError) -> bool {
    matches!(error, ToolError::Failed { message, .. }
        if message.starts_with(&CalDavError::Changed.to_string()))
}

/// One search hit with what a write needs to name it.
fn line_of(found: &Found, zone: ZoneName, now: DateTime<Utc>) -> String {
    let mut line = format!(
        "{} [{}]",
        say_occurrence(&found.occurrence, zone, now),
        found.calendar
    );
    if let Some((url, Some(etag))) = &found.resource {
        line.push_str(&format!(
            " (id: {}, version: {})",
            url.path(),
            shown_version(etag)
        ));
    }
    line
}

fn timing_properties() -> serde_json::Map<String, Value> {
    let mut properties = serde_json::Map::new();
    properties.insert("date".into(), json!({"type": "string", "description": "The member's local day: YYYY-MM-DD, today, tomorrow or a weekday such as thursday."}));
    properties.insert("time".into(), json!({"type": "string", "description": "Local start time, HH:MM on the 24-hour clock (3pm is 15:00). Leave out for an all-day event."}));
    properties.insert("end_time".into(), json!({"type": "string", "description": "Optional local end time, HH:MM. Give this or duration; default one hour."}));
    properties.insert("duration".into(), json!({"type": "string", "description": "Optional ISO 8601 duration such as PT90M or PT2H."}));
    properties.insert(
        "all_day".into(),
        json!({"type": "boolean", "description": "Optional: true for an all-day event."}),
    );
    properties.insert("end_date".into(), json!({"type": "string", "description": "Optional last day of an all-day event spanning several days, YYYY-MM-DD."}));
    properties.insert("recurrence".into(), json!({"type": "string", "description": "Optional: daily, weekdays, weekly on thu, monthly on 15, or an RRULE such as FREQ=WEEKLY;BYDAY=TH. none removes it."}));
    properties.insert(
        "location".into(),
        json!({"type": "string", "description": "Optional place."}),
    );
    properties.insert(
        "description".into(),
        json!({"type": "string", "description": "Optional notes on the event; empty removes them."}),
    );
    properties
}

fn spec(
    name: &str,
    description: &str,
    properties: serde_json::Map<String, Value>,
    required: &[&str],
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
    }
}

#[async_trait]
impl ToolsProvider for CalendarToolset {
    async fn tools(&self) -> Vec<ToolSpec> {
        let mut search = serde_json::Map::new();
        search.insert("from".into(), json!({"type": "string", "description": "First local day: YYYY-MM-DD, today, tomorrow or a weekday. Default today."}));
        search.insert("to".into(), json!({"type": "string", "description": "Last local day, included. Default a week from `from` (a year when searching words)."}));
        search.insert("words".into(), json!({"type": "string", "description": "Optional words the event's title or place must contain."}));
        let mut add = timing_properties();
        add.insert(
            "title".into(),
            json!({"type": "string", "description": "What the event is."}),
        );
        add.insert(
            "calendar".into(),
            json!({"type": "string", "description": "Optional calendar name; default the first."}),
        );
        let mut modify = timing_properties();
        modify.insert("id".into(), json!({"type": "string", "description": "The event's id as search_calendar_events shows it."}));
        modify.insert("version".into(), json!({"type": "string", "description": "The event's version as search_calendar_events shows it."}));
        modify.insert(
            "title".into(),
            json!({"type": "string", "description": "Optional new title."}),
        );
        let mut delete = serde_json::Map::new();
        delete.insert("id".into(), modify["id"].clone());
        delete.insert("version".into(), modify["version"].clone());
        vec![
            spec(
                SEARCH_CALENDAR_EVENTS,
                "List the family's calendar events in a range of days (recurring ones expanded), in the member's time zone. Give local days; never compute dates.",
                search,
                &[],
            ),
            spec(
                ADD_CALENDAR_EVENT,
                "Add an event to the calendar at a local date and time (or all day), optionally repeating. Give the member's words for the day; never compute dates.",
                add,
                &["title", "date"],
            ),
            spec(
                MODIFY_CALENDAR_EVENT,
                "Change an event (every occurrence of a repeating one): give only what changes. Search first for its id and version.",
                modify,
                &["id", "version"],
            ),
            spec(
                DELETE_CALENDAR_EVENT,
                "Delete an event (every occurrence of a repeating one). Search first for its id and version.",
                delete,
                &["id", "version"],
            ),
        ]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let zone = self.zone_of(context);
        match name {
            SEARCH_CALENDAR_EVENTS => self.search(arguments, zone).await,
            ADD_CALENDAR_EVENT => self.add(arguments, context, zone).await,
            MODIFY_CALENDAR_EVENT => self.modify(arguments, zone).await,
            DELETE_CALENDAR_EVENT => self.delete(arguments, zone).await,
            other => Err(ToolError::UnknownTool(other.to_owned())),
        }
    }

    async fn render_call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Option<String> {
        self.describe(name, arguments, self.zone_of(context)).await
    }
}
