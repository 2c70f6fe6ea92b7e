//! Notes: the family's notes and the member's own private ones, listed last written first
//! or searched by their words (`?q=`), each read in full at `/notes/{id}`, added or updated
//! by title, and deleted. By the same rules as the note tools (`notes::`): every read goes
//! through `ports::Notes` with the signed-in member as the reader, so another member's
//! private note is never listed, found, shown or deleted (`404`, as a note that does not
//! exist); titles, contents and searches have the tools' bounds; only a note's author, or
//! a parent for a family note, deletes it (`notes::may_delete`).
//!
//! A save names its note by title and visibility as `add_or_update_note` does: a note of
//! that title the member may read is updated, else one is added. A note's visibility is
//! not changed here (saving a family note as private would add a second note).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{self, Tab, notice, see_other};
use super::session::{self, SignedIn};
use crate::http::HttpState;
use crate::local_time::phrasing;
use crate::notes::{
    LIST_LIMIT, MAX_CONTENT_CHARS, MAX_QUERY_CHARS, MAX_TITLE_CHARS, SEARCH_LIMIT, checked_content,
    checked_query, checked_title, may_delete, may_set_visibility, snippet, visibility,
};
use crate::ports::{Note, NoteRef, NoteVisibility, NoteWrite, Saved, StorageError, search_words};

/// A note's form as filled in: empty for a new note, the note's for a change, or what was
/// posted when it was refused.
#[derive(Debug, Default)]
struct Draft {
    title: String,
    content: String,
    visibility: NoteVisibility,
    /// A change of an existing note keeps its visibility.
    keeps_visibility: bool,
}

fn when(signed_in: &SignedIn, ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|at| phrasing::say_instant(at, signed_in.zone(), crate::clock::now()))
        .unwrap_or_default()
}

fn storage_problem(signed_in: &SignedIn, error: StorageError) -> HttpResponse {
    tracing::error!(%error, "notes not read or written");
    layout::problem(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(signed_in),
        "hearth cannot reach the notes just now; try again in a moment.",
    )
}

/// The form that adds or updates a note.
fn note_form(signed_in: &SignedIn, draft: &Draft) -> Markup {
    let private = draft.visibility == NoteVisibility::Private;
    html! {
        form.note method="post" action="/notes" {
            input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
            label for="note-title" { "Title" }
            input id="note-title" name="title" required maxlength=(MAX_TITLE_CHARS) value=(draft.title);
            label for="note-content" { "Content" }
            textarea id="note-content" name="content" rows="8" required maxlength=(MAX_CONTENT_CHARS) { (draft.content) }
            @if draft.keeps_visibility {
                input type="hidden" name="visibility" value=(draft.visibility.as_str());
                p.hint { @if private { "A private note: only you read it." } @else { "A family note: everyone in the family reads it." } }
            } @else {
                label for="note-visibility" { "Who reads it" }
                select id="note-visibility" name="visibility" {
                    option value="family" selected[!private] { "The whole family" }
                    option value="private" selected[private] { "Only me" }
                }
            }
            p.hint { "A note you can read with this title is updated; another title adds a new note." }
            button type="submit" { "Save the note" }
        }
    }
}

/// The line of a note in a list or a search, with a snippet of its content for a search.
fn note_item(
    state: &HttpState,
    signed_in: &SignedIn,
    note: &Note,
    words: Option<&[String]>,
) -> Markup {
    html! {
        li {
            a href={ "/notes/" (note.id) } { (note.title) }
            " " span.hint { "(" (note.visibility.as_str()) ", by " (state.family.display_name(&note.author)) ", " (when(signed_in, note.updated_at_ms)) ")" }
            @if let Some(words) = words {
                p.snippet { (snippet(&note.content, words)) }
            }
        }
    }
}

fn search_form(query: &str) -> Markup {
    html! {
        form.search method="get" action="/notes" role="search" {
            label for="note-search" { "Search your notes" }
            input id="note-search" type="search" name="q" maxlength=(MAX_QUERY_CHARS) value=(query);
            button type="submit" { "Search" }
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct NotesQuery {
    q: Option<String>,
    deleted: Option<String>,
}

/// `GET /notes` (`?q=` searches).
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<NotesQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let said = query.deleted.as_deref().map(|_| "The note is deleted.");
    let searched = query.q.as_deref().unwrap_or_default().trim();
    let mut status = StatusCode::OK;
    let found = if searched.is_empty() {
        let list = match state.notes.list(&signed_in.member.id, LIST_LIMIT).await {
            Ok(list) => list,
            Err(error) => return storage_problem(&signed_in, error),
        };
        let more = list.total.saturating_sub(list.notes.len() as u64);
        html! {
            h2 { "Notes you can read" }
            @if list.notes.is_empty() {
                p { "There are no notes you can read yet." }
            }
            ul.notes {
                @for note in &list.notes { (note_item(&state, &signed_in, note, None)) }
            }
            @if more > 0 {
                p.hint { "…and " (more) " more; a search finds them by their words." }
            }
        }
    } else {
        let words = checked_query(searched)
            .map_err(|error| error.to_string())
            .and_then(|()| search_words(searched).map_err(|error| error.to_string()));
        match words {
            Err(refused) => {
                status = StatusCode::BAD_REQUEST;
                html! { p.notice role="alert" { (layout::upper_first(&refused)) "." } }
            }
            Ok(words) => {
                let hits = match state
                    .notes
                    .search(&signed_in.member.id, searched, SEARCH_LIMIT)
                    .await
                {
                    Ok(hits) => hits,
                    Err(error) => return storage_problem(&signed_in, error),
                };
                html! {
                    h2 { "Found for “" (searched) "”" }
                    @if hits.is_empty() {
                        p { "No note you can read matches." }
                    }
                    ul.notes {
                        @for note in &hits { (note_item(&state, &signed_in, note, Some(&words))) }
                    }
                    p { a href="/notes" { "All notes" } }
                }
            }
        }
    };
    let mut response = layout::page(
        "Notes",
        Some(&signed_in),
        Tab::Notes,
        html! {
            h1 { "Notes" }
            (notice(said))
            (search_form(searched))
            (found)
            h2 { "Add a note" }
            (note_form(&signed_in, &Draft::default()))
        },
    );
    *response.status_mut() = status;
    response
}

#[derive(Debug, Deserialize)]
pub struct NoteQuery {
    saved: Option<String>,
}

/// `GET /notes/{id}`: one note the member may read, in full, to change or delete.
pub async fn note(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    query: web::Query<NoteQuery>,
) -> HttpResponse {
    let signed_in = match session::signed_in_page(&state, &request).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let note = match readable(&state, &signed_in, &path).await {
        Ok(note) => note,
        Err(answer) => return answer,
    };
    let said = match query.saved.as_deref() {
        Some("added") => Some("Saved: a new note."),
        Some("updated") => Some("Saved: the note is updated."),
        Some("private") => Some("Now private: only you read it."),
        Some("family") => Some("Now the family's: every member reads it."),
        _ => None,
    };
    let family = &state.family;
    let draft = Draft {
        title: note.title.clone(),
        content: note.content.clone(),
        visibility: note.visibility,
        keeps_visibility: true,
    };
    layout::page(
        &note.title,
        Some(&signed_in),
        Tab::Notes,
        html! {
            p { a href="/notes" { "All notes" } }
            h1 { (note.title) }
            (notice(said))
            p.hint {
                "A " (note.visibility.as_str()) " note, written by " (family.display_name(&note.author))
                @if note.updated_by != note.author { ", last changed by " (family.display_name(&note.updated_by)) }
                ", " (when(&signed_in, note.updated_at_ms)) "."
            }
            div.note-content { (note.content) }
            (visibility_form(&signed_in, &note))
            @if may_delete(&signed_in.member, &note) {
                form method="post" action={ "/notes/" (note.id) "/delete" } {
                    input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                    button.secondary type="submit" { "Delete this note" }
                }
            } @else {
                p.hint { "Only its author (" (family.display_name(&note.author)) ") or a parent may delete it." }
            }
            h2 { "Change it" }
            (note_form(&signed_in, &draft))
        },
    )
}

/// The note `id` names when the member may read it; else the page's `404`.
async fn readable(state: &HttpState, signed_in: &SignedIn, id: &str) -> Result<Note, HttpResponse> {
    let Ok(id) = id.parse::<i64>() else {
        return Err(layout::not_found(Some(signed_in)));
    };
    match state
        .notes
        .get(&signed_in.member.id, &NoteRef::Id(id))
        .await
    {
        Ok(Some(note)) => Ok(note),
        Ok(None) => Err(layout::not_found(Some(signed_in))),
        Err(error) => Err(storage_problem(signed_in, error)),
    }
}

#[derive(Debug, Deserialize)]
pub struct NoteForm {
    /// Left out, it is an empty token: refused like a wrong one.
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    visibility: String,
}

/// The form again with what was posted and why it was refused.
fn refused(signed_in: &SignedIn, body: &NoteForm, content: String, why: &str) -> HttpResponse {
    let draft = Draft {
        title: body.title.clone(),
        content,
        visibility: visibility(&body.visibility).unwrap_or_default(),
        keeps_visibility: false,
    };
    let mut response = layout::page(
        "Notes",
        Some(signed_in),
        Tab::Notes,
        html! {
            h1 { "Notes" }
            p.notice role="alert" { (layout::upper_first(why)) "." }
            (note_form(signed_in, &draft))
            p { a href="/notes" { "All notes" } }
        },
    );
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response
}

/// `POST /notes`: add or update a note by its title, as `add_or_update_note` does.
pub async fn save(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Form<NoteForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    // A browser sends a text area's line breaks as CRLF; kept as the chat's would be.
    let content = body.content.replace("\r\n", "\n");
    let checked = checked_title(&body.title).and_then(|title| {
        checked_content(&title, &content)?;
        Ok((title, visibility(&body.visibility)?))
    });
    let (title, visibility) = match checked {
        Ok(checked) => checked,
        Err(error) => return refused(&signed_in, &body, content, &error.to_string()),
    };
    let saved = state
        .notes
        .save(&NoteWrite {
            title,
            content: content.clone(),
            visibility: Some(visibility),
            writer: signed_in.member.id.clone(),
            at_ms: crate::clock::now_ms(),
        })
        .await;
    match saved {
        Ok(saved) => {
            let updated = matches!(saved, Saved::Updated(_));
            let note = saved.note();
            tracing::info!(
                member = %signed_in.member.id,
                note = note.id,
                visibility = note.visibility.as_str(),
                updated,
                "note saved on the web page"
            );
            let how = if updated { "updated" } else { "added" };
            see_other(&format!("/notes/{}?saved={how}", note.id))
        }
        Err(StorageError::Invalid(why)) => refused(&signed_in, &body, content, &why),
        Err(error) => storage_problem(&signed_in, error),
    }
}

#[derive(Debug, Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /notes/{id}/delete`: a note the member may read and delete.
pub async fn delete(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<DeleteForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let note = match readable(&state, &signed_in, &path).await {
        Ok(note) => note,
        Err(answer) => return answer,
    };
    if !may_delete(&signed_in.member, &note) {
        tracing::info!(member = %signed_in.member.id, note = note.id, "note delete refused");
        return layout::problem(
            StatusCode::FORBIDDEN,
            Some(&signed_in),
            &format!(
                "Only its author ({}) or a parent may delete the family note “{}”; it was not deleted.",
                state.family.display_name(&note.author),
                note.title
            ),
        );
    }
    // By number: the note whose rights were just checked.
    match state
        .notes
        .delete(&signed_in.member.id, &NoteRef::Id(note.id))
        .await
    {
        Ok(Some(deleted)) => {
            tracing::info!(member = %signed_in.member.id, note = deleted.id, "note deleted on the web page");
            see_other("/notes?deleted=1")
        }
        Ok(None) => layout::not_found(Some(&signed_in)),
        Err(error) => storage_problem(&signed_in, error),
    }
}

/// The other visibility, and how its button says it.
fn other_visibility(note: &Note) -> (NoteVisibility, &'static str) {
    match note.visibility {
        NoteVisibility::Family => (NoteVisibility::Private, "Make it private"),
        NoteVisibility::Private => (NoteVisibility::Family, "Share it with the family"),
    }
}

/// The button that turns a note private or the family's, where the member may.
fn visibility_form(signed_in: &SignedIn, note: &Note) -> Markup {
    let (to, label) = other_visibility(note);
    html! {
        @if may_set_visibility(&signed_in.member, note, to) {
            form method="post" action={ "/notes/" (note.id) "/visibility" } {
                input type="hidden" name="csrf" value=(signed_in.session.csrf_token);
                input type="hidden" name="visibility" value=(to.as_str());
                button.secondary type="submit" { (label) }
            }
        }
    }
}

/// `POST /notes/{id}/visibility`: a note of the member's own made `visibility`, by
/// `notes::may_set_visibility`'s rules.
pub async fn set_visibility(
    request: HttpRequest,
    state: web::Data<HttpState>,
    path: web::Path<String>,
    body: web::Form<NoteForm>,
) -> HttpResponse {
    let signed_in = match session::signed_in_form(&state, &request, &body.csrf).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let note = match readable(&state, &signed_in, &path).await {
        Ok(note) => note,
        Err(answer) => return answer,
    };
    let to = match visibility(&body.visibility) {
        Ok(to) => to,
        Err(error) => {
            return layout::problem(
                StatusCode::BAD_REQUEST,
                Some(&signed_in),
                &format!("{}.", layout::upper_first(&error.to_string())),
            );
        }
    };
    if !may_set_visibility(&signed_in.member, &note, to) {
        tracing::info!(member = %signed_in.member.id, note = note.id, "note visibility change refused");
        return layout::problem(
            StatusCode::FORBIDDEN,
            Some(&signed_in),
            &format!(
                "Only its author ({}) may change who reads “{}”, and a family note someone else last changed stays the family's; nothing was changed.",
                state.family.display_name(&note.author),
                note.title
            ),
        );
    }
    match state
        .notes
        .set_visibility(&signed_in.member.id, note.id, to, crate::clock::now_ms())
        .await
    {
        Ok(Some(changed)) => {
            tracing::info!(member = %signed_in.member.id, note = changed.id, visibility = to.as_str(), "note visibility changed on the web page");
            see_other(&format!("/notes/{}?saved={}", changed.id, to.as_str()))
        }
        Ok(None) => layout::not_found(Some(&signed_in)),
        Err(StorageError::Invalid(why)) => layout::problem(
            StatusCode::CONFLICT,
            Some(&signed_in),
            &format!(
                "{}; rename one of them first. Nothing was changed.",
                layout::upper_first(&why)
            ),
        ),
        Err(error) => storage_problem(&signed_in, error),
    }
}
