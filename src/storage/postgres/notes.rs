//! `Notes` on PostgreSQL: table `notes`, searched through its generated `search` column (a
//! tsvector of title and content, the title's words weighted `A`, the content's `B`),
//! ranked by `ts_rank` with a title's words weighing ten times a content's.
//!
//! A member's words never reach `to_tsquery` as query syntax: `ports::search_words` keeps
//! only runs of letters and digits, and each goes in as a quoted lexeme (the last one also
//! as a prefix), so quotes, `*`, `!`, `&`, `|`, `<->` and `:` are separators, never
//! operators. A search goes through the same tiers as on SQLite: notes holding every word;
//! for three words or more, all but one; then any.

use async_trait::async_trait;
use sqlx::Row;
use sqlx::postgres::{PgArguments, PgRow};

use super::{PostgresStore, database_error, id_column};
use crate::ids::MemberId;
use crate::ports::{
    Note, NoteList, NoteRef, NoteVisibility, NoteWrite, Notes, Saved, StorageError, note_title_key,
    search_words,
};

macro_rules! columns {
    () => {
        "notes.id, notes.title, notes.content, notes.visibility, notes.author, \
         notes.updated_by, notes.created_at_ms, notes.updated_at_ms"
    };
}

/// What a reader may read: the family's notes and their own private ones (`$2`: the
/// reader).
macro_rules! readable {
    () => {
        "(notes.visibility = 'family' OR notes.author = $2)"
    };
}

/// The note a title names for a reader (`$1`: the title key, `$2`: the reader): their
/// private one first, then the family's.
macro_rules! by_title {
    () => {
        concat!(
            "SELECT notes.id FROM notes WHERE notes.title_key = $1 AND ",
            readable!(),
            " ORDER BY notes.visibility = 'private' DESC LIMIT 1"
        )
    };
}

/// The note a number names, if the reader may read it (`$1`: the number, `$2`: the reader).
macro_rules! by_id {
    () => {
        concat!(
            "SELECT notes.id FROM notes WHERE notes.id = $1 AND ",
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
/// The existing note a save updates (see `NoteWrite::visibility`; `$1`: the title key,
/// `$2`: the writer except for `FIND_FAMILY`).
const FIND_ANY: &str = by_title!();
const FIND_FAMILY: &str =
    "SELECT notes.id FROM notes WHERE notes.title_key = $1 AND notes.visibility = 'family'";
const FIND_PRIVATE: &str = "SELECT notes.id FROM notes WHERE notes.title_key = $1 \
     AND notes.visibility = 'private' AND notes.author = $2";
const UPDATE: &str = concat!(
    "UPDATE notes SET title = $1, content = $2, updated_by = $3, updated_at_ms = $4 \
     WHERE notes.id = $5 RETURNING ",
    columns!()
);
/// A new note, unless one of its title (for its visibility) was added meanwhile.
const INSERT: &str = concat!(
    "INSERT INTO notes (title, title_key, content, visibility, author, updated_by, \
     created_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
     ON CONFLICT DO NOTHING RETURNING ",
    columns!()
);
/// Ranked with a title's words (`A`) weighing ten times a content's (`B`), then newest
/// (`$1`: the tsquery text, `$2`: the reader, `$3`: the limit).
const SEARCH: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM notes, to_tsquery('simple', $1) AS query WHERE notes.search @@ query AND ",
    readable!(),
    " ORDER BY ts_rank('{0, 0, 0.1, 1.0}'::float4[], notes.search, query) DESC, \
     notes.updated_at_ms DESC, notes.id DESC LIMIT $3"
);
const LIST: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM notes WHERE (notes.visibility = 'family' OR notes.author = $1) \
     ORDER BY notes.updated_at_ms DESC, notes.id DESC LIMIT $2"
);
const COUNT: &str =
    "SELECT COUNT(*) FROM notes WHERE (notes.visibility = 'family' OR notes.author = $1)";

/// How often a save looks again when another process added or deleted the note it found
/// (or did not find) in between.
const SAVE_ATTEMPTS: usize = 3;

fn note_from_row(row: &PgRow) -> Result<Note, StorageError> {
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

/// The tiers a search of `words` goes through until one finds something: all but one
/// before any, as what a member means by a long query.
fn tiers(words: &[String]) -> &'static [Holding] {
    match words.len() {
        0 | 1 => &[Holding::Every],
        2 => &[Holding::Every, Holding::Any],
        _ => &[Holding::Every, Holding::AllButOne, Holding::Any],
    }
}

/// The `to_tsquery` text of `words` for a tier: each word a quoted lexeme, the last also
/// matching the start of a word.
fn ts_query(words: &[String], holding: Holding) -> String {
    let last = words.len().saturating_sub(1);
    let terms: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(index, word)| {
            // Words hold letters and digits only; doubling quotes keeps that true anyway.
            let quoted = format!("'{}'", word.replace('\'', "''"));
            if index == last { quoted + ":*" } else { quoted }
        })
        .collect();
    match holding {
        Holding::Every => terms.join(" & "),
        Holding::Any => terms.join(" | "),
        Holding::AllButOne => (0..terms.len())
            .map(|left_out| {
                let kept: Vec<&str> = (0..terms.len())
                    .filter(|index| *index != left_out)
                    .map(|index| terms[index].as_str())
                    .collect();
                format!("({})", kept.join(" & "))
            })
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// The statement of `which` (one of `by_title`, `by_id`) bound to it and the reader.
fn bound<'q>(
    by_title: &'static str,
    by_id: &'static str,
    which: &NoteRef,
    reader: &MemberId,
) -> Result<sqlx::query::Query<'q, sqlx::Postgres, PgArguments>, StorageError> {
    let query = match which {
        NoteRef::Title(title) => sqlx::query(by_title).bind(note_title_key(title)?),
        NoteRef::Id(id) => sqlx::query(by_id).bind(*id),
    };
    Ok(query.bind(reader.to_string()))
}

impl PostgresStore {
    /// The note `write` updates, if any.
    async fn note_to_update(
        &self,
        write: &NoteWrite,
        title_key: &str,
    ) -> Result<Option<i64>, StorageError> {
        let find = match write.visibility {
            None => sqlx::query_scalar(FIND_ANY)
                .bind(title_key)
                .bind(write.writer.as_str()),
            Some(NoteVisibility::Family) => sqlx::query_scalar(FIND_FAMILY).bind(title_key),
            Some(NoteVisibility::Private) => sqlx::query_scalar(FIND_PRIVATE)
                .bind(title_key)
                .bind(write.writer.as_str()),
        };
        find.fetch_optional(&self.pool)
            .await
            .map_err(database_error)
    }
}

#[async_trait]
impl Notes for PostgresStore {
    async fn set_visibility(
        &self,
        author: &MemberId,
        id: i64,
        visibility: NoteVisibility,
        at_ms: i64,
    ) -> Result<Option<Note>, StorageError> {
        // The note is locked while its title's place in the other visibility is checked,
        // and the unique indexes refuse a note of that title added meanwhile elsewhere.
        let mut transaction = self.pool.begin().await.map_err(database_error)?;
        let taken: Option<String> = sqlx::query_scalar(
            "SELECT other.title FROM notes AS this JOIN notes AS other \
             ON other.title_key = this.title_key AND other.id <> this.id \
             AND other.visibility = $1 AND ($1 = 'family' OR other.author = this.author) \
             WHERE this.id = $2 AND this.author = $3",
        )
        .bind(visibility.as_str())
        .bind(id)
        .bind(author.as_str())
        .fetch_optional(&mut *transaction)
        .await
        .map_err(database_error)?;
        if let Some(title) = taken {
            return Err(StorageError::Invalid(format!(
                "a {} note titled {title:?} is there already",
                visibility.as_str()
            )));
        }
        let row = sqlx::query(concat!(
            "UPDATE notes SET visibility = $1, updated_at_ms = $2 \
             WHERE id = $3 AND author = $4 RETURNING ",
            columns!()
        ))
        .bind(visibility.as_str())
        .bind(at_ms)
        .bind(id)
        .bind(author.as_str())
        .fetch_optional(&mut *transaction)
        .await
        .map_err(database_error)?;
        let note = row.as_ref().map(note_from_row).transpose()?;
        transaction.commit().await.map_err(database_error)?;
        Ok(note)
    }

    async fn save(&self, write: &NoteWrite) -> Result<Saved, StorageError> {
        let title_key = note_title_key(&write.title)?;
        let title = write.title.trim();
        // Find, then update or add, each one statement: when another process deletes the
        // note found, or adds the one not found, in between, the statement writes nothing
        // and the save looks again.
        for _ in 0..SAVE_ATTEMPTS {
            if let Some(id) = self.note_to_update(write, &title_key).await? {
                let row = sqlx::query(UPDATE)
                    .bind(title)
                    .bind(&write.content)
                    .bind(write.writer.as_str())
                    .bind(write.at_ms)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(database_error)?;
                if let Some(row) = row {
                    return Ok(Saved::Updated(note_from_row(&row)?));
                }
                continue;
            }
            let row = sqlx::query(INSERT)
                .bind(title)
                .bind(&title_key)
                .bind(&write.content)
                .bind(write.visibility.unwrap_or_default().as_str())
                .bind(write.writer.as_str())
                .bind(write.writer.as_str())
                .bind(write.at_ms)
                .bind(write.at_ms)
                .fetch_optional(&self.pool)
                .await
                .map_err(database_error)?;
            if let Some(row) = row {
                return Ok(Saved::Added(note_from_row(&row)?));
            }
        }
        Err(StorageError::Database(format!(
            "note {title:?} kept changing while it was saved"
        )))
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
                .bind(ts_query(&words, *holding))
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

    async fn delete(
        &self,
        reader: &MemberId,
        which: &NoteRef,
    ) -> Result<Option<Note>, StorageError> {
        // One statement: the note is found and deleted at once.
        let row = bound(DELETE_BY_TITLE, DELETE_BY_ID, which, reader)?
            .fetch_optional(&self.pool)
            .await
            .map_err(database_error)?;
        row.as_ref().map(note_from_row).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_lexemes_never_operators() {
        let words = search_words("wifi 'pass* !a & b | c <-> title:").unwrap();
        assert_eq!(
            ts_query(&words, Holding::Every),
            "'wifi' & 'pass' & 'a' & 'b' & 'c' & 'title':*"
        );
        assert_eq!(
            ts_query(&search_words("garden plan").unwrap(), Holding::Any),
            "'garden' | 'plan':*"
        );
        assert_eq!(
            ts_query(&search_words("roses by fence").unwrap(), Holding::AllButOne),
            "('by' & 'fence':*) | ('roses' & 'fence':*) | ('roses' & 'by')"
        );
    }
}
