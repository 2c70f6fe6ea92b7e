//! `Notes` on either SQL database: table `notes`, searched through each database's own
//! full-text index, the one difference `search_statement` and `search_text` hold: SQLite's
//! `notes_fts` (FTS5, kept in step by triggers, migration 0014, ranked by bm25) and
//! PostgreSQL's generated `search` column (a tsvector, the title's words weighted `A`, the
//! content's `B`, ranked by `ts_rank`); on both a title's words weigh ten times a content's.
//!
//! A member's words never reach either as query syntax: `ports::search_words` keeps only
//! runs of letters and digits, and each goes in quoted (the last one also as a prefix), so
//! quotes, `*`, `NEAR(`, `OR`, `-`, `col:`, `!`, `&`, `|` and `<->` are words or
//! separators, never operators. A search goes through tiers: notes holding every word;
//! for three words or more, all but one; then any.

use async_trait::async_trait;

use super::{Dialect, SqlBackend, SqlRow, Statement, id_column, limit, sql};
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
     created_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $5, $6, $6) \
     ON CONFLICT DO NOTHING RETURNING ",
    columns!()
);

/// How often a save looks again when another writer added or deleted the note it found
/// (or did not find) in between.
const SAVE_ATTEMPTS: usize = 3;

// dialect: the search of the notes holding a tier's words (`$1`: `search_text`, `$2`: the
// reader, `$3`: the limit), ranked with a title's words weighing ten times a content's,
// then newest.
fn search_statement(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => concat!(
            "SELECT ",
            columns!(),
            " FROM notes_fts JOIN notes ON notes.id = notes_fts.rowid \
             WHERE notes_fts MATCH $1 AND ",
            readable!(),
            " ORDER BY bm25(notes_fts, 10.0, 1.0), notes.updated_at_ms DESC, notes.id DESC \
             LIMIT $3"
        ),
        Dialect::Postgres => concat!(
            "SELECT ",
            columns!(),
            " FROM notes, to_tsquery('simple', $1) AS query WHERE notes.search @@ query AND ",
            readable!(),
            " ORDER BY ts_rank('{0, 0, 0.1, 1.0}'::float4[], notes.search, query) DESC, \
             notes.updated_at_ms DESC, notes.id DESC LIMIT $3"
        ),
    }
}

// dialect: the query text of `words` for a tier, each word quoted (FTS5's string, a
// tsquery's lexeme), the last also matching the start of a word; every word, or any.
fn search_text(dialect: Dialect, words: &[String], holding: Holding) -> String {
    let (quote, prefix, and, or) = match dialect {
        Dialect::Sqlite => ('"', "*", " ", " OR "),
        Dialect::Postgres => ('\'', ":*", " & ", " | "),
    };
    let last = words.len().saturating_sub(1);
    let terms: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(index, word)| {
            // Words hold letters and digits only; doubling quotes keeps that true anyway.
            let doubled = word.replace(quote, &format!("{quote}{quote}"));
            let quoted = format!("{quote}{doubled}{quote}");
            if index == last {
                quoted + prefix
            } else {
                quoted
            }
        })
        .collect();
    match holding {
        Holding::Every => terms.join(and),
        Holding::Any => terms.join(or),
        Holding::AllButOne => (0..terms.len())
            .map(|left_out| {
                let kept: Vec<&str> = (0..terms.len())
                    .filter(|index| *index != left_out)
                    .map(|index| terms[index].as_str())
                    .collect();
                format!("({})", kept.join(and))
            })
            .collect::<Vec<_>>()
            .join(or),
    }
}

pub(crate) fn note_from_row(row: &impl SqlRow) -> Result<Note, StorageError> {
    Ok(Note {
        id: row.integer("id")?,
        title: row.text("title")?,
        content: row.text("content")?,
        visibility: NoteVisibility::parse(&row.text("visibility")?)?,
        author: id_column(row, "notes", "author")?,
        updated_by: id_column(row, "notes", "updated_by")?,
        created_at_ms: row.integer("created_at_ms")?,
        updated_at_ms: row.integer("updated_at_ms")?,
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

/// The statement of `which` (one of `by_title`, `by_id`) bound to it and the reader.
fn bound(
    by_title: &'static str,
    by_id: &'static str,
    which: &NoteRef,
    reader: &MemberId,
) -> Result<Statement, StorageError> {
    let statement = match which {
        NoteRef::Title(title) => sql(by_title).bind(note_title_key(title)?),
        NoteRef::Id(id) => sql(by_id).bind(*id),
    };
    Ok(statement.bind(reader.as_str()))
}

#[async_trait]
impl<B: SqlBackend> Notes for B {
    async fn save(&self, write: &NoteWrite) -> Result<Saved, StorageError> {
        let title_key = note_title_key(&write.title)?;
        let title = write.title.trim();
        // Find, then update or add, each one statement: when another writer deletes the
        // note found, or adds the one not found, in between, the statement writes nothing
        // and the save looks again.
        for _ in 0..SAVE_ATTEMPTS {
            let find = match write.visibility {
                None => sql(FIND_ANY).bind(&title_key).bind(write.writer.as_str()),
                Some(NoteVisibility::Family) => sql(FIND_FAMILY).bind(&title_key),
                Some(NoteVisibility::Private) => sql(FIND_PRIVATE)
                    .bind(&title_key)
                    .bind(write.writer.as_str()),
            };
            if let Some(found) = self.read_optional(find).await? {
                let update = sql(UPDATE)
                    .bind(title)
                    .bind(&write.content)
                    .bind(write.writer.as_str())
                    .bind(write.at_ms)
                    .bind(found.integer("id")?);
                if let Some(row) = self.write_optional(update).await? {
                    return Ok(Saved::Updated(note_from_row(&row)?));
                }
                continue;
            }
            let insert = sql(INSERT)
                .bind(title)
                .bind(&title_key)
                .bind(&write.content)
                .bind(write.visibility.unwrap_or_default().as_str())
                .bind(write.writer.as_str())
                .bind(write.at_ms);
            if let Some(row) = self.write_optional(insert).await? {
                return Ok(Saved::Added(note_from_row(&row)?));
            }
        }
        Err(StorageError::Database(format!(
            "note {title:?} kept changing while it was saved"
        )))
    }

    async fn set_visibility(
        &self,
        author: &MemberId,
        id: i64,
        visibility: NoteVisibility,
        at_ms: i64,
    ) -> Result<Option<Note>, StorageError> {
        let author = author.clone();
        // The title's place in the other visibility checked, then the change, in one
        // transaction; the unique indexes refuse a note of that title added meanwhile.
        self.atomically(move |connection| {
            Box::pin(async move {
                let taken = sql("SELECT other.title FROM notes AS this JOIN notes AS other \
                     ON other.title_key = this.title_key AND other.id <> this.id \
                     AND other.visibility = $1 AND ($1 = 'family' OR other.author = this.author) \
                     WHERE this.id = $2 AND this.author = $3")
                .bind(visibility.as_str())
                .bind(id)
                .bind(author.as_str());
                if let Some(row) = super::SqlConnection::fetch_optional(connection, taken).await? {
                    return Err(StorageError::Invalid(format!(
                        "a {} note titled {:?} is there already",
                        visibility.as_str(),
                        row.text("title")?
                    )));
                }
                let change = sql(concat!(
                    "UPDATE notes SET visibility = $1, updated_at_ms = $2 \
                     WHERE id = $3 AND author = $4 RETURNING ",
                    columns!()
                ))
                .bind(visibility.as_str())
                .bind(at_ms)
                .bind(id)
                .bind(author.as_str());
                let row = super::SqlConnection::fetch_optional(connection, change).await?;
                row.as_ref().map(note_from_row).transpose()
            })
        })
        .await
    }

    async fn get(&self, reader: &MemberId, which: &NoteRef) -> Result<Option<Note>, StorageError> {
        let row = (self.read_optional(bound(GET_BY_TITLE, GET_BY_ID, which, reader)?)).await?;
        row.as_ref().map(note_from_row).transpose()
    }

    async fn search(
        &self,
        reader: &MemberId,
        query: &str,
        count: usize,
    ) -> Result<Vec<Note>, StorageError> {
        let words = search_words(query)?;
        for holding in tiers(&words) {
            let search = sql(search_statement(B::DIALECT))
                .bind(search_text(B::DIALECT, &words, *holding))
                .bind(reader.as_str())
                .bind(limit(count));
            let rows = self.read(search).await?;
            if !rows.is_empty() {
                return rows.iter().map(note_from_row).collect();
            }
        }
        Ok(Vec::new())
    }

    async fn list(&self, reader: &MemberId, count: usize) -> Result<NoteList, StorageError> {
        let list = sql(concat!(
            "SELECT ",
            columns!(),
            " FROM notes WHERE (notes.visibility = 'family' OR notes.author = $1) \
             ORDER BY notes.updated_at_ms DESC, notes.id DESC LIMIT $2"
        ));
        let rows = self
            .read(list.bind(reader.as_str()).bind(limit(count)))
            .await?;
        let total = sql("SELECT COUNT(*) AS total FROM notes \
             WHERE (notes.visibility = 'family' OR notes.author = $1)");
        let total = match self.read_optional(total.bind(reader.as_str())).await? {
            Some(row) => row.integer("total")?,
            None => 0,
        };
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
        let delete = bound(DELETE_BY_TITLE, DELETE_BY_ID, which, reader)?;
        let row = self.write_optional(delete).await?;
        row.as_ref().map(note_from_row).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_strings_never_operators() {
        let words = search_words("wifi \"pass* NEAR( a OR -x title:").unwrap();
        assert_eq!(
            search_text(Dialect::Sqlite, &words, Holding::Every),
            "\"wifi\" \"pass\" \"near\" \"a\" \"or\" \"x\" \"title\"*"
        );
        let garden = search_words("garden plan").unwrap();
        assert_eq!(
            search_text(Dialect::Sqlite, &garden, Holding::Any),
            "\"garden\" OR \"plan\"*"
        );
        let roses = search_words("roses by fence").unwrap();
        assert_eq!(
            search_text(Dialect::Sqlite, &roses, Holding::AllButOne),
            "(\"by\" \"fence\"*) OR (\"roses\" \"fence\"*) OR (\"roses\" \"by\")"
        );
        assert_eq!(tiers(&garden), [Holding::Every, Holding::Any]);
    }

    #[test]
    fn words_become_quoted_lexemes_never_operators() {
        let words = search_words("wifi 'pass* !a & b | c <-> title:").unwrap();
        assert_eq!(
            search_text(Dialect::Postgres, &words, Holding::Every),
            "'wifi' & 'pass' & 'a' & 'b' & 'c' & 'title':*"
        );
        let garden = search_words("garden plan").unwrap();
        assert_eq!(
            search_text(Dialect::Postgres, &garden, Holding::Any),
            "'garden' | 'plan':*"
        );
        let roses = search_words("roses by fence").unwrap();
        assert_eq!(
            search_text(Dialect::Postgres, &roses, Holding::AllButOne),
            "('by' & 'fence':*) | ('roses' & 'fence':*) | ('roses' & 'by')"
        );
    }
}
