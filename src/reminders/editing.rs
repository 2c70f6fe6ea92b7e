//! A reminder added or edited from a form (the web page) instead of a tool call, through
//! the tool's own code: the form's fields become `schedule_reminder`'s arguments, read and
//! checked by the same functions (`text`, `date`, `time`, `recurrence`, `for_member`), the
//! schedule stored by the same `store_planned` under a once-key, so a form posted twice
//! stores one reminder. An edit changes the words and the time of a reminder the member may
//! see (`listing::may_see`: their own, those they set; a parent the family's), only while
//! it is still next due when the form was opened (`Schedules::edit`): one that went off or
//! was cancelled meanwhile is told, not changed.

use serde_json::{Map, Value};

use super::listing::may_see;
use super::messages::SchedulesChanged;
use super::tools::{RemindersToolset, SCHEDULE_REMINDER, checked_text, text_argument};
use crate::config::FamilyMember;
use crate::ids::ConversationKey;
use crate::local_time::ZoneName;
use crate::ports::{Schedule, ScheduleEdit, ScheduleKind, ScheduleStatus, StorageError};
use crate::tools::{ToolContext, ToolError};

/// What a reminder form holds, as typed: each a `schedule_reminder` argument of that name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReminderFields {
    pub text: String,
    /// The member's local day, `YYYY-MM-DD` (or what the tool takes: `tomorrow`, `monday`).
    pub date: String,
    /// `HH:MM` on the 24-hour clock.
    pub time: String,
    /// Empty for once; else as the tool takes it (`daily`, `weekly on mon,thu`, an RRULE).
    pub recurrence: String,
    /// Empty for oneself; else a member's id or name (a parent only).
    pub for_member: String,
}

impl ReminderFields {
    /// The tool's arguments: the fields filled in.
    fn arguments(&self) -> Value {
        let mut arguments = Map::new();
        for (name, value) in [
            ("text", &self.text),
            ("date", &self.date),
            ("time", &self.time),
            ("recurrence", &self.recurrence),
            ("for_member", &self.for_member),
        ] {
            if !value.trim().is_empty() {
                arguments.insert(name.into(), Value::String(value.clone()));
            }
        }
        Value::Object(arguments)
    }
}

/// Why a form's reminder was not stored or changed; nothing was.
#[derive(Debug, thiserror::Error)]
pub enum FormError {
    /// What the member typed, refused by the tool's rules: the message names the field.
    #[error("{0}")]
    Invalid(String),
    /// Unknown, not a reminder, or not the member's to see: as if it did not exist.
    #[error("no reminder #{0} of yours")]
    NotVisible(i64),
    /// It went off, moved, ended or was cancelled after the form was opened.
    #[error(
        "reminder #{0} went off or changed after this form was opened, so nothing was changed; \
         its list shows it as it is now"
    )]
    Changed(i64),
    #[error("{0}")]
    Failed(String),
}

impl From<ToolError> for FormError {
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::InvalidArguments { message, .. } => FormError::Invalid(message),
            other => FormError::Failed(other.to_string()),
        }
    }
}

impl From<StorageError> for FormError {
    fn from(error: StorageError) -> Self {
        FormError::Failed(error.to_string())
    }
}

impl RemindersToolset {
    /// `schedule_reminder` as `member_id` asks it from a form in `asked_in`, stored once
    /// per `once_key` (the form's one-time nonce): what the tool answers.
    pub async fn add_from_form(
        &self,
        member: &FamilyMember,
        asked_in: &ConversationKey,
        fields: &ReminderFields,
        once_key: String,
    ) -> Result<String, FormError> {
        let context = ToolContext {
            member_id: member.id.clone(),
            conversation_key: asked_in.clone(),
            profile_id: String::new(),
            question_timeout: std::time::Duration::ZERO,
            idempotency_key: Some(once_key),
        };
        Ok(self
            .schedule_reminder(&fields.arguments(), &context)
            .await?)
    }

    /// The reminder `id` if `member` may edit it: one they may see, a reminder (not a task),
    /// still active.
    pub async fn editable(&self, member: &FamilyMember, id: i64) -> Result<Schedule, FormError> {
        match self.parts.schedules.schedule(id).await? {
            Some(schedule)
                if schedule.kind == ScheduleKind::Reminder && may_see(member, &schedule) =>
            {
                if schedule.status == ScheduleStatus::Active && schedule.next_due_ms.is_some() {
                    Ok(schedule)
                } else {
                    Err(FormError::Changed(id))
                }
            }
            _ => Err(FormError::NotVisible(id)),
        }
    }

    /// Change reminder `id`'s words and time to `fields` (its `for_member` is ignored: a
    /// reminder stays whose it is), based on the occurrence `seen_next_due_ms` the form
    /// showed; what was stored, said as the tool says it.
    pub async fn edit_from_form(
        &self,
        member: &FamilyMember,
        id: i64,
        seen_next_due_ms: i64,
        fields: &ReminderFields,
    ) -> Result<String, FormError> {
        let tool = SCHEDULE_REMINDER;
        let schedule = self.editable(member, id).await?;
        let arguments = fields.arguments();
        let text = checked_text(tool, "text", text_argument(tool, &arguments, "text")?)?;
        // Its times stay in the zone it was set in.
        let zone = ZoneName::parse(&schedule.zone).unwrap_or_else(|_| {
            self.parts
                .family
                .member(schedule.member_id.as_str())
                .map_or_else(|| self.zone_of(member), |whose| self.zone_of(&whose))
        });
        let now = self.now();
        let timing = self.planned(tool, &arguments, zone, now)?;
        let (recurrence, start_local) = timing.stored_recurrence();
        let edited = self
            .parts
            .schedules
            .edit(&ScheduleEdit {
                id,
                seen_next_due_ms,
                text: text.to_string(),
                recurrence,
                start_local,
                next_due_ms: timing.first.timestamp_millis(),
            })
            .await?
            .ok_or(FormError::Changed(id))?;
        self.parts.changes.do_send(SchedulesChanged {
            schedule_id: edited.id,
            next_due_ms: edited.next_due_ms,
        });
        tracing::info!(schedule = id, member = %member.id, "reminder edited");
        Ok(format!(
            "Reminder #{} changed: “{}”, {}.",
            edited.id,
            edited.text,
            timing.in_words(now)
        ))
    }
}
