//! `GET /api/reminders?user_id=` and `POST /api/reminders/{occurrence}/done|snooze`: a
//! member's reminders over HTTP, with the inbound key.
//!
//! The list holds what the member may see (their own and those they set; a parent's, the
//! family's: `reminders::listing`, the rules the tools, `/reminders` and the web page share)
//! with each next time in words and as an instant, and the member's fired
//! reminders waiting for Done or Snooze. Done and Snooze go to the scheduler like a button
//! press: only the member a reminder is for may answer it; for anyone else it is as if it
//! did not exist (`404`). A user id that is not a family member gets `204` and nothing else.

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::HttpState;
use super::auth::inbound_member;
use crate::ids::{FiringId, HTTP_CHANNEL};
use crate::ports::Schedule;
use crate::reminders::{
    ReminderChoice, ReminderError, SettleReminder, listing, next_in_words, recurrence_in_words,
};

#[derive(Debug, Deserialize)]
pub struct MemberQuery {
    /// Left out with a member's own token.
    user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    user_id: Option<String>,
    /// Snooze only: how long, 1 to 1440; `reminders.snooze_minutes` when left out.
    minutes: Option<u64>,
}

fn instant_json(ms: i64) -> Value {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or(Value::Null, |at| {
        json!(at.to_rfc3339_opts(SecondsFormat::Secs, true))
    })
}

fn schedule_json(schedule: &Schedule, now: DateTime<Utc>) -> Value {
    json!({
        "id": schedule.id,
        "kind": schedule.kind.as_str(),
        "text": schedule.text,
        "member_id": schedule.member_id,
        "set_by": schedule.set_by,
        "profile": schedule.profile_id,
        "zone": schedule.zone,
        "next_due": schedule.next_due_ms.map_or(Value::Null, instant_json),
        "next_due_local": next_in_words(schedule, now),
        "recurrence": recurrence_in_words(schedule),
    })
}

pub async fn get_reminders(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<MemberQuery>,
) -> HttpResponse {
    let user_id = match inbound_member(
        &state.keys,
        &state.identity,
        &state.family,
        &request,
        query.user_id.as_deref(),
    )
    .await
    {
        Ok(user_id) => user_id,
        Err(refused) => return refused,
    };
    let Some(member) = state.family.by_id(HTTP_CHANNEL, &user_id) else {
        return HttpResponse::NoContent().finish();
    };
    let now = crate::clock::now();
    let listed = listing::visible(state.schedules.as_ref(), &member).await;
    let open = listing::waiting(state.schedules.as_ref(), &member.id, now).await;
    let (schedules, open) = match (listed, open) {
        (Ok(schedules), Ok(open)) => (schedules, open),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, "reminders not read");
            return HttpResponse::InternalServerError()
                .json(json!({ "error": "the reminders could not be read; try again" }));
        }
    };
    let waiting: Vec<Value> = open
        .iter()
        .map(|waiting| {
            json!({
                "occurrence": waiting.firing.id.to_string(),
                "reminder": waiting.schedule.id,
                "text": waiting.schedule.text,
                "due": instant_json(waiting.firing.id.due_ms),
                "due_local": waiting.due_in_words,
                "fired_at": instant_json(waiting.firing.fired_at_ms),
            })
        })
        .collect();
    HttpResponse::Ok().json(json!({
        "reminders": schedules.iter().map(|schedule| schedule_json(schedule, now)).collect::<Vec<_>>(),
        "waiting": waiting,
    }))
}

pub async fn post_answer(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<(String, String)>,
    body: web::Json<AnswerBody>,
) -> HttpResponse {
    let body = body.into_inner();
    let user_id = match inbound_member(
        &state.keys,
        &state.identity,
        &state.family,
        &request,
        body.user_id.as_deref(),
    )
    .await
    {
        Ok(user_id) => user_id,
        Err(refused) => return refused,
    };
    let (occurrence, answer) = path.into_inner();
    let choice = match (answer.as_str(), body.minutes) {
        ("done", None) => ReminderChoice::Done,
        ("done", Some(_)) => {
            return HttpResponse::BadRequest()
                .json(json!({ "error": "field `minutes` is for snooze only" }));
        }
        ("snooze", None) => ReminderChoice::Snooze(None),
        ("snooze", Some(minutes)) if (1..=1440).contains(&minutes) => {
            ReminderChoice::Snooze(Some(Duration::from_secs(minutes * 60)))
        }
        ("snooze", Some(minutes)) => {
            return HttpResponse::BadRequest().json(
                json!({ "error": format!("field `minutes` must be 1 to 1440, got {minutes}") }),
            );
        }
        (other, _) => {
            return HttpResponse::NotFound().json(json!({
                "error": format!("{other:?} is no answer to a reminder: use done or snooze")
            }));
        }
    };
    let Some(member) = state.family.by_id(HTTP_CHANNEL, &user_id) else {
        return HttpResponse::NoContent().finish();
    };
    let Ok(firing) = occurrence.parse::<FiringId>() else {
        return HttpResponse::NotFound()
            .json(json!({ "error": format!("no reminder {occurrence:?} is waiting for you") }));
    };
    let Some(scheduler) = &state.reminders else {
        return HttpResponse::ServiceUnavailable()
            .json(json!({ "error": "reminders are not running" }));
    };
    let answered = scheduler
        .send(SettleReminder {
            firing,
            member_id: member.id.clone(),
            choice,
        })
        .await
        .unwrap_or(Err(ReminderError::Stopped));
    match answered {
        Ok(settled) => HttpResponse::Ok().json(json!({ "status": answer, "text": settled.text })),
        Err(error @ ReminderError::NotYours(_)) => {
            HttpResponse::NotFound().json(json!({ "error": error.to_string() }))
        }
        Err(error @ ReminderError::AlreadySettled { .. }) => {
            HttpResponse::Conflict().json(json!({ "error": error.to_string() }))
        }
        Err(error) => {
            tracing::error!(%error, "reminder answer not stored");
            HttpResponse::ServiceUnavailable()
                .json(json!({ "error": "the answer could not be stored; try again" }))
        }
    }
}
