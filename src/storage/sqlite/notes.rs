//! `Notes` on SQLite: table `notes`, and `notes_fts`, an FTS5 index of titles and contents
//! kept in step by triggers (migration 0014), ranked by bm25 with a title's words weighing
//! more than a content's.
//!
//! A member's words never reach FTS5 as query syntax: `ports::search_words` keeps only runs
//! of letters and digits, and each goes in as a quoted string (the last one as a prefix),
//! so quotes, `*`, `NEAR(`, `OR`, `-` and `col:` are words or separators, never operators.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::{SqliteStore, database_error, id_column};
use crate::ids::MemberId;
use crate::ports::{
    Note, NoteList, NoteRef, NoteVisibility, NoteWrite, Notes, Saved, StorageError, note_title_key,
    search_words,
};

// bm25's column weights: a word in a title counts ten times one in a content.
macro_rules! columns {
    () => {
        "notes.id, notes.title, notes.content, notes.visibility, notes.author, \
         notes.updated_by, notes.created_at_ms, notes.updated_at_ms"
    };
}

/// What a reader may read: the family's notes and their own private ones (`?`: the reader).
macro_rules! readable {
    () => {
        "(notes.visibility = 'family' OR notes.author = ?)"
    };
}

/// The note a title names for a reader (`?`: the title key, the reader): their private
/// one first, then the family's.
macro_rules! by_title {
    () => {
        concat!(
            "SELECT notes.id FROM notes WHERE notes.title_key = ? AND ",
            readable!(),
            " ORDER BY notes.visibility = 'private' DESC LIMIT 1"
        )
    };
}

/// The note a number names, if the reader may read it (`?`: the number, the reader).
macro_rules! by_id {
    () => {
        concat!(
            "SELECT notes.id FROM notes WHERE notes.id = ? AND ",
            readable!()
        )
    };
}

const GET_BY_TITLE: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM notes WHERE notes.id = (",
    by_title!(),
    ")"
);
const GET_BY_ID: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM notes WHERE notes.id = (",
    by_id!(),
    ")"
);
const DELETE_BY_TITLE: &str = concat!(
    "DELETE FROM notes WHERE notes.id = (",
    by_title!(),
    ") RETURNING ",
    columns!()
);
const DELETE_BY_ID: &str = concat!(
    "DELETE FROM notes WHERE notes.id = (",
    by_id!(),
    ") RETURNING ",
    columns!()
);
/// The existing note a save updates (see `NoteWrite::visibility`; `?`: the title key, then
/// the writer except for `FIND_FAMILY`).
const FIND_ANY: &str = by_title!();
const FIND_FAMILY: &str =
    "SELECT notes.id FROM notes WHERE notes.title_key = ? AND notes.visibility = 'family'";
const FIND_PRIVATE: &str = "SELECT notes.id FROM notes WHERE notes.title_key = ? \
     AND notes.visibility = 'private' AND notes.author = ?";
const UPDATE: &str = concat!(
    "UPDATE notes SET title = ?, content = ?, updated_by = ?, updated_at_ms = ? \
     WHERE notes.id = ? RETURNING ",
    columns!()
);
const INSERT: &str = concat!(
    "INSERT INTO notes (title, title_key, content, visibility, author, updated_by, \
     created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ",
    columns!()
);
/// Ranked by bm25 with a title's words weighing ten times a content's, then newest.
const SEARCH: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM notes_fts JOIN notes ON notes.id = notes_fts.rowid \
     WHERE notes_fts MATCH ? AND ",
    readable!(),
    " ORDER BY bm25(notes_fts, 10.0, 1.0), notes.updated_at_ms DESC, notes.id DESC LIMIT ?"
);
const LIST: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM notes WHERE ",
    readable!(),
    " ORDER BY notes.updated_at_ms DESC, notes.id DESC LIMIT ?"
);
const COUNT: &str = concat!("SELECT COUNT(*) FROM notes WHERE ", readable!());

fn note_from_row(row: &SqliteRow) -> Result<Note, StorageError> {
    Ok(Note {
        id: row.get("id"),
        title: row.get("title"),
        content: row.get("content"),
        visibility: NoteVisibility::parse(row.get::<&str, _>("visibility"))?,
        author: id_column(row, "notes", "author")?,
        updated_by: id_column(row, "notes", "updated_by")?,
        created_at_ms: row.get("created_at_ms"),
        updated_at_ms: row.get("updated_at_ms"),
    })
}

/// How many of the searched words a note must hold, tier by tier: every one; then, for
/// three words or more, all but one; then any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holding {
    Every,
    AllButOne,
    Any,
}

/// The tiers a search of `words` goes through until one finds something. All-but-one comes
/// before any word because it is both what a member means by a long query and far cheaper:
/// an any-word query ranks nearly every note for common words.
fn tiers(words: &[String]) -> &'static [Holding] {
    match words.len() {
        0 | 1 => &[Holding::Every],
        2 => &[Holding::Every, Holding::Any],
        _ => &[Holding::Every, Holding::AllButOne, Holding::Any],
    }
}

/// The FTS5 query of `words` for a tier: each word a quoted string, the last also matching
/// the start of a word.
fn fts_query(words: &[String], holding: Holding) -> String {
    let last = words.len().saturating_sub(1);
    let terms: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(index, word)| {
            // Words hold letters and digits only; doubling quotes keeps that true anyway.
            let quoted = format!("\"{}\"", word.replace('"', "\"\""));
            if index == last { quoted + "*" } else { quoted }
        })
        .collect();
    match holding {
        Holding::Every => terms.join(" "),
        Holding::Any => terms.join(" OR "),
        Holding::AllButOne => (0..terms.len())
            .map(|left_out| {
                let kept: Vec<&str> = (0..terms.len())
                    .filter(|index| *index != left_out)
                    .map(|index| terms[index].as_str())
                    .collect();
                format!("({})", kept.join(" "))
            })
            .collect::<Vec<_>>()
            .join(" OR "),
    }
}

/// The statement of `which` (one of `by_title`, `by_id`) bound to it and the reader.
fn bound<'q>(
    by_title: &'static str,
    by_id: &'static str,
    which: &NoteRef,
    reader: &MemberId,
) -> Result<sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>, StorageError> {
    let query = match which {
        NoteRef::Title(title) => sqlx::query(by_title).bind(note_title_key(title)?),
        NoteRef::Id(id) => sqlx::query(by_id).bind(*id),
    };
    Ok(query.bind(reader.to_string()))
}

#[async_trait]
impl Notes for SqliteStore {
    async fn save(&self, write: &NoteWrite) -> Result<Saved, StorageError> {
        let title_key = note_title_key(&write.title)?;
        let write = NoteWrite {
            title: write.title.trim().to_owned(),
            ..write.clone()
        };
        // Two statements (find, then update or add): a savepoint keeps them one change.
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let find = match write.visibility {
                        None => sqlx::query_scalar(FIND_ANY)
                            .bind(&title_key)
                            .bind(write.writer.as_str()),
                        Some(NoteVisibility::Family) => {
                            sqlx::query_scalar(FIND_FAMILY).bind(&title_key)
                        }
                        Some(NoteVisibility::Private) => sqlx::query_scalar(FIND_PRIVATE)
                            .bind(&title_key)
                            .bind(write.writer.as_str()),
                    };
                    let existing: Option<i64> = find
                        .fetch_optional(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    if let Some(id) = existing {
                        let row = sqlx::query(UPDATE)
                            .bind(&write.title)
                            .bind(&write.content)
                            .bind(write.writer.as_str())
                            .bind(write.at_ms)
                            .bind(id)
                            .fetch_one(&mut *connection)
                            .await
                            .map_err(database_error)?;
                        return Ok(Saved::Updated(note_from_row(&row)?));
                    }
                    let row = sqlx::query(INSERT)
                        .bind(&write.title)
                        .bind(&title_key)
                        .bind(&write.content)
                        .bind(write.visibility.unwrap_or_default().as_str())
                        .bind(write.writer.as_str())
                        .bind(write.writer.as_str())
                        .bind(write.at_ms)
                        .bind(write.at_ms)
                        .fetch_one(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    Ok(Saved::Added(note_from_row(&row)?))
                })
            })
            .await
    }

    async fn get(&self, reader: &MemberId, which: &NoteRef) -> Result<Option<Note>, StorageError> {
        let row = bound(GET_BY_TITLE, GET_BY_ID, which, reader)?
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(note_from_row).transpose()
    }

    async fn search(
        &self,
        reader: &MemberId,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Note>, StorageError> {
        let words = search_words(query)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        for holding in tiers(&words) {
            let rows = sqlx::query(SEARCH)
                .bind(fts_query(&words, *holding))
                .bind(reader.as_str())
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .map_err(database_error)?;
            if !rows.is_empty() {
                return rows.iter().map(note_from_row).collect();
            }
        }
        Ok(Vec::new())
    }

    async fn list(&self, reader: &MemberId, limit: usize) -> Result<NoteList, StorageError> {
        let rows = sqlx::query(LIST)
            .bind(reader.as_str())
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(database_error)?;
        let total: i64 = sqlx::query_scalar(COUNT)
            .bind(reader.as_str())
            .fetch_one(&self.pool)
            .await
            .map_err(database_error)?;
        Ok(NoteList {
            notes: rows.iter().map(note_from_row).collect::<Result<_, _>>()?,
            total: u64::try_from(total).unwrap_or(0),
        })
    }

    async fn set_visibility(
        &self,
        author: &MemberId,
        id: i64,
        visibility: NoteVisibility,
        at_ms: i64,
    ) -> Result<Option<Note>, StorageError> {
        let author = author.clone();
        // Two statements (the title's place checked, then the change): one savepoint.
        self.writer
            .run_atomically(move |connection| {
                Box::pin(async move {
                    let taken: Option<String> = sqlx::query_scalar(
                        "SELECT other.title FROM notes AS this JOIN notes AS other \
                         ON other.title_key = this.title_key AND other.id != this.id \
                         AND other.visibility = ?1 \
                         AND (?1 = 'family' OR other.author = this.author) \
                         WHERE this.id = ?2 AND this.author = ?3",
                    )
                    .bind(visibility.as_str())
                    .bind(id)
                    .bind(author.as_str())
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    if let Some(title) = taken {
                        return Err(StorageError::Invalid(format!(
                            "a {} note titled {title:?} is there already",
                            visibility.as_str()
                        )));
                    }
                    let row = sqlx::query(concat!(
                        "UPDATE notes SET visibility = ?, updated_at_ms = ? \
                         WHERE id = ? AND author = ? RETURNING ",
                        columns!()
                    ))
                    .bind(visibility.as_str())
                    .bind(at_ms)
                    .bind(id)
                    .bind(author.as_str())
                    .fetch_optional(&mut *connection)
                    .await
                    .map_err(database_error)?;
                    row.as_ref().map(note_from_row).transpose()
                })
            })
            .await
    }

    async fn delete(
        &self,
        reader: &MemberId,
        which: &NoteRef,
    ) -> Result<Option<Note>, StorageError> {
        let delete = bound(DELETE_BY_TITLE, DELETE_BY_ID, which, reader)?;
        // One statement: the note is found and deleted at once.
        self.writer
            .run(move |connection| {
                Box::pin(async move {
                    let row = delete
                        .fetch_optional(&mut *connection)
                        .await
                        .map_err(database_error)?;
                    row.as_ref().map(note_from_row).transpose()
                })
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_strings_never_operators() {
        let words = search_words("wifi \"pass* NEAR( a OR -x title:").unwrap();
        assert_eq!(
            fts_query(&words, Holding::Every),
            "\"wifi\" \"pass\" \"near\" \"a\" \"or\" \"x\" \"title\"*"
        );
        assert_eq!(
            fts_query(&search_words("garden plan").unwrap(), Holding::Any),
            "\"garden\" OR \"plan\"*"
        );
        assert_eq!(
            fts_query(&search_words("roses by fence").unwrap(), Holding::AllButOne),
            "(\"by\" \"fence\"*) OR (\"roses\" \"fence\"*) OR (\"roses\" \"by\")"
        );
        assert_eq!(
            tiers(&search_words("garden plan").unwrap()),
            [Holding::Every, Holding::Any]
        );
    }
}
