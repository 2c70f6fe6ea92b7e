//! Reminders: what the member may see of the family's reminders and scheduled tasks (their
//! own and those they set; a parent, the family's), each with its next time in words and a
//! Cancel button, and their fired reminders waiting for Done or Snooze. The same rules as
//! the chat's `/reminders` and `GET /api/reminders`: the list is `reminders::listing`'s,
//! Done and Snooze go to the scheduler (`SettleReminder`) and a cancel too
//! (`CancelReminder`, decided by `listing::cancel`), as from a chat's list. What is not the
//! member's to answer or cancel is as if it did not exist (`404`).
//!
//! Adding and changing one is `reminder_forms.rs`'s.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, SignedIn, signed_in};
use crate::http::HttpState;
use crate::ids::FiringId;
use crate::ports::{Schedule, ScheduleKind};
use crate::reminders::{
    CancelReminder, ListingError, NO_REMINDERS, NOT_DUE_AGAIN, ReminderChoice, ReminderError,
    SettleReminder, WaitingReminder, kind_in_words, listing, next_in_words, recurrence_in_words,
    whose,
};

#[derive(Debug, Deserialize)]
pub struct RemindersQuery {
    answered: Option<String>,
}

/// `GET /reminders`.
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<RemindersQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let now = crate::clock::now();
    let listed = listing::visible(state.schedules.as_ref(), &signed_in.member).await;
    let waiting = listing::waiting(state.schedules.as_ref(), &signed_in.member.id, now).await;
    let (schedules, waiting) = match (listed, waiting) {
        (Ok(schedules), Ok(waiting)) => (schedules, waiting),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, "reminders not read");
            return layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&signed_in),
                "hearth cannot read the reminders just now; try again in a moment.",
            );
        }
    };
    let said = match query.answered.as_deref() {
        Some("done") => Some("Marked done."),
        Some("snooze") => Some("Snoozed: it comes again later, as the list below says."),
        Some("cancelled") => Some("Cancelled: it will not come again."),
        Some("added") => Some("Added: the list below shows when it comes."),
        Some("changed") => Some("Changed: the list below shows when it comes now."),
        _ => None,
    };
    let heading = if signed_in.is_parent() {
        "The family's reminders and tasks"
    } else {
        "Your reminders and tasks"
    };
    layout::page(
        "Reminders",
        Some(&signed_in),
        Tab::Reminders,
        html! {
            h1 { "Reminders" }
            (notice(said))
            h2 { "Waiting for Done or Snooze" }
            @if waiting.is_empty() {
                p { "No reminder of yours waits for an answer." }
            }
            @for waiting in &waiting {
                (waiting_card(&signed_in, waiting))
            }
            h2 { (heading) }
            @if schedules.is_empty() {
                p { (NO_REMINDERS) }
            } @else {
                ul.reminders {
                    @for schedule in &schedules {
                        (schedule_item(&state, &signed_in, schedule, now))
                    }
                }
            }
            p { a.button href="/reminders/new" { "Add a reminder" } }
            p.hint { "Or ask hearth in the " a href="/chat" { "chat" }
                ", for example: remind me to water the plants at 6 pm." }
        },
    )
}

/// How long Snooze may put a reminder off, as offered (minutes, words); 1 to 1440 is taken.
const SNOOZE_CHOICES: [(u64, &str); 4] = [
    (10, "10 minutes"),
    (30, "30 minutes"),
    (60, "an hour"),
    (180, "3 hours"),
];
const MAX_SNOOZE_MINUTES: u64 = 1440;

/// A fired reminder with its Done and Snooze buttons.
fn waiting_card(signed_in: &SignedIn, waiting: &WaitingReminder) -> Markup {
    let occurrence = waiting.firing.id.to_string();
    let csrf = &signed_in.session.csrf_token;
    html! {
        article.reminder aria-label={ "Reminder " (waiting.schedule.text) } {
            p.text { (waiting.schedule.text) }
            p.hint { "It was due " (waiting.due_in_words) "." }
            div.answer {
                form method="post" action={ "/reminders/" (occurrence) "/done" } {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" { "Done" }
                }
                form method="post" action={ "/reminders/" (occurrence) "/snooze" } {
                    input type="hidden" name="csrf" value=(csrf);
                    label.visually-hidden for={ "snooze-" (occurrence) } { "Snooze for" }
                    select id={ "snooze-" (occurrence) } name="minutes" {
                        option value="" { "the usual time" }
                        @for (minutes, words) in SNOOZE_CHOICES {
                            option value=(minutes) { (words) }
                        }
                    }
                    button.secondary type="submit" { "Snooze" }
                }
            }
        }
    }
}

/// One schedule of the list: what, when next and how it repeats, whose, and Cancel.
fn schedule_item(
    state: &HttpState,
    signed_in: &SignedIn,
    schedule: &Schedule,
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    let when = next_in_words(schedule, now).unwrap_or_else(|| NOT_DUE_AGAIN.to_string());
    let whose = whose(schedule, &signed_in.member.id, |id| {
        state.family.display_name(id)
    });
    html! {
        li {
            span.what { (kind_in_words(schedule)) "“" (schedule.text) "”" }
            br;
            span.when { (when) @if let Some(repeats) = recurrence_in_words(schedule) { ", " (repeats) } }
            @if let Some(whose) = whose { " " span.hint { "(" (whose) ")" } }
            @if schedule.kind == ScheduleKind::Reminder {
                " " a href={ "/reminders/" (schedule.id) "/edit" } aria-label={ "Change “" (schedule.text) "”" } { "Change" }
            }
            form.inline method="post" action={ "/reminders/" (schedule.id) "/cancel" } {
                input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                button.secondary type="submit" aria-label={ "Cancel “" (schedule.text) "”" } { "Cancel" }
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ReminderForm {
    /// Left out, it is an empty token: refused like a wrong one.
    #[serde(default)]
    csrf: String,
}

/// `POST /reminders/{occurrence}/done`.
pub async fn done(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<ReminderForm>,
) -> HttpResponse {
    settle(
        &request,
        &state,
        &path,
        &body.csrf,
        ReminderChoice::Done,
        "done",
    )
    .await
}

#[derive(Debug, Deserialize)]
pub struct SnoozeForm {
    #[serde(default)]
    csrf: String,
    /// Empty or left out: `reminders.snooze_minutes`.
    #[serde(default)]
    minutes: String,
}

/// `POST /reminders/{occurrence}/snooze`: for `minutes` (1 to 1440), or
/// `reminders.snooze_minutes`.
pub async fn snooze(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<SnoozeForm>,
) -> HttpResponse {
    let minutes = match body.minutes.trim() {
        "" => None,
        text => match text.parse::<u64>() {
            Ok(minutes) if (1..=MAX_SNOOZE_MINUTES).contains(&minutes) => Some(minutes),
            _ => {
                let signed_in = session::signed_in_page(&state, &request).await.ok();
                return layout::problem(
                    actix_web::http::StatusCode::BAD_REQUEST,
                    signed_in.as_ref(),
                    &format!("Snooze for 1 to {MAX_SNOOZE_MINUTES} minutes, not {text:?}."),
                );
            }
        },
    };
    let choice =
        ReminderChoice::Snooze(minutes.map(|minutes| std::time::Duration::from_secs(minutes * 60)));
    settle(&request, &state, &path, &body.csrf, choice, "snooze").await
}

/// Done or Snooze, as the signed-in member, through the scheduler, once.
async fn settle(
    request: &HttpRequest,
    state: &HttpState,
    occurrence: &str,
    csrf: &str,
    choice: ReminderChoice,
    answered: &str,
) -> HttpResponse {
    let signed_in = match signed_in(state, request).await {
        Ok(Some(signed_in)) => signed_in,
        Ok(None) => return see_other("/sign-in"),
        Err(unavailable) => return unavailable,
    };
    if !signed_in.csrf_ok(csrf) {
        return layout::forged_form(Some(&signed_in));
    }
    let Ok(firing) = occurrence.parse::<FiringId>() else {
        return layout::not_found(Some(&signed_in));
    };
    let Some(scheduler) = &state.reminders else {
        return not_running(&signed_in);
    };
    let settled = scheduler
        .send(SettleReminder {
            firing,
            member_id: signed_in.member.id.clone(),
            choice,
        })
        .await
        .unwrap_or(Err(ReminderError::Stopped));
    match settled {
        Ok(_) => see_other(&format!("/reminders?answered={answered}")),
        // Another member's reminder is as one that does not exist.
        Err(ReminderError::NotYours(_)) => layout::not_found(Some(&signed_in)),
        Err(error @ ReminderError::AlreadySettled { .. }) => layout::problem(
            StatusCode::CONFLICT,
            Some(&signed_in),
            &format!("{}.", layout::upper_first(&error.to_string())),
        ),
        Err(error) => {
            tracing::error!(%error, "reminder answer not stored");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&signed_in),
                "The answer could not be stored just now; try again.",
            )
        }
    }
}

/// `POST /reminders/{schedule}/cancel`: by `listing::cancel`'s rules, in the scheduler.
pub async fn cancel(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<ReminderForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Ok(schedule_id) = path.parse::<i64>() else {
        return layout::not_found(Some(&signed_in));
    };
    let Some(scheduler) = &state.cancel_reminder else {
        return not_running(&signed_in);
    };
    let cancelled = scheduler
        .send(CancelReminder {
            member_id: signed_in.member.id.clone(),
            schedule_id,
        })
        .await
        .unwrap_or(Err(ListingError::Stopped));
    match cancelled {
        Ok(_) => see_other("/reminders?answered=cancelled"),
        // One the member may not see is as one that does not exist.
        Err(ListingError::NotVisible(_) | ListingError::NotAMember(_)) => {
            layout::not_found(Some(&signed_in))
        }
        Err(error @ ListingError::NotActive(_)) => layout::problem(
            StatusCode::CONFLICT,
            Some(&signed_in),
            &format!("{}.", layout::upper_first(&error.to_string())),
        ),
        Err(error) => {
            tracing::error!(%error, schedule_id, "cancel from the web page not done");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&signed_in),
                "The reminder could not be cancelled just now; try again.",
            )
        }
    }
}

fn not_running(signed_in: &SignedIn) -> HttpResponse {
    layout::problem(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(signed_in),
        "Reminders are not running just now; try again in a moment.",
    )
}
