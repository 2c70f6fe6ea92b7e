//! The family's notes (the domain; storage is `ports::Notes`):
//!
//! - `tools.rs`: the tools a profile enables (`add_or_update_note`, `get_note`,
//!   `search_notes`, `list_notes`, `delete_note`), who may delete which note, and the titles
//!   given to the model each turn when `processing_config.include_notes_in_prompt` is on;
//! - `texts.rs`: the bounds of titles, contents and searches (the tools' and the web
//!   page's `/notes`), and every text the model reads, each bounded.
//!
//! A member reads the family's notes and their own private ones, never another member's
//! private note: the port shows a reader nothing else, and no tool takes another member.

mod texts;
mod tools;

pub use texts::{
    BoundsError, LIST_LIMIT, MAX_CONTENT_CHARS, MAX_QUERY_CHARS, MAX_TITLE_CHARS, PROMPT_CHARS,
    PROMPT_TITLES, SEARCH_LIMIT, checked_content, checked_query, checked_title, snippet,
    visibility,
};
pub use tools::{
    ADD_OR_UPDATE_NOTE, DELETE_NOTE, GET_NOTE, LIST_NOTES, NOTE_TOOL_NAMES, NotesToolset,
    SEARCH_NOTES, may_delete, may_set_visibility,
};
