//! The frame of every page: head (the stylesheet and script hearth serves itself, nothing
//! from elsewhere), the navigation of a signed-in member, a notice, and the answers that
//! are pages (`303` to another, `404`, the refusal of a form without its token).

use actix_web::http::header;
use actix_web::{HttpResponse, http::StatusCode};
use maud::{DOCTYPE, Markup, html};

use super::session::SignedIn;

/// Which page of the navigation is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Chat,
    Waiting,
    Reminders,
    Calendar,
    Notes,
    Family,
    Settings,
    None,
}

/// A whole page.
pub fn page(title: &str, signed_in: Option<&SignedIn>, tab: Tab, body: Markup) -> HttpResponse {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · hearth" }
                link rel="stylesheet" href="/assets/hearth.css";
                script src="/assets/hearth.js" defer {}
            }
            body {
                header {
                    a.brand href="/" { "hearth" }
                    @if let Some(signed_in) = signed_in {
                        nav aria-label="Pages" {
                            (nav_link("/chat", "Chat", tab == Tab::Chat))
                            (nav_link("/waiting", "Waiting for you", tab == Tab::Waiting))
                            (nav_link("/reminders", "Reminders", tab == Tab::Reminders))
                            (nav_link("/calendar", "Calendar", tab == Tab::Calendar))
                            (nav_link("/notes", "Notes", tab == Tab::Notes))
                            @if signed_in.is_parent() {
                                (nav_link("/family", "Family", tab == Tab::Family))
                            }
                            (nav_link("/settings", "Settings", tab == Tab::Settings))
                        }
                        form.sign-out method="post" action="/sign-out" {
                            input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                            span.who { (signed_in.member.name.as_deref().unwrap_or(signed_in.member.id.as_str())) }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    };
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(markup.into_string())
}

fn nav_link(href: &str, label: &str, current: bool) -> Markup {
    html! {
        @if current {
            a href=(href) aria-current="page" { (label) }
        } @else {
            a href=(href) { (label) }
        }
    }
}

/// `303 See Other` to `location` (after a form, so a reload does not post it again).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location))
        .finish()
}

/// A page that says what went wrong, with `status`.
pub fn problem(status: StatusCode, signed_in: Option<&SignedIn>, text: &str) -> HttpResponse {
    let mut response = page(
        "Not here",
        signed_in,
        Tab::None,
        html! {
            h1 { "Not here" }
            p.notice role="alert" { (text) }
            p { a href="/" { "Back to hearth" } }
        },
    );
    *response.status_mut() = status;
    response
}

/// What every URL that is not the member's answers: the same as one that does not exist.
pub fn not_found(signed_in: Option<&SignedIn>) -> HttpResponse {
    problem(
        StatusCode::NOT_FOUND,
        signed_in,
        "There is nothing here for you.",
    )
}

/// A form posted without its token (another site's, or an old page's).
pub fn forged_form(signed_in: Option<&SignedIn>) -> HttpResponse {
    problem(
        StatusCode::FORBIDDEN,
        signed_in,
        "This form has expired or did not come from this page. Reload the page and try again.",
    )
}

/// `text` with its first letter upper case: an error's text said as a sentence.
pub fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A short notice above a page's content.
pub fn notice(text: Option<&str>) -> Markup {
    html! {
        @if let Some(text) = text {
            p.notice role="status" { (text) }
        }
    }
}
