//! Calendar: the coming events of the calendars of the profile the member's web
//! conversation speaks to, each said in the member's zone with its calendar (recurring
//! ones expanded, as the search tool lists them), and forms to add, change and delete one.
//! Every write goes through the calendar tools' own code (`CalendarToolset`): the same
//! arguments read, the same `If-Match` on the version shown (a change made elsewhere
//! meanwhile is told, never overwritten), a new event's UID from the form's one-time nonce
//! (a form posted twice makes one event). Change and delete show the event as it is first.
//! A calendar that is down, refuses the password or cannot be read (one nested too deep,
//! one too large) is said on the page, naming it, beside what the others gave.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{NaiveDate, TimeDelta};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use super::calendar_forms::{EventForm, WebCalendar, event_fields, said_for_form};
use super::layout::{self, Tab, notice, see_other};
use super::session::{self, SignedIn};
use crate::calendar::{
    ADD_CALENDAR_EVENT, CalendarToolset, DELETE_CALENDAR_EVENT, Found, MODIFY_CALENDAR_EVENT,
    SearchRange, Searched, is_changed_elsewhere, say_event, say_occurrence, shown_version,
    tool_error_text,
};
use crate::http::HttpState;
use crate::ids::ConversationKey;
use crate::local_time::phrasing::today_in;
use crate::local_time::{ZoneName, parse_local_day, resolve_local};
use crate::tools::{ToolContext, ToolError, ToolsProvider};

/// Days listed when no range is asked.
const DEFAULT_DAYS: i64 = 14;
/// The longest range listed at once (as the search tool's).
const MAX_RANGE_DAYS: i64 = 366;
/// At most this many occurrences on the page.
const MAX_LISTED: usize = 200;

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    from: Option<String>,
    to: Option<String>,
    done: Option<String>,
}

/// `GET /calendar`: the coming events, and the form to add one.
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<ListQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let said = match query.done.as_deref() {
        Some("added") => Some("Added to the calendar."),
        Some("again") => Some("That form was sent before: the event is in the calendar once."),
        Some("changed") => Some("Changed in the calendar."),
        Some("deleted") => Some("Deleted from the calendar."),
        _ => None,
    };
    let add = EventForm::default();
    listing(&state, &signed_in, &query, said, &add, None).await
}

/// The page: the list of a range, then the add form (`add`, with `problem` when it was
/// refused).
async fn listing(
    state: &HttpState,
    signed_in: &SignedIn,
    query: &ListQuery,
    said: Option<&str>,
    add: &EventForm,
    problem: Option<&str>,
) -> HttpResponse {
    let calendar = &state.calendar;
    let (Some(calendars), Some(toolset)) = (&calendar.calendars, &calendar.toolset) else {
        return no_calendar(signed_in, calendar);
    };
    let zone = toolset.zone_for(&signed_in.member.id);
    let now = crate::clock::now();
    let today = today_in(zone, now);
    let range = read_range(query, today);
    let (first, last, range_problem) = match range {
        Ok((first, last)) => (first, last, None),
        Err(message) => (
            today,
            today + TimeDelta::days(DEFAULT_DAYS - 1),
            Some(message),
        ),
    };
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
        words: Vec::new(),
    };
    let searched = calendars
        .search(range)
        .await
        .unwrap_or_else(|problem| Searched {
            problems: vec![problem.to_string()],
            ..Searched::default()
        });
    let may_change = calendar
        .may(MODIFY_CALENDAR_EVENT, &signed_in.member)
        .is_ok();
    let may_delete = calendar
        .may(DELETE_CALENDAR_EVENT, &signed_in.member)
        .is_ok();
    let may_add = calendar.may(ADD_CALENDAR_EVENT, &signed_in.member);
    // The calendars a new event may go to; none offered when they cannot be read.
    let writable: Option<Vec<String>> = match (&may_add, calendars.read_only()) {
        (Ok(()), false) => calendars
            .writable()
            .await
            .ok()
            .map(|found| found.into_iter().map(|calendar| calendar.name).collect()),
        _ => None,
    };
    let more = searched.found.len().saturating_sub(MAX_LISTED) + searched.more;
    let csrf = &signed_in.session.csrf_token;
    let nonce = crate::secrets::random_key("").unwrap_or_default();
    let status = if problem.is_some() || range_problem.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let mut response = layout::page(
        "Calendar",
        Some(signed_in),
        Tab::Calendar,
        html! {
            h1 { "Calendar" }
            (notice(said))
            @if let Some(message) = &range_problem {
                p.notice role="alert" { (message) }
            }
            form.range method="get" action="/calendar" {
                label for="from" { "From" }
                input id="from" name="from" value=(first.format("%Y-%m-%d")) maxlength="40";
                label for="to" { "To" }
                input id="to" name="to" value=(last.format("%Y-%m-%d")) maxlength="40";
                button type="submit" { "Show" }
            }
            h2 { (first.format("%a %-d %b %Y")) " to " (last.format("%a %-d %b %Y")) " (" (zone) ")" }
            @for problem in &searched.problems {
                p.notice role="alert" { "Not read: " (problem) "." }
            }
            @if searched.found.is_empty() && searched.problems.is_empty() {
                p { "No events in these days." }
            }
            ul.events {
                @for found in searched.found.iter().take(MAX_LISTED) {
                    (event_item(found, zone, now, may_change, may_delete && !calendars.read_only(), calendars.read_only()))
                }
            }
            @if more > 0 {
                p.hint { "… and " (more) " more: show fewer days to see them." }
            }
            @for rule in &searched.not_expanded {
                p.hint { "“" (rule.summary) "” repeats by a rule hearth could not expand (" (rule.rule) ": " (rule.reason) "); only its first time is listed, if it falls in these days." }
            }
            @if searched.more_not_expanded > 0 {
                p.hint { "… and " (searched.more_not_expanded) " more repeating events could not be expanded." }
            }
            h2 { "Add an event" }
            @match (&may_add, calendars.read_only()) {
                (Err(why), _) => p.notice role="status" { (layout::upper_first(why)) "." },
                (Ok(()), true) => p.hint { "These calendars are read only: nothing can be added here." },
                (Ok(()), false) if writable.is_none() => p.hint { "The calendar cannot be reached just now, so nothing can be added; try again later." },
                (Ok(()), false) => {
                    @if let Some(problem) = problem {
                        p.notice role="alert" { (problem) }
                    }
                    form.event method="post" action="/calendar" {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="nonce" value=(nonce);
                        (event_fields(add, writable.as_deref().unwrap_or_default()))
                        button type="submit" { "Add" }
                    }
                }
            }
        },
    );
    *response.status_mut() = status;
    response
}

/// The first and last day a query asks, read like the search tool's `from` and `to`.
fn read_range(query: &ListQuery, today: NaiveDate) -> Result<(NaiveDate, NaiveDate), String> {
    let day = |label: &str, written: Option<&str>| -> Result<Option<NaiveDate>, String> {
        match written.map(str::trim).filter(|text| !text.is_empty()) {
            None => Ok(None),
            Some(text) if text.chars().count() > 40 => {
                Err(format!("“{label}” is too long; write YYYY-MM-DD."))
            }
            Some(text) => parse_local_day(text)
                .map(|day| Some(day.date_from(today)))
                .map_err(|error| format!("“{label}”: {error}.")),
        }
    };
    let first = day("From", query.from.as_deref())?.unwrap_or(today);
    let last = day("To", query.to.as_deref())?.unwrap_or(first + TimeDelta::days(DEFAULT_DAYS - 1));
    if last < first {
        return Err(format!("“To” {last} is before “From” {first}."));
    }
    if (last - first).num_days() > MAX_RANGE_DAYS {
        return Err(format!("Show at most {MAX_RANGE_DAYS} days at once."));
    }
    Ok((first, last))
}

/// One occurrence: when and what, its calendar, and Change and Delete where it may be.
fn event_item(
    found: &Found,
    zone: ZoneName,
    now: chrono::DateTime<chrono::Utc>,
    may_change: bool,
    may_delete: bool,
    read_only: bool,
) -> Markup {
    let said = say_occurrence(&found.occurrence, zone, now);
    let place = found
        .resource
        .as_ref()
        .filter(|_| !read_only)
        .and_then(|(url, etag)| {
            Some((
                url.path().to_owned(),
                shown_version(etag.as_deref()?).to_owned(),
            ))
        });
    html! {
        li {
            span.what { (said) }
            " " span.hint { "[" (found.calendar) "]" }
            @if let Some((id, version)) = &place {
                @if may_change {
                    form.inline method="get" action="/calendar/event" {
                        input type="hidden" name="id" value=(id);
                        input type="hidden" name="version" value=(version);
                        button.secondary type="submit" aria-label={ "Change " (found.occurrence.event.summary) } { "Change" }
                    }
                }
                @if may_delete {
                    form.inline method="get" action="/calendar/delete" {
                        input type="hidden" name="id" value=(id);
                        input type="hidden" name="version" value=(version);
                        button.secondary type="submit" aria-label={ "Delete " (found.occurrence.event.summary) } { "Delete" }
                    }
                }
            }
        }
    }
}

/// The page of a profile without calendars: what to configure.
fn no_calendar(signed_in: &SignedIn, calendar: &WebCalendar) -> HttpResponse {
    layout::page(
        "Calendar",
        Some(signed_in),
        Tab::Calendar,
        html! {
            h1 { "Calendar" }
            p { "No calendar is set up for the profile " (calendar.profile_id) "." }
            p.hint { "A parent adds one in hearth's configuration: "
                code { "processing_config.calendar_config" } " with a CalDAV account ("
                code { "caldav: { url, username, password_env }" } ") or subscribed calendars ("
                code { "ical_urls" } "), and the calendar tools in "
                code { "tools_config.enable_local_tools" } "." }
        },
    )
}

/// The tools' context for a form of the member's: their web conversation, and a key
/// made of the form's nonce, so the same form posted twice is the same call. `None` for
/// a member id no conversation can be named by (the page answers `404`).
fn context(state: &HttpState, signed_in: &SignedIn, nonce: Option<&str>) -> Option<ToolContext> {
    let conversation_key = ConversationKey::http_session(&signed_in.member.id, Some("web")).ok()?;
    Some(ToolContext {
        member_id: signed_in.member.id.clone(),
        conversation_key,
        profile_id: state.calendar.profile_id.clone(),
        question_timeout: std::time::Duration::from_secs(300),
        idempotency_key: nonce
            .map(|nonce| format!("web-calendar/{}/{nonce}.form", signed_in.member.id)),
    })
}

fn nonce_ok(nonce: &str) -> bool {
    nonce.len() == 64 && nonce.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// The signed-in member, the calendars' toolset and the member's permission for `tool`.
async fn writer<'a>(
    state: &'a HttpState,
    request: &HttpRequest,
    csrf: &str,
    tool: &str,
) -> Result<(SignedIn, &'a CalendarToolset), HttpResponse> {
    let signed_in = session::signed_in_form(state, request, csrf).await?;
    let calendar = &state.calendar;
    let Some(toolset) = &calendar.toolset else {
        return Err(no_calendar(&signed_in, calendar));
    };
    if let Err(why) = calendar.may(tool, &signed_in.member) {
        return Err(layout::problem(
            StatusCode::FORBIDDEN,
            Some(&signed_in),
            &format!("{}.", layout::upper_first(&why)),
        ));
    }
    Ok((signed_in, toolset))
}

/// `POST /calendar`: a new event, through `add_calendar_event`.
pub async fn add(
    request: HttpRequest,
    state: web::Data<HttpState>,
    form: web::Form<EventForm>,
) -> HttpResponse {
    let (signed_in, toolset) = match writer(&state, &request, &form.csrf, ADD_CALENDAR_EVENT).await
    {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    if !nonce_ok(&form.nonce) {
        return layout::forged_form(Some(&signed_in));
    }
    let Some(context) = context(&state, &signed_in, Some(&form.nonce)) else {
        return layout::not_found(Some(&signed_in));
    };
    let added = toolset
        .call(ADD_CALENDAR_EVENT, &form.arguments(true), &context)
        .await;
    match added {
        // The UID is the form's: a second post finds the event the first one wrote.
        Ok(said) if said.starts_with("Already in") => see_other("/calendar?done=again"),
        Ok(_) => see_other("/calendar?done=added"),
        Err(error @ ToolError::InvalidArguments { .. }) => {
            let query = ListQuery {
                from: None,
                to: None,
                done: None,
            };
            let message = said_for_form(&tool_error_text(&error));
            listing(&state, &signed_in, &query, None, &form, Some(&message)).await
        }
        Err(error) => failed(&signed_in, &error),
    }
}

/// A write the calendar refused or could not take: said plainly.
fn failed(signed_in: &SignedIn, error: &ToolError) -> HttpResponse {
    let text = tool_error_text(error);
    if is_changed_elsewhere(error) {
        return layout::problem(
            StatusCode::CONFLICT,
            Some(signed_in),
            "The event was changed elsewhere since this page showed it; nothing was written. Open the calendar again to see it as it is now.",
        );
    }
    tracing::warn!(error = %text, "calendar write from the web page not done");
    layout::problem(
        StatusCode::BAD_GATEWAY,
        Some(signed_in),
        &format!(
            "The calendar did not take it: {}.",
            text.trim_end_matches('.')
        ),
    )
}

#[derive(Debug, Deserialize)]
pub struct EventQuery {
    #[serde(default)]
    id: String,
    #[serde(default)]
    version: String,
}

/// The event a query names, as it is, or the answer instead (`404` for one that is not in
/// the profile's calendars, `409` for one changed since).
async fn shown_event(
    toolset: &CalendarToolset,
    signed_in: &SignedIn,
    id: &str,
    version: &str,
) -> Result<(String, crate::calendar::EventData), HttpResponse> {
    toolset
        .event_at(id, version)
        .await
        .map_err(|error| match error {
            ToolError::InvalidArguments { .. } => layout::not_found(Some(signed_in)),
            error => failed(signed_in, &error),
        })
}

/// `GET /calendar/event?id&version`: the event as it is, in a form to change it.
pub async fn edit_form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<EventQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Some(toolset) = &state.calendar.toolset else {
        return no_calendar(&signed_in, &state.calendar);
    };
    let (calendar, event) = match shown_event(toolset, &signed_in, &query.id, &query.version).await
    {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let zone = toolset.zone_for(&signed_in.member.id);
    let mut form = EventForm::of_event(&event, zone);
    form.id = query.id.clone();
    form.version = query.version.clone();
    edit_page(&state, &signed_in, &calendar, &event, &form, None)
}

fn edit_page(
    state: &HttpState,
    signed_in: &SignedIn,
    calendar: &str,
    event: &crate::calendar::EventData,
    form: &EventForm,
    problem: Option<&str>,
) -> HttpResponse {
    let zone = state
        .calendar
        .toolset
        .as_ref()
        .map(|toolset| toolset.zone_for(&signed_in.member.id))
        .unwrap_or(state.calendar.profile_zone);
    let refused = state
        .calendar
        .may(MODIFY_CALENDAR_EVENT, &signed_in.member)
        .err();
    let mut response = layout::page(
        "Change an event",
        Some(signed_in),
        Tab::Calendar,
        html! {
            h1 { "Change an event" }
            p { "Now, in " (calendar) ": " strong { (say_event(event, zone, crate::clock::now())) } }
            @if event.rrule.is_some() {
                p.hint { "It repeats: a change changes every time." }
            }
            @if let Some(problem) = problem {
                p.notice role="alert" { (problem) }
            }
            @if let Some(why) = &refused {
                p.notice role="status" { (layout::upper_first(why)) "." }
            } @else {
                form.event method="post" action="/calendar/event" {
                    input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                    input type="hidden" name="id" value=(form.id);
                    input type="hidden" name="version" value=(form.version);
                    (event_fields(form, &[]))
                    button type="submit" { "Save the change" }
                }
            }
            p { a href="/calendar" { "Back to the calendar" } }
        },
    );
    if problem.is_some() {
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    response
}

/// `POST /calendar/event`: the change, through `modify_calendar_event`, only over the
/// version the form showed.
pub async fn edit(
    request: HttpRequest,
    state: web::Data<HttpState>,
    form: web::Form<EventForm>,
) -> HttpResponse {
    let (signed_in, toolset) =
        match writer(&state, &request, &form.csrf, MODIFY_CALENDAR_EVENT).await {
            Ok(found) => found,
            Err(answer) => return answer,
        };
    let (calendar, event) = match shown_event(toolset, &signed_in, &form.id, &form.version).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    let Some(context) = context(&state, &signed_in, None) else {
        return layout::not_found(Some(&signed_in));
    };
    match toolset
        .call(MODIFY_CALENDAR_EVENT, &form.arguments(false), &context)
        .await
    {
        Ok(_) => see_other("/calendar?done=changed"),
        Err(error @ ToolError::InvalidArguments { .. }) => {
            let message = said_for_form(&tool_error_text(&error));
            edit_page(&state, &signed_in, &calendar, &event, &form, Some(&message))
        }
        Err(error) => failed(&signed_in, &error),
    }
}

/// `GET /calendar/delete?id&version`: the event as it is, and the button that deletes it.
pub async fn delete_form(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<EventQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let Some(toolset) = &state.calendar.toolset else {
        return no_calendar(&signed_in, &state.calendar);
    };
    if let Err(answer) = shown_event(toolset, &signed_in, &query.id, &query.version).await {
        return answer;
    }
    let Some(context) = context(&state, &signed_in, None) else {
        return layout::not_found(Some(&signed_in));
    };
    let arguments = json!({"id": query.id, "version": query.version});
    let shown = toolset
        .render_call(DELETE_CALENDAR_EVENT, &arguments, &context)
        .await
        .unwrap_or_default();
    let refused = state
        .calendar
        .may(DELETE_CALENDAR_EVENT, &signed_in.member)
        .err();
    layout::page(
        "Delete an event",
        Some(&signed_in),
        Tab::Calendar,
        html! {
            h1 { "Delete an event" }
            @for line in shown.lines() {
                p { (line) }
            }
            @if let Some(why) = &refused {
                p.notice role="status" { (layout::upper_first(why)) "." }
            } @else {
                form method="post" action="/calendar/delete" {
                    input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                    input type="hidden" name="id" value=(query.id);
                    input type="hidden" name="version" value=(query.version);
                    button type="submit" { "Delete it" }
                }
            }
            p { a href="/calendar" { "Keep it: back to the calendar" } }
        },
    )
}

#[derive(Debug, Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    version: String,
}

/// `POST /calendar/delete`: through `delete_calendar_event`, only the version shown.
pub async fn delete(
    request: HttpRequest,
    state: web::Data<HttpState>,
    form: web::Form<DeleteForm>,
) -> HttpResponse {
    let (signed_in, toolset) =
        match writer(&state, &request, &form.csrf, DELETE_CALENDAR_EVENT).await {
            Ok(found) => found,
            Err(answer) => return answer,
        };
    if let Err(answer) = shown_event(toolset, &signed_in, &form.id, &form.version).await {
        return answer;
    }
    let Some(context) = context(&state, &signed_in, None) else {
        return layout::not_found(Some(&signed_in));
    };
    let arguments = json!({"id": form.id, "version": form.version});
    match toolset
        .call(DELETE_CALENDAR_EVENT, &arguments, &context)
        .await
    {
        Ok(_) => see_other("/calendar?done=deleted"),
        Err(error) => failed(&signed_in, &error),
    }
}
