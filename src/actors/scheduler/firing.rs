//! Firing one occurrence and escalating one unacknowledged: what is sent is built here and
//! stored by one claim (`Schedules::claim`, `Schedules::escalate`) with the mark that it
//! happened, then handed to the channels. A reminder goes out as a prompt with Done and
//! Snooze (late when hearth was down or busy, within `reminders.grace_minutes`); one missed
//! for longer is told once instead; a task's occurrence is its turn, stored as an accepted
//! message of the member in the claim and handed to the request queue.

use chrono::{DateTime, TimeDelta, Utc};

use super::SchedulerDeps;
use crate::ids::{ConversationKey, FiringId, PromptId};
use crate::local_time::ZoneName;
use crate::ports::{
    Claimed, Firing, FiringClaim, FiringState, FiringTiming, Inbound, InboundExtras, OutgoingKind,
    OutgoingMessage, Schedule, ScheduleKind, StorageError, TelemetryEvent,
};
use crate::reminders::{
    LATE_AFTER, escalation_message, missed_message, reminder_message, stored_recurring,
};

/// What a firing stored, for the scheduler to hand on.
#[derive(Debug, Default)]
pub(super) struct Sent {
    /// Outbox rows to hand to their channels.
    pub(super) rows: Vec<(i64, OutgoingMessage)>,
    /// A task's turn, stored accepted, for the request queue.
    pub(super) turn: Option<Inbound>,
}

pub(super) fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The zone a schedule was set in; UTC for one that no longer reads (never stored so).
pub(super) fn zone_of(schedule: &Schedule) -> ZoneName {
    ZoneName::parse(&schedule.zone).unwrap_or_else(|_| chrono_tz::UTC.into())
}

/// A message to `place` of `kind`, when its channel delivers by itself (elsewhere what
/// fired is read: `GET /api/reminders`).
pub(super) fn message_to(
    deps: &SchedulerDeps,
    place: &ConversationKey,
    text: String,
    kind: OutgoingKind,
) -> Option<OutgoingMessage> {
    deps.channels
        .contains_key(place.channel())
        .then(|| OutgoingMessage {
            conversation: place.clone(),
            inbox_id: None,
            text,
            kind,
            reply_to_event: None,
        })
}

/// Fire schedule `schedule`'s occurrence due at `schedule.next_due_ms` at `now`: `None`
/// when another claim fired it first (or it changed meanwhile), else what was stored.
pub(super) async fn fire_occurrence(
    deps: &SchedulerDeps,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> Result<Option<Sent>, StorageError> {
    let Some(due_ms) = schedule.next_due_ms else {
        return Ok(None);
    };
    let (due, zone) = (instant(due_ms), zone_of(schedule));
    let id = FiringId {
        schedule_id: schedule.id,
        due_ms,
    };
    let recurring = stored_recurring(
        &schedule.zone,
        schedule.recurrence.as_deref(),
        schedule.start_local.as_deref(),
    );
    // A recurrence goes on from now: occurrences that passed while hearth was down are not
    // sent one after another, only the one being fired.
    let next = recurring
        .as_ref()
        .and_then(|recurring| recurring.next_after(due.max(now)));
    let late = now - due;
    let grace = TimeDelta::minutes(i64::try_from(deps.settings.grace_minutes).unwrap_or(60));
    let place = &schedule.conversation;
    let mut claim = FiringClaim {
        id,
        next_due_ms: next.map(|next| next.timestamp_millis()),
        fired_at_ms: now.timestamp_millis(),
        timing: if late > grace {
            FiringTiming::Missed
        } else if late > LATE_AFTER {
            FiringTiming::Late
        } else {
            FiringTiming::OnTime
        },
        state: FiringState::Closed,
        escalate_at_ms: None,
        messages: Vec::new(),
        turn: None,
    };
    match (claim.timing, schedule.kind) {
        (FiringTiming::Missed, _) => {
            let text = missed_message(schedule, due, zone, next, now);
            claim
                .messages
                .extend(message_to(deps, place, text, OutgoingKind::Reply));
        }
        (_, ScheduleKind::Reminder) => {
            let set_by = (schedule.set_by != schedule.member_id)
                .then(|| deps.family.display_name(&schedule.set_by));
            let text = reminder_message(&schedule.text, set_by.as_deref(), due, zone, now);
            claim.state = FiringState::Open;
            claim.escalate_at_ms = schedule
                .escalate_after_minutes
                .map(|minutes| now.timestamp_millis() + i64::from(minutes) * 60_000);
            let kind = OutgoingKind::Prompt {
                prompt: PromptId::Reminder(id),
                member_id: schedule.member_id.clone(),
            };
            claim.messages.extend(message_to(deps, place, text, kind));
        }
        (_, ScheduleKind::Task) => {
            claim.turn = Some(Inbound {
                id: Inbound::new_id(),
                conversation: place.clone(),
                member_id: schedule.member_id.clone(),
                text: schedule.text.clone(),
                // The occurrence: the inbox takes it once whatever claims it.
                platform_event_id: Some(format!("schedule:{id}")),
                received_at_ms: now.timestamp_millis(),
                extras: InboundExtras {
                    profile_id: schedule.profile_id.clone(),
                    ..Default::default()
                },
            });
        }
    }
    let Claimed::Fired { outbox_ids } = deps.schedules.claim(&claim).await? else {
        return Ok(None);
    };
    let timing = claim.timing.as_str();
    deps.metrics.increment(
        "hearth_reminders_fired_total",
        &[("kind", schedule.kind.as_str()), ("timing", timing)],
    );
    deps.telemetry.record(TelemetryEvent::Stage {
        at_ms: claim.fired_at_ms,
        conversation_key: place.clone(),
        stage: "schedule_fired".to_string(),
        payload: serde_json::json!({
            "schedule": schedule.id,
            "kind": schedule.kind.as_str(),
            "member": schedule.member_id,
            "due_ms": due_ms,
            "late_ms": late.num_milliseconds().max(0),
            "timing": timing,
            "next_due_ms": claim.next_due_ms,
        }),
    });
    tracing::info!(schedule = schedule.id, kind = schedule.kind.as_str(), member = %schedule.member_id,
        timing, late_ms = late.num_milliseconds().max(0), "schedule fired");
    Ok(Some(Sent {
        rows: outbox_ids.into_iter().zip(claim.messages).collect(),
        turn: claim.turn,
    }))
}

/// Tell the parents' own chats that open occurrence `firing` was not acknowledged, once.
pub(super) async fn escalate(
    deps: &SchedulerDeps,
    firing: &Firing,
    now: DateTime<Utc>,
) -> Result<Option<Sent>, StorageError> {
    let Some(schedule) = deps.schedules.schedule(firing.id.schedule_id).await? else {
        return Ok(None);
    };
    let minutes = schedule.escalate_after_minutes.unwrap_or(0);
    let text = escalation_message(
        &deps.family.display_name(&schedule.member_id),
        &schedule,
        instant(firing.id.due_ms),
        zone_of(&schedule),
        minutes,
        now,
    );
    let messages: Vec<OutgoingMessage> = deps
        .family
        .members()
        .into_iter()
        .filter(|member| member.role == crate::config::FamilyRole::Parent)
        .filter(|member| member.id != schedule.member_id)
        .flat_map(|parent| deps.own_chats.of(&parent.id))
        .filter_map(|place| message_to(deps, &place, text.clone(), OutgoingKind::Reply))
        .collect();
    if messages.is_empty() {
        tracing::warn!(schedule = schedule.id, "no parent has a chat to be told in");
    }
    let Some(outbox_ids) = deps
        .schedules
        .escalate(firing.id, now.timestamp_millis(), &messages)
        .await?
    else {
        return Ok(None);
    };
    deps.metrics
        .increment("hearth_reminders_escalated_total", &[]);
    tracing::info!(schedule = schedule.id, member = %schedule.member_id, "unacknowledged reminder told to the parents");
    Ok(Some(Sent {
        rows: outbox_ids.into_iter().zip(messages).collect(),
        turn: None,
    }))
}
