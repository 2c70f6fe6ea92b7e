//! The reminder tools a profile may enable: `schedule_reminder`, `list_reminders`,
//! `cancel_reminder`, `snooze_reminder` and `schedule_task`. They take local dates and
//! times, ISO 8601 delays and recurrences in the member's own zone (the model never does
//! date arithmetic), store what was asked once per tool call (the turn journal's key), and
//! say back what was stored in the member's words and zone, so a wrong guess shows at once.
//! A member lists and cancels only their own and those they set; a parent the family's
//! (`listing.rs`, whose rules the channels' `/reminders` shares).

use std::collections::BTreeSet;
use std::sync::Arc;

use actix::Recipient;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::listing::{self, ListingError};
use super::messages::{ReminderChoice, SchedulesChanged, SettleReminder};
use super::places::{delivery_place, target};
use super::texts::MAX_TEXT_CHARS;
use super::when::{Timing, WhenArguments};
use crate::config::{FamilyMember, RemindersConfig};
use crate::family::{Family, OwnChats};
use crate::ids::ConversationKey;
use crate::llm::ToolSpec;
use crate::local_time::{IsoDuration, ZoneName};
use crate::ports::{NewSchedule, Schedule, ScheduleKind, Schedules};
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub const SCHEDULE_REMINDER: &str = "schedule_reminder";
pub const LIST_REMINDERS: &str = "list_reminders";
pub const CANCEL_REMINDER: &str = "cancel_reminder";
pub const SNOOZE_REMINDER: &str = "snooze_reminder";
pub const SCHEDULE_TASK: &str = "schedule_task";

/// Every reminder tool, as `enable_local_tools` names them.
pub const REMINDER_TOOL_NAMES: &[&str] = &[
    SCHEDULE_REMINDER,
    LIST_REMINDERS,
    CANCEL_REMINDER,
    SNOOZE_REMINDER,
    SCHEDULE_TASK,
];

/// What every profile's reminder tools share.
#[derive(Clone)]
pub struct RemindersParts {
    pub schedules: Arc<dyn Schedules>,
    pub family: Arc<Family>,
    pub own_chats: Arc<OwnChats>,
    pub settings: RemindersConfig,
    /// The channels that deliver by themselves (Telegram, Matrix).
    pub push_channels: Vec<String>,
    /// Every profile a task may run on.
    pub profiles: BTreeSet<String>,
    /// The scheduler: told of new schedules, and asked to settle a snoozed one.
    pub changes: Recipient<SchedulesChanged>,
    pub settle: Recipient<SettleReminder>,
}

/// What a reminder or task call asks to store.
struct Planned<'a> {
    kind: ScheduleKind,
    /// Whom it is for, and who set it.
    member: &'a FamilyMember,
    set_by: &'a FamilyMember,
    text: &'a str,
    /// A task's profile.
    profile_id: Option<&'a str>,
    escalate_after_minutes: Option<u32>,
}

/// One profile's reminder tools: members without a zone of their own are in the profile's.
pub struct RemindersToolset {
    pub(super) parts: RemindersParts,
    profile_zone: ZoneName,
}

pub(super) fn text_argument<'a>(
    tool: &str,
    arguments: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolError> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        Some(other) => Err(ToolError::InvalidArguments {
            tool: tool.to_string(),
            message: format!("`{name}` must be a string, got {other}"),
        }),
    }
}

/// A schedule's number as the model gives it: `12`, `"12"` or `"#12"`.
fn schedule_number(tool: &str, arguments: &Value) -> Result<i64, ToolError> {
    let number = match arguments.get("id") {
        Some(Value::Number(number)) => number.as_i64(),
        Some(Value::String(text)) => text.trim().trim_start_matches('#').parse().ok(),
        _ => None,
    };
    number.ok_or_else(|| {
        ToolError::invalid(
            tool,
            "`id` must be a reminder's number as list_reminders shows it, e.g. 12",
        )
    })
}

pub(super) fn checked_text<'a>(
    tool: &str,
    name: &str,
    text: Option<&'a str>,
) -> Result<&'a str, ToolError> {
    let text = text.map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Err(ToolError::invalid(
            tool,
            format!("`{name}` must say what it is about"),
        ));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(ToolError::invalid(
            tool,
            format!("`{name}` is longer than {MAX_TEXT_CHARS} characters; say it shorter"),
        ));
    }
    Ok(text)
}

fn when_spec() -> serde_json::Map<String, Value> {
    let mut properties = serde_json::Map::new();
    properties.insert("delay".into(), json!({"type": "string", "description": "How long from now, as an ISO 8601 duration: PT90S, PT20M, PT2H, P1D, P1W. Give this or time."}));
    properties.insert("date".into(), json!({"type": "string", "description": "The member's local day: YYYY-MM-DD, today, tomorrow or a weekday such as monday. Optional with time; leave out for the next time the clock shows it."}));
    properties.insert("time".into(), json!({"type": "string", "description": "The member's local time of day, HH:MM on the 24-hour clock (6pm is 18:00). Give this or delay."}));
    properties.insert("recurrence".into(), json!({"type": "string", "description": "Optional: daily, weekdays, weekly on mon,thu, monthly on 15, or an RFC 5545 RRULE such as FREQ=WEEKLY;BYDAY=MO."}));
    properties
}

impl RemindersToolset {
    pub fn new(parts: RemindersParts, profile_zone: ZoneName) -> Self {
        RemindersToolset {
            parts,
            profile_zone,
        }
    }

    pub(super) fn now(&self) -> DateTime<Utc> {
        crate::clock::now()
    }

    /// The member's own zone, else the profile's.
    pub(super) fn zone_of(&self, member: &FamilyMember) -> ZoneName {
        member
            .timezone
            .as_deref()
            .and_then(|zone| ZoneName::parse(zone).ok())
            .unwrap_or(self.profile_zone)
    }

    fn asking(&self, tool: &str, context: &ToolContext) -> Result<FamilyMember, ToolError> {
        self.parts
            .family
            .member(context.member_id.as_str())
            .ok_or_else(|| ToolError::Failed {
                tool: tool.to_string(),
                message: format!("{} is not a family member", context.member_id),
            })
    }

    /// The chat the call came from (a delegated turn's is its parent's).
    fn asked_in(context: &ToolContext) -> &ConversationKey {
        context.conversation_key.root()
    }

    async fn store(&self, tool: &str, schedule: NewSchedule) -> Result<Schedule, ToolError> {
        let count = self
            .parts
            .schedules
            .count_active_for(&schedule.member_id)
            .await
            .map_err(|error| ToolError::failed(tool, error))?;
        if count >= self.parts.settings.max_per_member {
            return Err(ToolError::invalid(
                tool,
                format!(
                    "{} has {count} reminders and tasks already, the most one member may have; cancel some first",
                    schedule.member_id
                ),
            ));
        }
        let stored = self
            .parts
            .schedules
            .add(&schedule)
            .await
            .map_err(|error| ToolError::failed(tool, error))?;
        self.parts.changes.do_send(SchedulesChanged {
            schedule_id: stored.id,
            next_due_ms: stored.next_due_ms,
        });
        Ok(stored)
    }

    pub(super) fn planned(
        &self,
        tool: &str,
        arguments: &Value,
        zone: ZoneName,
        now: DateTime<Utc>,
    ) -> Result<Timing, ToolError> {
        let when = WhenArguments {
            delay: text_argument(tool, arguments, "delay")?,
            date: text_argument(tool, arguments, "date")?,
            time: text_argument(tool, arguments, "time")?,
            recurrence: text_argument(tool, arguments, "recurrence")?,
        };
        Timing::plan(when, zone, now).map_err(|error| ToolError::invalid(tool, error))
    }

    /// When `planned` fires (from the call's delay or local time, in its member's zone),
    /// where it goes, and stored once per tool call: the schedule, its timing, its place and
    /// the time it was planned at.
    async fn store_planned(
        &self,
        tool: &str,
        arguments: &Value,
        context: &ToolContext,
        planned: Planned<'_>,
    ) -> Result<(Schedule, Timing, ConversationKey, DateTime<Utc>), ToolError> {
        let now = self.now();
        let zone = self.zone_of(planned.member);
        let timing = self.planned(tool, arguments, zone, now)?;
        let place = delivery_place(
            &self.parts.own_chats,
            &self.parts.push_channels,
            &planned.member.id,
            planned.member.id == planned.set_by.id,
            Self::asked_in(context),
        )
        .map_err(|error| ToolError::invalid(tool, error))?;
        let (recurrence, start_local) = timing.stored_recurrence();
        let stored = self
            .store(
                tool,
                NewSchedule {
                    kind: planned.kind,
                    member_id: planned.member.id.clone(),
                    set_by: planned.set_by.id.clone(),
                    text: planned.text.to_string(),
                    profile_id: planned.profile_id.map(str::to_string),
                    conversation: place.clone(),
                    zone: zone.name().to_string(),
                    recurrence,
                    start_local,
                    first_due_ms: timing.first.timestamp_millis(),
                    escalate_after_minutes: planned.escalate_after_minutes,
                    snoozed_from: None,
                    once_key: context.idempotency_key.clone(),
                },
            )
            .await?;
        Ok((stored, timing, place, now))
    }

    pub(super) async fn schedule_reminder(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let tool = SCHEDULE_REMINDER;
        let asking = self.asking(tool, context)?;
        let text = checked_text(tool, "text", text_argument(tool, arguments, "text")?)?;
        let target = target(
            &self.parts.family,
            &asking,
            text_argument(tool, arguments, "for_member")?,
        )
        .map_err(|error| ToolError::invalid(tool, error))?;
        let escalate_after_minutes = match arguments.get("escalate_after_minutes") {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_u64() {
                Some(minutes) if (1..=1440).contains(&minutes) => Some(minutes as u32),
                _ => {
                    return Err(ToolError::invalid(
                        tool,
                        format!("`escalate_after_minutes` must be 1 to 1440, got {value}"),
                    ));
                }
            },
        };
        let for_oneself = target.id == asking.id;
        let (stored, timing, place, now) = self
            .store_planned(
                tool,
                arguments,
                context,
                Planned {
                    kind: ScheduleKind::Reminder,
                    member: &target,
                    set_by: &asking,
                    text,
                    profile_id: None,
                    escalate_after_minutes,
                },
            )
            .await?;
        let whom = if for_oneself {
            "you".to_string()
        } else {
            self.parts.family.display_name(&target.id)
        };
        let mut answer = format!(
            "Reminder #{} set for {whom}: “{}”, {}.",
            stored.id,
            stored.text,
            timing.in_words(now)
        );
        if !for_oneself {
            answer.push_str(&format!(
                " It goes to {whom}'s own chat on {}, saying you set it.",
                place.channel()
            ));
        }
        if let Some(minutes) = escalate_after_minutes {
            answer.push_str(&format!(
                " If it is not marked done within {minutes} min, the parents are told."
            ));
        }
        Ok(answer)
    }

    async fn schedule_task(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let tool = SCHEDULE_TASK;
        let asking = self.asking(tool, context)?;
        let prompt = checked_text(tool, "prompt", text_argument(tool, arguments, "prompt")?)?;
        let profile = text_argument(tool, arguments, "profile")?
            .map(str::trim)
            .filter(|profile| !profile.is_empty())
            .unwrap_or(&context.profile_id);
        if !self.parts.profiles.contains(profile) {
            let known: Vec<&str> = self.parts.profiles.iter().map(String::as_str).collect();
            return Err(ToolError::invalid(
                tool,
                format!("no profile {profile:?}: name one of {}", known.join(", ")),
            ));
        }
        let (stored, timing, _, now) = self
            .store_planned(
                tool,
                arguments,
                context,
                Planned {
                    kind: ScheduleKind::Task,
                    member: &asking,
                    set_by: &asking,
                    text: prompt,
                    profile_id: Some(profile),
                    escalate_after_minutes: None,
                },
            )
            .await?;
        Ok(format!(
            "Task #{} set: “{}” runs on {profile}, {}. Its answer comes here.",
            stored.id,
            stored.text,
            timing.in_words(now)
        ))
    }

    async fn list_reminders(&self, context: &ToolContext) -> Result<String, ToolError> {
        let tool = LIST_REMINDERS;
        let member = self.asking(tool, context)?;
        let listed = listing::list(
            self.parts.schedules.as_ref(),
            &self.parts.family,
            &member,
            self.now(),
        )
        .await
        .map_err(|error| ToolError::failed(tool, error))?;
        Ok(listed.text())
    }

    async fn cancel_reminder(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let tool = CANCEL_REMINDER;
        let member = self.asking(tool, context)?;
        let id = schedule_number(tool, arguments)?;
        match listing::cancel(self.parts.schedules.as_ref(), &member, id).await {
            Ok(schedule) => {
                self.parts.changes.do_send(SchedulesChanged {
                    schedule_id: schedule.id,
                    next_due_ms: None,
                });
                Ok(listing::cancelled_text(&schedule))
            }
            Err(error @ ListingError::NotVisible(_)) => Err(ToolError::invalid(
                tool,
                format!("{error}; list_reminders shows the numbers"),
            )),
            Err(error @ ListingError::NotActive(_)) => Err(ToolError::invalid(tool, error)),
            Err(error) => Err(ToolError::failed(tool, error)),
        }
    }

    async fn snooze_reminder(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let tool = SNOOZE_REMINDER;
        let member = self.asking(tool, context)?;
        let id = schedule_number(tool, arguments)?;
        let delay = match text_argument(tool, arguments, "delay")? {
            None => None,
            Some(text) => {
                let delay =
                    IsoDuration::parse(text).map_err(|error| ToolError::invalid(tool, error))?;
                let length = delay.exact_length().ok_or_else(|| {
                    ToolError::invalid(
                        tool,
                        format!("snooze by hours or minutes (PT10M, PT2H), not {text}"),
                    )
                })?;
                Some(
                    length
                        .to_std()
                        .map_err(|error| ToolError::invalid(tool, error))?,
                )
            }
        };
        let open = self
            .parts
            .schedules
            .open_firings_of(&member.id)
            .await
            .map_err(|error| ToolError::failed(tool, error))?;
        let Some(firing) = open.into_iter().find(|firing| firing.id.schedule_id == id) else {
            return Err(ToolError::invalid(
                tool,
                format!(
                    "reminder #{id} has not gone off for you (or was answered already), so there is nothing to snooze"
                ),
            ));
        };
        let settled = self
            .parts
            .settle
            .send(SettleReminder {
                firing: firing.id,
                member_id: member.id.clone(),
                choice: ReminderChoice::Snooze(delay),
            })
            .await
            .map_err(|_| ToolError::failed(tool, "the scheduler is not running"))?
            .map_err(|error| ToolError::invalid(tool, error))?;
        Ok(settled.text)
    }
}

#[async_trait]
impl ToolsProvider for RemindersToolset {
    async fn tools(&self) -> Vec<ToolSpec> {
        let mut reminder = when_spec();
        reminder.insert(
            "text".into(),
            json!({"type": "string", "description": "What to remind of, in the member's words."}),
        );
        reminder.insert("for_member".into(), json!({"type": "string", "description": "Only when a parent sets it for another family member: their id or name. Leave out for the asking member."}));
        reminder.insert("escalate_after_minutes".into(), json!({"type": "integer", "description": "Optional: tell the parents when it is not marked done within this many minutes."}));
        let mut task = when_spec();
        task.insert("prompt".into(), json!({"type": "string", "description": "What to ask at each time, as the member would ask it (e.g. tell me today's weather)."}));
        task.insert("profile".into(), json!({"type": "string", "description": "Optional: the profile to ask; this one when left out."}));
        let id = json!({"type": "integer", "description": "The reminder's number, as list_reminders shows it."});
        vec![
            ToolSpec {
                name: SCHEDULE_REMINDER.into(),
                description: "Set a reminder. Give a delay or a local time (never compute dates yourself); hearth says back when it fires, in the member's time zone: repeat that to the member.".into(),
                parameters: json!({"type": "object", "properties": reminder, "required": ["text"]}),
            },
            ToolSpec {
                name: LIST_REMINDERS.into(),
                description: "List the member's reminders and scheduled tasks with their numbers and next times.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
            ToolSpec {
                name: CANCEL_REMINDER.into(),
                description: "Cancel a reminder or scheduled task by its number.".into(),
                parameters: json!({"type": "object", "properties": {"id": id}, "required": ["id"]}),
            },
            ToolSpec {
                name: SNOOZE_REMINDER.into(),
                description: "Snooze a reminder that went off, by its number.".into(),
                parameters: json!({"type": "object", "properties": {"id": id, "delay": {"type": "string", "description": "Optional: how long, e.g. PT10M or PT1H."}}, "required": ["id"]}),
            },
            ToolSpec {
                name: SCHEDULE_TASK.into(),
                description: "Run a request at a time or on a recurrence (e.g. every weekday at 07:00 tell me the weather); its answer is sent to the member like a reminder.".into(),
                parameters: json!({"type": "object", "properties": task, "required": ["prompt"]}),
            },
        ]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        match name {
            SCHEDULE_REMINDER => self.schedule_reminder(arguments, context).await,
            LIST_REMINDERS => self.list_reminders(context).await,
            CANCEL_REMINDER => self.cancel_reminder(arguments, context).await,
            SNOOZE_REMINDER => self.snooze_reminder(arguments, context).await,
            SCHEDULE_TASK => self.schedule_task(arguments, context).await,
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }
}
