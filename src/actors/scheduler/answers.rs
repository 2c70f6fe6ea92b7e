//! Done and Snooze: the member a fired reminder is for answers it (a button, a reaction, a
//! reply, the HTTP API, the `snooze_reminder` tool), once. Its prompt is closed where it
//! was shown, and a snooze stores a one-off schedule with the answer.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::SchedulerDeps;
use super::firing::{instant, message_to, zone_of};
use crate::ids::PromptId;
use crate::ports::{FiringState, NewSchedule, OutgoingKind, ScheduleKind, Settled, Settlement};
use crate::reminders::{
    DONE_OUTCOME, ReminderChoice, ReminderError, ReminderSettled, SettleReminder, snoozed_outcome,
};

/// Settle `answer` at `now`; the schedule a snooze stored, with what to tell the member.
pub(super) async fn settle(
    deps: &SchedulerDeps,
    answer: &SettleReminder,
    now: DateTime<Utc>,
) -> Result<
    (
        ReminderSettled,
        Vec<(i64, crate::ports::OutgoingMessage)>,
        Option<(i64, i64)>,
    ),
    ReminderError,
> {
    let not_yours = || ReminderError::NotYours(answer.firing);
    let schedule = deps
        .schedules
        .schedule(answer.firing.schedule_id)
        .await?
        .filter(|schedule| schedule.member_id == answer.member_id)
        .filter(|schedule| schedule.kind == ScheduleKind::Reminder)
        .ok_or_else(not_yours)?;
    deps.schedules
        .firing(answer.firing)
        .await?
        .ok_or_else(not_yours)?;
    let zone = zone_of(&schedule);
    let (state, outcome, snooze) = match answer.choice {
        ReminderChoice::Done => (FiringState::Done, DONE_OUTCOME.to_string(), None),
        ReminderChoice::Snooze(delay) => {
            let delay = delay.unwrap_or(Duration::from_secs(deps.settings.snooze_minutes * 60));
            let until = now + chrono::TimeDelta::from_std(delay).unwrap_or_default();
            let snooze = NewSchedule {
                kind: ScheduleKind::Reminder,
                member_id: schedule.member_id.clone(),
                set_by: schedule.set_by.clone(),
                text: schedule.text.clone(),
                profile_id: None,
                conversation: schedule.conversation.clone(),
                zone: schedule.zone.clone(),
                recurrence: None,
                start_local: None,
                first_due_ms: until.timestamp_millis(),
                escalate_after_minutes: schedule.escalate_after_minutes,
                snoozed_from: Some(answer.firing),
                // Snoozing the same occurrence twice is refused by the settle itself.
                once_key: Some(format!("snooze:{}", answer.firing)),
            };
            (
                FiringState::Snoozed,
                snoozed_outcome(until, zone, now),
                Some(snooze),
            )
        }
    };
    let close = message_to(
        deps,
        &schedule.conversation,
        outcome.clone(),
        OutgoingKind::Close {
            prompt: PromptId::Reminder(answer.firing),
        },
    );
    let settlement = Settlement {
        id: answer.firing,
        state,
        settled_at_ms: now.timestamp_millis(),
        messages: close.into_iter().collect(),
        snooze,
    };
    match deps.schedules.settle(&settlement).await? {
        Settled::NotOpen(state) => Err(match state {
            Some(state) => ReminderError::AlreadySettled {
                firing: answer.firing,
                state: state.as_str().to_string(),
            },
            None => not_yours(),
        }),
        Settled::Now { outbox_ids, snooze } => {
            let label = match state {
                FiringState::Snoozed => "snoozed",
                _ => "done",
            };
            deps.metrics
                .increment("hearth_reminders_answered_total", &[("answer", label)]);
            tracing::info!(schedule = schedule.id, due = %instant(answer.firing.due_ms), answer = label, "reminder answered");
            let snoozed = snooze.and_then(|snooze| Some((snooze.id, snooze.next_due_ms?)));
            Ok((
                ReminderSettled { text: outcome },
                outbox_ids.into_iter().zip(settlement.messages).collect(),
                snoozed,
            ))
        }
    }
}
