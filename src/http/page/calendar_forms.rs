//! What the calendar page's forms are made of and who may post them: the calendars of the
//! profile the member's web conversation speaks to (the default profile: a web message has
//! no slash command), a form's fields read into the calendar tools' own arguments (so the
//! tools' `timing.rs` reads them, nothing else), an argument's name in an error said as
//! the form's field, and whether the profile and the member's role let a write through.
//!
//! Posting a form is the member's own explicit act, so it stands for the confirmation a
//! chat asks (`confirm_tools`); but a tool the profile does not enable, or a call the
//! intents policy would deny or send to a parent for the member's role, is refused here too.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{NaiveDate, NaiveTime, TimeDelta};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::calendar::{CalendarToolset, EventData, EventTime, ProfileCalendars, wall_clock};
use crate::config::{Engine, FamilyMember, LoadedConfig};
use crate::intents::{
    IntentContext, IntentsRegistry, PolicyDecision, PolicyEngine, PolicyRequest, RulePolicyEngine,
};
use crate::local_time::ZoneName;

/// The calendars the page shows and writes, and the rules of the profile they belong to.
pub struct WebCalendar {
    pub profile_id: String,
    /// `None`: the profile has no `calendar_config`.
    pub calendars: Option<Arc<ProfileCalendars>>,
    /// The tools' own code, over the same calendars.
    pub toolset: Option<Arc<CalendarToolset>>,
    /// The calendar tools the profile's `enable_local_tools` names.
    pub enabled: Vec<String>,
    /// The profile's intents and policy, when it runs the intents engine.
    pub intents: Option<Arc<IntentsRegistry>>,
    pub profile_zone: ZoneName,
}

impl WebCalendar {
    /// The page's calendars: those of the default profile (where a web message goes).
    pub fn of_default_profile(
        loaded: &LoadedConfig,
        calendars: Option<Arc<ProfileCalendars>>,
        toolset: Option<Arc<CalendarToolset>>,
        intents: Option<Arc<IntentsRegistry>>,
    ) -> WebCalendar {
        let profile = loaded.profile(&loaded.default_profile_id);
        WebCalendar {
            profile_id: loaded.default_profile_id.clone(),
            calendars,
            toolset,
            enabled: profile
                .map(|profile| {
                    profile
                        .tools
                        .enable_local_tools
                        .iter()
                        .filter(|tool| {
                            crate::calendar::CALENDAR_TOOL_NAMES.contains(&tool.as_str())
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default(),
            intents: profile
                .filter(|profile| profile.processing.engine == Engine::Intents)
                .and(intents),
            profile_zone: profile
                .map(|profile| ZoneName::from(profile.processing.timezone))
                .unwrap_or_else(|| chrono_tz::UTC.into()),
        }
    }

    /// Whether `member` may use `tool` from the page; else why not, in words.
    pub fn may(&self, tool: &str, member: &FamilyMember) -> Result<(), String> {
        if !self.enabled.iter().any(|enabled| enabled == tool) || self.toolset.is_none() {
            return Err(format!(
                "the profile {} does not enable {tool} (tools_config.enable_local_tools), so the calendar cannot be changed here",
                self.profile_id
            ));
        }
        let Some(registry) = &self.intents else {
            return Ok(());
        };
        let context = IntentContext {
            channel: crate::ids::HTTP_CHANNEL,
            member_id: &member.id,
            role: member.role,
        };
        let intents: Vec<_> = registry
            .eligible(&context)
            .into_iter()
            .filter(|intent| intent.tool == tool)
            .collect();
        if intents.is_empty() {
            return Err(format!(
                "no intent of the profile {} lets you use {tool}",
                self.profile_id
            ));
        }
        // Without the form's values read into the intent's types, a rule bounding a value
        // holds when it denies or escalates: the page never permits more than the chat.
        let policy = RulePolicyEngine::new(registry.policy.clone());
        let params = BTreeMap::new();
        let local_time = crate::clock::now()
            .with_timezone(&self.profile_zone.tz())
            .time();
        let mut refusal = String::new();
        for intent in intents {
            let request = PolicyRequest {
                intent_id: &intent.id,
                role: member.role,
                params: &params,
                local_time,
            };
            match policy.validate(&request) {
                PolicyDecision::Allow => return Ok(()),
                PolicyDecision::Deny { message } => refusal = message,
                PolicyDecision::Escalate { message } => {
                    refusal = format!(
                        "{message}: a parent has to approve it, so ask for it in the chat, where a parent is asked"
                    );
                }
            }
        }
        Err(refusal)
    }
}

/// An event's form as posted: the tools' argument names, so an error names the field.
#[derive(Debug, Default, Deserialize)]
pub struct EventForm {
    #[serde(default)]
    pub csrf: String,
    #[serde(default)]
    pub nonce: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub time: String,
    #[serde(default)]
    pub end_time: String,
    #[serde(default)]
    pub end_date: String,
    /// A checkbox: present (`on`) when ticked.
    #[serde(default)]
    pub all_day: Option<String>,
    #[serde(default)]
    pub location: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub calendar: String,
}

/// The labels of the form's fields, by the argument each one is.
const LABELS: [(&str, &str); 8] = [
    ("title", "Title"),
    ("date", "Day"),
    ("time", "Start time"),
    ("end_time", "End time"),
    ("end_date", "End day"),
    ("location", "Location"),
    ("description", "Description"),
    ("calendar", "Calendar"),
];

impl EventForm {
    /// The form as a calendar tool's arguments (`calendar` for a new event only).
    pub fn arguments(&self, new: bool) -> Value {
        let mut arguments = Map::new();
        let mut put = |name: &str, value: &str| {
            arguments.insert(name.into(), Value::String(value.trim().to_owned()));
        };
        put("title", &self.title);
        put("date", &self.date);
        put("time", &self.time);
        put("end_time", &self.end_time);
        put("location", &self.location);
        put("description", &self.description);
        // A form's end is on the start's day unless another is given: an end time before
        // the start is a mistake to tell, not an event past midnight.
        let end_date = match (self.end_date.trim(), self.end_time.trim()) {
            ("", "") => "",
            ("", _) => self.date.trim(),
            (given, _) => given,
        };
        put("end_date", end_date);
        if new {
            put("calendar", &self.calendar);
        } else {
            put("id", &self.id);
            put("version", &self.version);
        }
        arguments.insert("all_day".into(), Value::Bool(self.all_day.is_some()));
        Value::Object(arguments)
    }

    /// The form filled with `event` as the member reads it in `zone`.
    pub fn of_event(event: &EventData, zone: ZoneName) -> EventForm {
        let day = |date: NaiveDate| date.format("%Y-%m-%d").to_string();
        let clock = |time: NaiveTime| time.format("%H:%M").to_string();
        let mut form = EventForm {
            title: event.summary.clone(),
            location: event.location.clone().unwrap_or_default(),
            description: event.description.clone().unwrap_or_default(),
            ..EventForm::default()
        };
        match (&event.start, &event.end) {
            (EventTime::Date(first), end) => {
                let last = match end {
                    EventTime::Date(end) => *end - TimeDelta::days(1),
                    _ => *first,
                };
                form.date = day(*first);
                form.all_day = Some("on".into());
                if last > *first {
                    form.end_date = day(last);
                }
            }
            (start, end) => {
                let start = wall_clock(start.instant(zone), zone);
                let end = wall_clock(end.instant(zone), zone);
                form.date = day(start.date());
                form.time = clock(start.time());
                form.end_time = clock(end.time());
                if end.date() != start.date() {
                    form.end_date = day(end.date());
                }
            }
        }
        form
    }
}

/// A tool's message with each argument it names said as the form's field.
pub fn said_for_form(message: &str) -> String {
    let mut said = message.to_owned();
    for (argument, label) in LABELS {
        said = said.replace(&format!("`{argument}`"), &format!("“{label}”"));
    }
    if said.starts_with("the end ") {
        said = format!("“End time”: {said}");
    }
    super::layout::upper_first(&said)
}

/// The event's fields, filled with `form`; `calendars` offered for a new event.
pub fn event_fields(form: &EventForm, calendars: &[String]) -> Markup {
    let all_day = form.all_day.is_some();
    html! {
        div.field {
            label for="title" { "Title" }
            input id="title" name="title" value=(form.title) required maxlength="200";
        }
        div.field {
            label for="date" { "Day (YYYY-MM-DD, today, tomorrow or a weekday)" }
            input id="date" name="date" value=(form.date) required maxlength="40";
        }
        div.field {
            input id="all_day" type="checkbox" name="all_day" checked[all_day];
            label for="all_day" { "All day" }
        }
        div.field {
            label for="time" { "Start time (HH:MM)" }
            input id="time" name="time" value=(form.time) maxlength="10" placeholder="17:00";
        }
        div.field {
            label for="end_time" { "End time (HH:MM; an hour when empty)" }
            input id="end_time" name="end_time" value=(form.end_time) maxlength="10" placeholder="18:00";
        }
        div.field {
            label for="end_date" { "End day (optional: an event past midnight, or the last day of an all-day one)" }
            input id="end_date" name="end_date" value=(form.end_date) maxlength="40";
        }
        div.field {
            label for="location" { "Location (optional)" }
            input id="location" name="location" value=(form.location) maxlength="200";
        }
        div.field {
            label for="description" { "Description (optional)" }
            textarea id="description" name="description" maxlength="2000" rows="3" { (form.description) }
        }
        @if !calendars.is_empty() {
            div.field {
                label for="calendar" { "Calendar" }
                select id="calendar" name="calendar" {
                    @for name in calendars {
                        option value=(name) selected[*name == form.calendar] { (name) }
                    }
                }
            }
        }
    }
}
