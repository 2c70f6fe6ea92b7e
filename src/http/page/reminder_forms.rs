//! Adding and editing a reminder on the page: the form's fields are the `schedule_reminder`
//! tool's arguments (text; a local date and time in the member's zone; a repeat as the tool
//! takes it; for a parent, whom it is for), read, checked and stored by the tool's own code
//! (`RemindersToolset::add_from_form`, `edit_from_form`), delivered where the tool decides.
//! Each add form carries a one-time nonce, the schedule's once-key, so the same form posted
//! twice (a double click, a reload) stores one reminder. An edit names the occurrence it
//! showed: one that went off or was cancelled meanwhile is told (`409`), not changed. A
//! reminder the member may not see is `404` by every URL, like one that does not exist.
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::html;
use serde::Deserialize;

use super::layout::{self, Tab, see_other};
use super::session::{self, SignedIn};
use crate::http::HttpState;
use crate::ids::ConversationKey;
use crate::local_time::ZoneName;
use crate::reminders::{FormError, MAX_TEXT_CHARS, ReminderFields};
use crate::secrets;

/// The conversation a form's reminder counts as set in: the member's web conversation, as
/// the chat page's (a reminder for oneself then goes to their own chat where they have one).
const WEB_SESSION: &str = "web";

#[derive(Debug, Default, Deserialize)]
pub struct ReminderForm {
    /// Left out, it is an empty token: refused like a wrong one.
    #[serde(default)]
    csrf: String,
    /// The add form's one-time nonce (64 hex digits).
    #[serde(default)]
    nonce: String,
    /// The edit form's occurrence as shown (ms since the epoch).
    #[serde(default)]
    seen: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    date: String,
    #[serde(default)]
    time: String,
    #[serde(default)]
    recurrence: String,
    #[serde(default)]
    for_member: String,
}

impl ReminderForm {
    fn fields(&self) -> ReminderFields {
        ReminderFields {
            text: self.text.clone(),
            date: self.date.clone(),
            time: self.time.clone(),
            recurrence: self.recurrence.clone(),
            for_member: self.for_member.clone(),
        }
    }
}

/// Which form: a new reminder, or reminder `id` next due at `seen`.
enum Editing {
    New,
    Existing { id: i64, seen: i64 },
}

/// What answers when the scheduler is not running, so the forms have nothing to store with.
fn not_running(signed_in: &SignedIn) -> HttpResponse {
    layout::problem(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(signed_in),
        "Reminders are not running just now; try again in a moment.",
    )
}

/// What was wrong, said as a sentence.
fn sentence(text: &str) -> String {
    let mut said = layout::upper_first(text.trim());
    if !said.ends_with(['.', '!', '?']) {
        said.push('.');
    }
    said
}

/// The form, with what was typed and what was wrong with it.
fn form_page(
    state: &HttpState,
    signed_in: &SignedIn,
    editing: &Editing,
    fields: &ReminderFields,
    wrong: Option<&str>,
    status: StatusCode,
) -> HttpResponse {
    let csrf = &signed_in.session.csrf_token;
    let (title, action) = match editing {
        Editing::New => ("Add a reminder".to_string(), "/reminders/new".to_string()),
        Editing::Existing { id, .. } => (
            format!("Change reminder #{id}"),
            format!("/reminders/{id}/edit"),
        ),
    };
    // A fresh nonce per form shown: posting this one twice stores one reminder.
    let nonce = secrets::random_key("").unwrap_or_default();
    let members = state.family.members();
    let mut response = layout::page(
        &title,
        Some(signed_in),
        Tab::Reminders,
        html! {
            h1 { (title) }
            @if let Some(wrong) = wrong {
                p.notice role="alert" id="reminder-problem" { (sentence(wrong)) }
            }
            form.reminder-form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                @match editing {
                    Editing::New => { input type="hidden" name="nonce" value=(nonce); }
                    Editing::Existing { seen, .. } => { input type="hidden" name="seen" value=(seen); }
                }
                label for="reminder-text" { "What to remind of" }
                input id="reminder-text" name="text" type="text" required
                    maxlength=(MAX_TEXT_CHARS) value=(fields.text);
                label for="reminder-date" { "Day" }
                input id="reminder-date" name="date" type="date" value=(fields.date)
                    aria-describedby="reminder-date-hint";
                p.hint id="reminder-date-hint" { "Leave it empty for the next time the clock shows the time below. In your time zone: " (signed_in.zone().name()) "." }
                label for="reminder-time" { "Time" }
                input id="reminder-time" name="time" type="time" required value=(fields.time);
                label for="reminder-recurrence" { "Repeat (optional)" }
                input id="reminder-recurrence" name="recurrence" type="text" maxlength="200"
                    value=(fields.recurrence) aria-describedby="reminder-recurrence-hint";
                p.hint id="reminder-recurrence-hint" { "For example: daily, weekdays, weekly on mon,thu, monthly on 15. Empty: once." }
                @if matches!(editing, Editing::New) && signed_in.is_parent() {
                    label for="reminder-for" { "For whom" }
                    select id="reminder-for" name="for_member" {
                        option value="" { "Me" }
                        @for member in members.iter().filter(|member| member.id != signed_in.member.id) {
                            option value=(member.id) selected[fields.for_member == member.id.as_str()] {
                                (state.family.display_name(&member.id))
                            }
                        }
                    }
                    p.hint { "Someone else's goes to their own chat with hearth, saying you set it." }
                }
                button type="submit" { @if matches!(editing, Editing::New) { "Add" } @else { "Save" } }
            }
            p { a href="/reminders" { "Back to the reminders" } }
        },
    );
    *response.status_mut() = status;
    response
}

/// `GET /reminders/new`.
pub async fn new_form(request: HttpRequest, state: web::Data<HttpState>) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    form_page(
        &state,
        &signed_in,
        &Editing::New,
        &ReminderFields::default(),
        None,
        StatusCode::OK,
    )
}

/// `POST /reminders/new`: `schedule_reminder` as the member asked it, once per nonce.
pub async fn add(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<ReminderForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Some(forms) = state.reminder_forms.clone() else {
        return not_running(&signed_in);
    };
    let fields = body.fields();
    if body.nonce.len() != 64 || !body.nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return form_page(
            &state,
            &signed_in,
            &Editing::New,
            &fields,
            Some(
                "this form has no valid `nonce`; it is sent with the page, so reload the page and try again",
            ),
            StatusCode::BAD_REQUEST,
        );
    }
    let Ok(asked_in) = ConversationKey::http_session(&signed_in.member.id, Some(WEB_SESSION))
    else {
        return layout::not_found(Some(&signed_in));
    };
    let once_key = format!("web-reminder:{}/{}", signed_in.member.id, body.nonce);
    match forms
        .add_from_form(&signed_in.member, &asked_in, &fields, once_key)
        .await
    {
        Ok(said) => {
            tracing::info!(member = %signed_in.member.id, "reminder added on the web page");
            tracing::debug!(said = %said, "reminder form answered");
            see_other("/reminders?answered=added")
        }
        Err(error) => answer_error(&state, &signed_in, &Editing::New, &fields, error),
    }
}

/// The form again with what was wrong, or the page saying why nothing was done.
fn answer_error(
    state: &HttpState,
    signed_in: &SignedIn,
    editing: &Editing,
    fields: &ReminderFields,
    error: FormError,
) -> HttpResponse {
    match error {
        FormError::Invalid(why) => form_page(
            state,
            signed_in,
            editing,
            fields,
            Some(&why),
            StatusCode::BAD_REQUEST,
        ),
        FormError::NotVisible(_) => layout::not_found(Some(signed_in)),
        error @ FormError::Changed(_) => layout::problem(
            StatusCode::CONFLICT,
            Some(signed_in),
            &format!("{}.", layout::upper_first(&error.to_string())),
        ),
        FormError::Failed(error) => {
            tracing::error!(%error, "reminder form not stored");
            layout::problem(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(signed_in),
                "The reminder could not be stored just now; try again.",
            )
        }
    }
}

/// A reminder's next occurrence as the form shows it: its local day and time.
fn local_fields(next_due_ms: i64, zone: ZoneName) -> (String, String) {
    DateTime::<Utc>::from_timestamp_millis(next_due_ms).map_or_else(Default::default, |at| {
        let local = at.with_timezone(&zone.tz());
        (
            local.format("%Y-%m-%d").to_string(),
            local.format("%H:%M").to_string(),
        )
    })
}

/// `GET /reminders/{schedule}/edit`.
pub async fn edit_form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Ok(id) = path.parse::<i64>() else {
        return layout::not_found(Some(&signed_in));
    };
    let Some(forms) = state.reminder_forms.clone() else {
        return not_running(&signed_in);
    };
    let schedule = match forms.editable(&signed_in.member, id).await {
        Ok(schedule) => schedule,
        Err(error) => {
            return answer_error(
                &state,
                &signed_in,
                &Editing::New,
                &ReminderFields::default(),
                error,
            );
        }
    };
    let seen = schedule.next_due_ms.unwrap_or_default();
    let zone = ZoneName::parse(&schedule.zone).unwrap_or_else(|_| signed_in.zone());
    let (date, time) = local_fields(seen, zone);
    let fields = ReminderFields {
        text: schedule.text.clone(),
        date,
        time,
        recurrence: schedule.recurrence.clone().unwrap_or_default(),
        for_member: String::new(),
    };
    form_page(
        &state,
        &signed_in,
        &Editing::Existing { id, seen },
        &fields,
        None,
        StatusCode::OK,
    )
}

/// `POST /reminders/{schedule}/edit`: its words and time, when it is still as shown.
pub async fn edit(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<ReminderForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Ok(id) = path.parse::<i64>() else {
        return layout::not_found(Some(&signed_in));
    };
    let Some(forms) = state.reminder_forms.clone() else {
        return not_running(&signed_in);
    };
    let fields = body.fields();
    let Ok(seen) = body.seen.trim().parse::<i64>() else {
        // Whether it is theirs at all is said first: another's is as if it did not exist.
        if let Err(error @ FormError::NotVisible(_)) = forms.editable(&signed_in.member, id).await {
            return answer_error(&state, &signed_in, &Editing::New, &fields, error);
        }
        return form_page(
            &state,
            &signed_in,
            &Editing::Existing { id, seen: 0 },
            &fields,
            Some(
                "this form has no valid `seen` time; reload the reminders and open its Change again",
            ),
            StatusCode::BAD_REQUEST,
        );
    };
    match forms
        .edit_from_form(&signed_in.member, id, seen, &fields)
        .await
    {
        Ok(_) => see_other("/reminders?answered=changed"),
        Err(error) => answer_error(
            &state,
            &signed_in,
            &Editing::Existing { id, seen },
            &fields,
            error,
        ),
    }
}
