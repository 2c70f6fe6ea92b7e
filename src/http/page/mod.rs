//! The family's web page, served at `/` by the same server as the API: signing in with a
//! code from the member's own chat or a one-time link (`sign_in.rs`), joining with an
//! invite code or signing in with a `/link` code (`join.rs`), the session and its
//! CSRF token (`session.rs`), the member's web conversation (`chat.rs`) with its reply
//! streamed as it is written (`chat_stream.rs`) and a turn's question as a form
//! (`question.rs`), what waits for
//! their approval on every channel (`waiting.rs`), their reminders with Done, Snooze and
//! Cancel (`reminders.rs`), added and changed with forms (`reminder_forms.rs`), the coming
//! events of the profile's calendars with forms to add, change and delete one through the
//! calendar tools' code (`calendar.rs`, its forms and who may post them in
//! `calendar_forms.rs`), the family's notes and their private ones (`notes.rs`), the
//! family for parents: members, invites, roles (`family.rs`) and what hearth did: intent
//! decisions and family script runs (`family_activity.rs`), their sessions
//! (`settings.rs`), the frame every page shares (`layout.rs`), and the stylesheet and
//! script hearth serves itself (`assets/`): no build step, nothing from another site,
//! usable offline on a home network.
//!
//! Every page is rendered on the server with maud, which escapes what it is given: a
//! message, a prompt or a tool's arguments are shown as text. `SECURITY_HEADERS` forbid
//! inline script, framing and other origins on every answer.

mod calendar;
mod calendar_forms;
mod chat;
mod chat_stream;
mod family;
mod family_activity;
mod join;
mod layout;
mod notes;
mod question;
mod reminder_forms;
mod reminders;
mod session;
mod settings;
mod sign_in;
mod waiting;

use actix_web::{HttpResponse, web};

pub use calendar_forms::WebCalendar;

/// Sent with every answer of the server (the API's JSON included).
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
];

const SCRIPT: &str = include_str!("assets/hearth.js");
const STYLESHEET: &str = include_str!("assets/hearth.css");

/// The page's routes.
pub fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/", web::get().to(sign_in::home))
        .route("/assets/hearth.js", web::get().to(script))
        .route("/assets/hearth.css", web::get().to(stylesheet))
        .route("/sign-in", web::get().to(sign_in::form))
        .route("/sign-in", web::post().to(sign_in::ask_code))
        .route("/sign-in/code", web::get().to(sign_in::code_form))
        .route("/sign-in/code", web::post().to(sign_in::check_code))
        .route("/sign-in/link/{secret}", web::get().to(sign_in::link_form))
        .route("/sign-in/link", web::post().to(sign_in::use_link))
        .route("/sign-out", web::post().to(sign_in::sign_out))
        .route("/join", web::get().to(join::form))
        .route("/join", web::post().to(join::join))
        .route("/chat", web::get().to(chat::page))
        .route("/chat", web::post().to(chat::send))
        .route("/chat/answer", web::post().to(question::answer))
        .route("/chat/log", web::get().to(chat::log_fragment))
        .route("/chat/messages/{id}", web::get().to(chat::message_status))
        .route("/waiting", web::get().to(waiting::page))
        .route("/waiting/{id}", web::post().to(waiting::answer))
        .route("/reminders", web::get().to(reminders::page))
        .route("/reminders/new", web::get().to(reminder_forms::new_form))
        .route("/reminders/new", web::post().to(reminder_forms::add))
        .route(
            "/reminders/{schedule}/edit",
            web::get().to(reminder_forms::edit_form),
        )
        .route(
            "/reminders/{schedule}/edit",
            web::post().to(reminder_forms::edit),
        )
        .route(
            "/reminders/{occurrence}/done",
            web::post().to(reminders::done),
        )
        .route(
            "/reminders/{occurrence}/snooze",
            web::post().to(reminders::snooze),
        )
        .route(
            "/reminders/{schedule}/cancel",
            web::post().to(reminders::cancel),
        )
        .route("/calendar", web::get().to(calendar::page))
        .route("/calendar", web::post().to(calendar::add))
        .route("/calendar/event", web::get().to(calendar::edit_form))
        .route("/calendar/event", web::post().to(calendar::edit))
        .route("/calendar/delete", web::get().to(calendar::delete_form))
        .route("/calendar/delete", web::post().to(calendar::delete))
        .route("/notes", web::get().to(notes::page))
        .route("/notes", web::post().to(notes::save))
        .route("/notes/{id}", web::get().to(notes::note))
        .route("/notes/{id}/delete", web::post().to(notes::delete))
        .route(
            "/notes/{id}/visibility",
            web::post().to(notes::set_visibility),
        )
        .route("/family", web::get().to(family::page))
        .route("/family/activity", web::get().to(family_activity::page))
        .route("/family/invite", web::post().to(family::invite))
        .route("/family/{member}/{change}", web::post().to(family::change))
        .route("/settings", web::get().to(settings::page))
        .route("/settings", web::post().to(settings::save))
        .route(
            "/settings/sessions/{id}/end",
            web::post().to(settings::end_session),
        );
}

async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header(("Cache-Control", "no-cache"))
        .body(SCRIPT)
}

async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header(("Cache-Control", "no-cache"))
        .body(STYLESHEET)
}
