//! The note tools a profile may enable: `add_or_update_note`, `get_note`, `search_notes`,
//! `list_notes` and `delete_note`, acting only for the asking member (`ToolContext`), and
//! the titles the member may read given to the model each turn when the profile's
//! `include_notes_in_prompt` is on (`ToolsProvider::turn_note`).
//!
//! Who may do what is decided here, not in the port: a member reads family notes and their
//! own private ones (the port shows nothing else), updates any note they read, and deletes
//! their own notes; a family note another member wrote only a parent deletes.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::texts::{self, BoundsError, LIST_LIMIT, PROMPT_TITLES, SEARCH_LIMIT};
use crate::config::{FamilyMember, FamilyRole};
use crate::family::Family;
use crate::llm::ToolSpec;
use crate::ports::{Note, NoteRef, NoteVisibility, NoteWrite, Notes, Saved, StorageError};
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub const ADD_OR_UPDATE_NOTE: &str = "add_or_update_note";
pub const GET_NOTE: &str = "get_note";
pub const SEARCH_NOTES: &str = "search_notes";
pub const LIST_NOTES: &str = "list_notes";
pub const DELETE_NOTE: &str = "delete_note";

/// Every note tool, as `enable_local_tools` names them.
pub const NOTE_TOOL_NAMES: &[&str] = &[
    ADD_OR_UPDATE_NOTE,
    GET_NOTE,
    SEARCH_NOTES,
    LIST_NOTES,
    DELETE_NOTE,
];

/// Whether `member` may delete `note` (one they can read): their own, or as a parent any
/// family note. A private note is only ever read by its author.
pub fn may_delete(member: &FamilyMember, note: &Note) -> bool {
    note.author == member.id
        || (note.visibility == NoteVisibility::Family && member.role == FamilyRole::Parent)
}

/// Whether `member` may make `note` `to` (family or private): only its author, and a family
/// note someone else last wrote stays the family's (making it private would take their
/// words from them).
pub fn may_set_visibility(member: &FamilyMember, note: &Note, to: NoteVisibility) -> bool {
    note.author == member.id
        && (to == NoteVisibility::Family
            || note.visibility == NoteVisibility::Private
            || note.updated_by == member.id)
}

/// One profile's note tools.
pub struct NotesToolset {
    notes: Arc<dyn Notes>,
    family: Arc<Family>,
    /// Give the model the titles the member may read each turn.
    titles_in_prompt: bool,
}

/// A storage refusal of the member's input is theirs to correct; anything else failed.
fn storage(tool: &str, error: StorageError) -> ToolError {
    match error {
        StorageError::Invalid(message) => ToolError::invalid(tool, message),
        other => ToolError::failed(tool, other),
    }
}

fn bounds(tool: &str, error: BoundsError) -> ToolError {
    ToolError::invalid(tool, error)
}

fn text_argument<'a>(
    tool: &str,
    arguments: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolError> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        Some(other) => Err(ToolError::invalid(
            tool,
            format!("`{name}` must be a string, got {other}"),
        )),
    }
}

fn required_text<'a>(tool: &str, arguments: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    text_argument(tool, arguments, name)?
        .ok_or_else(|| ToolError::invalid(tool, format!("`{name}` is missing")))
}

/// The note a call names: `id` (`12`, `"12"`, `"#12"`) or else `title`.
fn note_ref(tool: &str, arguments: &Value) -> Result<NoteRef, ToolError> {
    match arguments.get("id") {
        None | Some(Value::Null) => {}
        Some(value) => {
            let number = match value {
                Value::Number(number) => number.as_i64(),
                Value::String(text) => text.trim().trim_start_matches('#').parse().ok(),
                _ => None,
            };
            return number.map(NoteRef::Id).ok_or_else(|| {
                ToolError::invalid(
                    tool,
                    format!("`id` must be a note's number as list_notes shows it, got {value}"),
                )
            });
        }
    }
    match text_argument(tool, arguments, "title")? {
        Some(title) if !title.trim().is_empty() => Ok(NoteRef::Title(
            texts::checked_title(title).map_err(|error| bounds(tool, error))?,
        )),
        _ => Err(ToolError::invalid(
            tool,
            "give the note's `title` or its number as `id`",
        )),
    }
}

/// How a call names a note the member cannot read: as if it did not exist.
fn not_found(which: &NoteRef) -> String {
    match which {
        NoteRef::Id(id) => format!("there is no note #{id} you can read"),
        NoteRef::Title(title) => format!("there is no note {title:?} you can read"),
    }
}

impl NotesToolset {
    pub fn new(notes: Arc<dyn Notes>, family: Arc<Family>, titles_in_prompt: bool) -> Self {
        NotesToolset {
            notes,
            family,
            titles_in_prompt,
        }
    }

    fn asking(&self, tool: &str, context: &ToolContext) -> Result<FamilyMember, ToolError> {
        self.family
            .member(context.member_id.as_str())
            .ok_or_else(|| {
                ToolError::failed(
                    tool,
                    format!("{} is not a family member", context.member_id),
                )
            })
    }

    async fn add_or_update(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let tool = ADD_OR_UPDATE_NOTE;
        let member = self.asking(tool, context)?;
        let title = texts::checked_title(required_text(tool, arguments, "title")?)
            .map_err(|error| bounds(tool, error))?;
        let content = required_text(tool, arguments, "content")?;
        texts::checked_content(&title, content).map_err(|error| bounds(tool, error))?;
        let visibility = text_argument(tool, arguments, "visibility")?
            .filter(|text| !text.trim().is_empty())
            .map(texts::visibility)
            .transpose()
            .map_err(|error| bounds(tool, error))?;
        let saved = self
            .notes
            .save(&NoteWrite {
                title,
                content: content.to_string(),
                visibility,
                writer: member.id.clone(),
                at_ms: crate::clock::now_ms(),
            })
            .await
            .map_err(|error| storage(tool, error))?;
        let updated = matches!(saved, Saved::Updated(_));
        let note = saved.note();
        tracing::info!(
            member = %member.id,
            note = note.id,
            visibility = note.visibility.as_str(),
            updated,
            "note saved"
        );
        Ok(texts::saved_text(note, updated))
    }

    async fn get(&self, arguments: &Value, context: &ToolContext) -> Result<String, ToolError> {
        let tool = GET_NOTE;
        let member = self.asking(tool, context)?;
        let which = note_ref(tool, arguments)?;
        match self
            .notes
            .get(&member.id, &which)
            .await
            .map_err(|error| storage(tool, error))?
        {
            Some(note) => Ok(texts::note_text(&note, &self.family)),
            None => Err(ToolError::invalid(
                tool,
                format!("{}; list_notes shows the titles", not_found(&which)),
            )),
        }
    }

    async fn search(&self, arguments: &Value, context: &ToolContext) -> Result<String, ToolError> {
        let tool = SEARCH_NOTES;
        let member = self.asking(tool, context)?;
        let query = required_text(tool, arguments, "query")?;
        texts::checked_query(query).map_err(|error| bounds(tool, error))?;
        let words = crate::ports::search_words(query).map_err(|error| storage(tool, error))?;
        let hits = self
            .notes
            .search(&member.id, query, SEARCH_LIMIT)
            .await
            .map_err(|error| storage(tool, error))?;
        Ok(texts::hits_text(query, &hits, &words))
    }

    async fn list(&self, context: &ToolContext) -> Result<String, ToolError> {
        let tool = LIST_NOTES;
        let member = self.asking(tool, context)?;
        let list = self
            .notes
            .list(&member.id, LIST_LIMIT)
            .await
            .map_err(|error| storage(tool, error))?;
        Ok(texts::list_text(&list, &self.family))
    }

    async fn delete(&self, arguments: &Value, context: &ToolContext) -> Result<String, ToolError> {
        let tool = DELETE_NOTE;
        let member = self.asking(tool, context)?;
        let which = note_ref(tool, arguments)?;
        let Some(note) = self
            .notes
            .get(&member.id, &which)
            .await
            .map_err(|error| storage(tool, error))?
        else {
            return Err(ToolError::invalid(
                tool,
                format!("{}; list_notes shows the titles", not_found(&which)),
            ));
        };
        if !may_delete(&member, &note) {
            tracing::info!(member = %member.id, note = note.id, "note delete refused");
            return Err(ToolError::failed(
                tool,
                format!(
                    "only its author ({}) or a parent may delete the family note \"{}\"; \
                     it was not deleted",
                    self.family.display_name(&note.author),
                    note.title
                ),
            ));
        }
        // By number: the note whose rights were just checked, not another of that title.
        match self
            .notes
            .delete(&member.id, &NoteRef::Id(note.id))
            .await
            .map_err(|error| storage(tool, error))?
        {
            Some(deleted) => {
                tracing::info!(member = %member.id, note = deleted.id, "note deleted");
                Ok(texts::deleted_text(&deleted))
            }
            None => Err(ToolError::invalid(
                tool,
                format!("{} any more", not_found(&which)),
            )),
        }
    }
}

#[async_trait]
impl ToolsProvider for NotesToolset {
    async fn tools(&self) -> Vec<ToolSpec> {
        let title = json!({"type": "string", "description": "The note's title (any case)."});
        let id = json!({"type": "integer", "description": "The note's number, as list_notes and search_notes show it; instead of title."});
        vec![
            ToolSpec {
                name: ADD_OR_UPDATE_NOTE.into(),
                description: "Save a note: a note with this title the member can read is updated (titles compare case-insensitively), else a new one is added. Family notes are read by everyone; private ones only by the member.".into(),
                parameters: json!({"type": "object", "properties": {
                    "title": {"type": "string", "description": "A short title, at most 200 characters, e.g. Wifi."},
                    "content": {"type": "string", "description": "The whole text of the note (it replaces the old one), at most 20000 characters."},
                    "visibility": {"type": "string", "enum": ["family", "private"], "description": "Optional: private when only the member may read it; a new note is family otherwise."}
                }, "required": ["title", "content"]}),
            },
            ToolSpec {
                name: GET_NOTE.into(),
                description: "Read one note in full, by its title or number.".into(),
                parameters: json!({"type": "object", "properties": {"title": title, "id": id}}),
            },
            ToolSpec {
                name: SEARCH_NOTES.into(),
                description: "Find notes by words of their title or content, best first, each with a snippet.".into(),
                parameters: json!({"type": "object", "properties": {"query": {"type": "string", "description": "A few words to look for."}}, "required": ["query"]}),
            },
            ToolSpec {
                name: LIST_NOTES.into(),
                description: "List the notes the member can read, last written first.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
            ToolSpec {
                name: DELETE_NOTE.into(),
                description: "Delete a note by its title or number. A family note written by someone else may be deleted only by a parent.".into(),
                parameters: json!({"type": "object", "properties": {"title": title, "id": id}}),
            },
        ]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        match name {
            ADD_OR_UPDATE_NOTE => self.add_or_update(arguments, context).await,
            GET_NOTE => self.get(arguments, context).await,
            SEARCH_NOTES => self.search(arguments, context).await,
            LIST_NOTES => self.list(context).await,
            DELETE_NOTE => self.delete(arguments, context).await,
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn turn_note(&self, context: &ToolContext) -> Option<String> {
        if !self.titles_in_prompt {
            return None;
        }
        match self.notes.list(&context.member_id, PROMPT_TITLES).await {
            Ok(list) => texts::prompt_titles(&list),
            Err(error) => {
                // The turn goes on without the titles; the model can still list them.
                tracing::warn!(%error, member = %context.member_id, "note titles not read");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FamilyMember;
    use crate::storage::in_memory::InMemoryStore;

    fn member(id: &str, role: FamilyRole) -> FamilyMember {
        FamilyMember {
            id: id.parse().unwrap(),
            name: None,
            telegram_user_id: None,
            matrix_user_id: None,
            role,
            timezone: None,
        }
    }

    fn context(member: &str) -> ToolContext {
        ToolContext {
            member_id: member.parse().unwrap(),
            conversation_key: "http:family".parse().unwrap(),
            profile_id: "default".into(),
            question_timeout: std::time::Duration::from_secs(60),
            idempotency_key: None,
        }
    }

    fn toolset(titles_in_prompt: bool) -> NotesToolset {
        let family = Family::new(&[
            member("alice", FamilyRole::Parent),
            member("carol", FamilyRole::Parent),
            member("bob", FamilyRole::Child),
        ]);
        NotesToolset::new(
            Arc::new(InMemoryStore::default()),
            Arc::new(family),
            titles_in_prompt,
        )
    }

    async fn call(tools: &NotesToolset, who: &str, name: &str, arguments: Value) -> String {
        match tools.call(name, &arguments, &context(who)).await {
            Ok(text) => text,
            Err(error) => format!("error: {error}"),
        }
    }

    #[tokio::test]
    async fn a_child_deletes_their_own_notes_and_a_parent_any_family_note() {
        let tools = toolset(false);
        let wifi = json!({"title": "Wifi", "content": "hearth-rocks"});
        assert_eq!(
            call(&tools, "alice", ADD_OR_UPDATE_NOTE, wifi).await,
            "Saved the family note \"Wifi\" (added). It is note #1."
        );
        // Any member updates a family note; the title compares whatever its case.
        let updated = call(
            &tools,
            "bob",
            ADD_OR_UPDATE_NOTE,
            json!({"title": " WIFI ", "content": "new password"}),
        )
        .await;
        assert_eq!(
            updated,
            "Saved the family note \"WIFI\" (updated). It is note #1."
        );
        let read = call(&tools, "carol", GET_NOTE, json!({"id": "#1"})).await;
        assert!(
            read.contains("written by alice, last changed by bob")
                && read.ends_with("new password"),
            "{read}"
        );
        let refused = call(&tools, "bob", DELETE_NOTE, json!({"title": "wifi"})).await;
        assert!(
            refused.contains("only its author (alice) or a parent may delete"),
            "{refused}"
        );
        call(
            &tools,
            "bob",
            ADD_OR_UPDATE_NOTE,
            json!({"title": "Lego", "content": "bricks"}),
        )
        .await;
        assert_eq!(
            call(&tools, "bob", DELETE_NOTE, json!({"title": "lego"})).await,
            "Deleted the family note \"Lego\" (#2)."
        );
        assert_eq!(
            call(&tools, "carol", DELETE_NOTE, json!({"id": 1})).await,
            "Deleted the family note \"WIFI\" (#1)."
        );
    }

    #[tokio::test]
    async fn another_member_s_private_note_is_as_if_it_did_not_exist() {
        let tools = toolset(true);
        call(
            &tools,
            "alice",
            ADD_OR_UPDATE_NOTE,
            json!({"title": "Alarm code", "content": "4711", "visibility": "private"}),
        )
        .await;
        call(
            &tools,
            "alice",
            ADD_OR_UPDATE_NOTE,
            json!({"title": "Wifi", "content": "hearth-rocks"}),
        )
        .await;
        for (name, arguments) in [
            (GET_NOTE, json!({"title": "alarm code"})),
            (GET_NOTE, json!({"id": 1})),
            (DELETE_NOTE, json!({"id": 1})),
        ] {
            let answer = call(&tools, "carol", name, arguments).await;
            assert!(answer.contains("there is no note"), "{name}: {answer}");
        }
        let found = call(&tools, "carol", SEARCH_NOTES, json!({"query": "4711"})).await;
        assert_eq!(found, "No note you can read matches \"4711\".");
        let listed = call(&tools, "carol", LIST_NOTES, json!({})).await;
        assert!(!listed.contains("Alarm"), "{listed}");
        assert!(listed.contains("\"Wifi\""), "{listed}");
        // Carol's own private "Alarm code" is another note than Alice's.
        let own = call(
            &tools,
            "carol",
            ADD_OR_UPDATE_NOTE,
            json!({"title": "alarm code", "content": "1234", "visibility": "private"}),
        )
        .await;
        assert_eq!(
            own,
            "Saved the private note \"alarm code\" (added). It is note #3."
        );
        let titles = tools.turn_note(&context("carol")).await.unwrap();
        assert!(
            titles.contains("\"alarm code\"") && titles.contains("\"Wifi\""),
            "{titles}"
        );
        assert!(!titles.contains("Alarm code"), "{titles}");
        assert_eq!(toolset(false).turn_note(&context("carol")).await, None);
        let alices = call(&tools, "alice", GET_NOTE, json!({"title": "Alarm Code"})).await;
        assert!(alices.ends_with("4711"), "{alices}");
    }

    #[tokio::test]
    async fn bad_arguments_are_refused_naming_the_value() {
        let tools = toolset(false);
        let long = call(
            &tools,
            "alice",
            ADD_OR_UPDATE_NOTE,
            json!({"title": "t".repeat(201), "content": "x"}),
        )
        .await;
        assert!(long.contains("201 characters"), "{long}");
        let visibility = call(
            &tools,
            "alice",
            ADD_OR_UPDATE_NOTE,
            json!({"title": "t", "content": "x", "visibility": "secret"}),
        )
        .await;
        assert!(visibility.contains("\"secret\""), "{visibility}");
        let empty = call(&tools, "alice", SEARCH_NOTES, json!({"query": " \"*- "})).await;
        assert!(empty.contains("no words to look for"), "{empty}");
        let nothing = call(&tools, "alice", GET_NOTE, json!({})).await;
        assert!(nothing.contains("`title`"), "{nothing}");
    }
}
