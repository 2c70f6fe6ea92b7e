//! `FamilyMemory` on either SQL database: tables `memory_sources`, `memory_chunks`,
//! `memory_conversation_readers`, `memory_vectors` and `memory_cursors` (SQLite migration
//! 0022, PostgreSQL 0026), reading `messages`, `inbox` and `notes` for what to index.
//!
//! Who may read a source is said in every statement that reads one (`readable!`). The
//! words' search is each database's own index, the one difference `search_statement` and
//! `search_text` hold: SQLite's `memory_fts` (FTS5 over the folded text, kept in step by
//! triggers, ranked by bm25) and PostgreSQL's generated `search` column (a tsvector,
//! ranked by `ts_rank`); each word goes in quoted, so nothing is query syntax. Vectors are
//! bytes on both (`ports::vector_bytes`); the readable chunks' vectors of a model are read
//! and the nearest taken in Rust (`ports::nearest`), then those chunks read whole.

use async_trait::async_trait;

use super::notes::note_from_row;
use super::{Dialect, SqlBackend, SqlConnection, SqlRow, Statement, limit, per_dialect, sql};
use crate::ids::MemberId;
use crate::llm::Role;
use crate::ports::{
    ChatToIndex, ChatsBehind, FamilyMemory, KindCounts, MemoryFilter, MemoryHit, MemoryKind,
    MemorySource, MemoryStatus, Note, StorageError, memory_search_terms, nearest, stored_chunk,
    vector_bytes,
};

/// A hit's columns: the chunk `c` and its source `s`.
macro_rules! hit_columns {
    () => {
        "c.id AS chunk_id, s.kind, s.reference, s.title, c.text, s.member_id, \
         s.conversation_key, s.created_at_ms"
    };
}

/// Whether the reader (`$2`) may read source `s`: the family's, their own, and those of
/// the conversations they have written in.
macro_rules! readable {
    () => {
        "(s.readers = 'family' OR (s.readers = 'member' AND s.member_id = $2) \
         OR (s.readers = 'conversation' AND EXISTS (SELECT 1 FROM memory_conversation_readers \
         r WHERE r.conversation_key = s.conversation_key AND r.member_id = $2)))"
    };
}

/// Chunks `c` with their sources `s`.
macro_rules! chunks {
    () => {
        "memory_chunks c JOIN memory_sources s ON s.id = c.source_id"
    };
}

/// The sources a `MemoryFilter` admits (`filter_args`: `$3` since, `$4` until, `$5` to
/// `$7` whether it wants chats, notes, documents).
macro_rules! filtered {
    () => {
        " AND (CAST($3 AS BIGINT) IS NULL OR s.created_at_ms >= $3) \
         AND (CAST($4 AS BIGINT) IS NULL OR s.created_at_ms < $4) \
         AND (($5 AND s.kind = 'chat') OR ($6 AND s.kind = 'note') \
         OR ($7 AND s.kind = 'document'))"
    };
}

/// `statement` with `filter` bound to its `$3` to `$7` (`filtered!`).
fn filter_args(statement: Statement, filter: &MemoryFilter) -> Statement {
    MemoryKind::ALL.into_iter().fold(
        statement.bind(filter.since_ms).bind(filter.until_ms),
        |statement, kind| statement.bind(filter.wants(kind)),
    )
}

// dialect: the chunks holding any word of the query text `$1` (`search_text`), readable
// by `$2`, admitted by the filter (`$3`-`$7`), best first, at most `$8`.
fn search_statement(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => concat!(
            "SELECT ",
            hit_columns!(),
            ", -bm25(memory_fts) AS score FROM memory_fts \
             JOIN memory_chunks c ON c.id = memory_fts.rowid \
             JOIN memory_sources s ON s.id = c.source_id WHERE memory_fts MATCH $1 AND ",
            readable!(),
            filtered!(),
            " ORDER BY score DESC, s.created_at_ms DESC, c.id DESC LIMIT $8"
        ),
        Dialect::Postgres => concat!(
            "SELECT ",
            hit_columns!(),
            ", CAST(ts_rank(c.search, query) AS DOUBLE PRECISION) AS score FROM ",
            chunks!(),
            ", to_tsquery('simple', $1) AS query WHERE c.search @@ query AND ",
            readable!(),
            filtered!(),
            " ORDER BY score DESC, s.created_at_ms DESC, c.id DESC LIMIT $8"
        ),
    }
}

// dialect: any of `terms` (letters and digits only), each quoted: FTS5's strings, a
// tsquery's lexemes.
fn search_text(dialect: Dialect, terms: &[String]) -> String {
    let (quote, or) = match dialect {
        Dialect::Sqlite => ('"', " OR "),
        Dialect::Postgres => ('\'', " | "),
    };
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| format!("{quote}{}{quote}", term.replace(quote, "")))
        .collect();
    quoted.join(or)
}

fn hit_from_row(row: &impl SqlRow, score: Option<f64>) -> Result<MemoryHit, StorageError> {
    let corrupt = |what: &str| StorageError::Corrupt(format!("memory_sources.{what}"));
    Ok(MemoryHit {
        chunk_id: row.integer("chunk_id")?,
        kind: MemoryKind::parse(&row.text("kind")?)?,
        reference: row.text("reference")?,
        title: row.text("title")?,
        text: row.text("text")?,
        member: (row.optional_text("member_id")?.map(|member| member.parse()))
            .transpose()
            .map_err(|_| corrupt("member_id"))?,
        conversation: (row
            .optional_text("conversation_key")?
            .map(|key| key.parse()))
        .transpose()
        .map_err(|_| corrupt("conversation_key"))?,
        created_at_ms: row.integer("created_at_ms")?,
        score: score.map_or_else(|| row.real("score"), Ok)?,
    })
}

/// Write `source` (checked first) and its chunks in `connection`'s transaction.
async fn put_source<C: SqlConnection>(
    connection: &mut C,
    dialect: Dialect,
    source: &MemorySource,
    at_ms: i64,
) -> Result<(), StorageError> {
    source.check()?;
    let upsert = sql(
        "INSERT INTO memory_sources (kind, reference, title, readers, member_id, \
         conversation_key, created_at_ms, indexed_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (kind, reference) DO UPDATE SET title = excluded.title, \
         readers = excluded.readers, member_id = excluded.member_id, \
         conversation_key = excluded.conversation_key, created_at_ms = excluded.created_at_ms, \
         indexed_at_ms = excluded.indexed_at_ms RETURNING id",
    )
    .bind(source.kind.as_str())
    .bind(&source.reference)
    .bind(&source.title)
    .bind(source.readers.as_str())
    .bind(source.member.as_ref().map(MemberId::as_str))
    .bind(source.conversation.as_ref().map(|key| key.as_str()))
    .bind(source.created_at_ms)
    .bind(at_ms);
    let row = connection.fetch_optional(upsert).await?;
    let id = row
        .ok_or_else(|| StorageError::Database("memory source not written".into()))?
        .integer("id")?;
    let forget = sql("DELETE FROM memory_chunks WHERE source_id = $1").bind(id);
    connection.execute(forget).await?;
    if !source.chunks.is_empty() {
        let chunks: Vec<serde_json::Value> = (source.chunks.iter().enumerate())
            .map(|(ordinal, text)| {
                let (folded, hash) = stored_chunk(text);
                serde_json::json!({"ordinal": ordinal, "text": text, "folded": folded, "hash": hash})
            })
            .collect();
        let insert = per_dialect!(dialect, |dialect| format!(
            "INSERT INTO memory_chunks (source_id, ordinal, text, folded, hash) \
             SELECT $1, CAST(entry->>'ordinal' AS BIGINT), entry->>'text', entry->>'folded', \
             entry->>'hash' FROM {}",
            dialect.json_rows("$2")
        ));
        let insert = sql(insert)
            .bind(id)
            .bind(serde_json::Value::from(chunks).to_string());
        connection.execute(insert).await?;
    }
    if let Some((conversation, member)) = source.lists_reader() {
        let reader = sql(
            "INSERT INTO memory_conversation_readers (conversation_key, member_id) \
             VALUES ($1, $2) ON CONFLICT DO NOTHING",
        );
        let reader = reader.bind(conversation.as_str()).bind(member.as_str());
        connection.execute(reader).await?;
    }
    Ok(())
}

#[async_trait]
impl<B: SqlBackend> FamilyMemory for B {
    async fn put_sources(
        &self,
        sources: &[MemorySource],
        cursor: Option<(&str, i64)>,
        at_ms: i64,
    ) -> Result<(), StorageError> {
        let sources = sources.to_vec();
        let cursor = cursor.map(|(name, position)| (name.to_owned(), position));
        self.atomically(move |connection| {
            Box::pin(async move {
                for source in &sources {
                    put_source(connection, B::DIALECT, source, at_ms).await?;
                }
                if let Some((name, position)) = cursor {
                    let moved = sql(
                        "INSERT INTO memory_cursors (name, position) VALUES ($1, $2) \
                         ON CONFLICT (name) DO UPDATE SET position = excluded.position",
                    );
                    connection.execute(moved.bind(name).bind(position)).await?;
                }
                Ok(())
            })
        })
        .await
    }

    async fn cursor(&self, name: &str) -> Result<i64, StorageError> {
        let read = sql("SELECT position FROM memory_cursors WHERE name = $1").bind(name);
        let row = self.read_optional(read).await?;
        row.map_or(Ok(0), |row| row.integer("position"))
    }

    async fn chats_after(
        &self,
        after_id: i64,
        settled_before_ms: i64,
        count: usize,
    ) -> Result<Vec<ChatToIndex>, StorageError> {
        // Delegated conversations' keys are `delegation:...` (ids::DELEGATION_CHANNEL).
        let chats = sql(
            "SELECT m.id, m.conversation_key, m.role, m.content, m.created_at_ms, \
             CASE WHEN m.role = 'user' THEN i.member_id END AS member_id \
             FROM messages m LEFT JOIN inbox i ON i.id = m.inbox_id \
             WHERE m.id > $1 AND m.is_chat_text = TRUE \
             AND m.conversation_key NOT LIKE 'delegation:%' \
             AND m.id < COALESCE((SELECT MIN(u.id) FROM messages u \
             WHERE u.id > $1 AND u.created_at_ms >= $2), m.id + 1) ORDER BY m.id LIMIT $3",
        );
        let chats = chats
            .bind(after_id)
            .bind(settled_before_ms)
            .bind(limit(count));
        let corrupt = |what: &str| StorageError::Corrupt(format!("messages.{what}"));
        let rows = self.read(chats).await?;
        rows.iter()
            .map(|row| {
                Ok(ChatToIndex {
                    message_id: row.integer("id")?,
                    conversation_key: (row.text("conversation_key")?.parse())
                        .map_err(|_| corrupt("conversation_key"))?,
                    role: Role::parse(&row.text("role")?).ok_or_else(|| corrupt("role"))?,
                    text: row.text("content")?,
                    member: (row.optional_text("member_id")?.map(|member| member.parse()))
                        .transpose()
                        .map_err(|_| corrupt("member_id"))?,
                    created_at_ms: row.integer("created_at_ms")?,
                })
            })
            .collect()
    }

    async fn notes_to_index(&self, count: usize) -> Result<Vec<Note>, StorageError> {
        let notes = sql(
            "SELECT notes.id, notes.title, notes.content, notes.visibility, \
             notes.author, notes.updated_by, notes.created_at_ms, notes.updated_at_ms \
             FROM notes LEFT JOIN memory_sources s \
             ON s.kind = 'note' AND s.reference = CAST(notes.id AS TEXT) \
             WHERE s.id IS NULL OR s.indexed_at_ms < notes.updated_at_ms \
             ORDER BY notes.updated_at_ms, notes.id LIMIT $1",
        );
        let rows = self.read(notes.bind(limit(count))).await?;
        rows.iter().map(note_from_row).collect()
    }

    async fn remove_orphans(&self, count: usize) -> Result<u64, StorageError> {
        // A reference is a row's number for chats and notes only (`MemorySource::check`).
        let sources = sql(
            "DELETE FROM memory_sources WHERE id IN (SELECT s.id FROM (SELECT id, kind, \
             CAST(CASE WHEN kind IN ('chat', 'note') THEN reference END AS BIGINT) AS number \
             FROM memory_sources) s WHERE (s.kind = 'chat' AND NOT EXISTS (SELECT 1 \
             FROM messages m WHERE m.id = s.number)) OR (s.kind = 'note' AND NOT EXISTS \
             (SELECT 1 FROM notes n WHERE n.id = s.number)) ORDER BY s.id LIMIT $1)",
        );
        let removed = self.write_count(sources.bind(limit(count))).await?;
        let vectors = sql(
            "DELETE FROM memory_vectors WHERE (hash, model) IN (SELECT v.hash, \
             v.model FROM memory_vectors v WHERE NOT EXISTS (SELECT 1 FROM memory_chunks c \
             WHERE c.hash = v.hash) LIMIT $1)",
        );
        Ok(removed + self.write_count(vectors.bind(limit(count))).await?)
    }

    async fn remove(&self, kind: MemoryKind, reference: &str) -> Result<bool, StorageError> {
        let remove = sql("DELETE FROM memory_sources WHERE kind = $1 AND reference = $2");
        let removed = self.write_count(remove.bind(kind.as_str()).bind(reference));
        Ok(removed.await? > 0)
    }

    async fn remove_member(&self, member: &MemberId) -> Result<u64, StorageError> {
        let member = member.as_str().to_owned();
        self.atomically(move |connection| {
            Box::pin(async move {
                let sources = sql("DELETE FROM memory_sources \
                     WHERE readers = 'member' AND member_id = $1");
                let sources = connection.execute(sources.bind(&member)).await?;
                let listed = sql("DELETE FROM memory_conversation_readers WHERE member_id = $1");
                Ok(sources + connection.execute(listed.bind(&member)).await?)
            })
        })
        .await
    }

    async fn search_words(
        &self,
        reader: &MemberId,
        words: &[String],
        filter: &MemoryFilter,
        count: usize,
    ) -> Result<Vec<MemoryHit>, StorageError> {
        let terms = memory_search_terms(words);
        if terms.is_empty() || count == 0 {
            return Ok(Vec::new());
        }
        let search = sql(search_statement(B::DIALECT))
            .bind(search_text(B::DIALECT, &terms))
            .bind(reader.as_str());
        let search = filter_args(search, filter).bind(limit(count));
        let rows = self.read(search).await?;
        rows.iter().map(|row| hit_from_row(row, None)).collect()
    }

    async fn vectors_missing(
        &self,
        model: &str,
        count: usize,
    ) -> Result<Vec<(String, String)>, StorageError> {
        let missing = sql("SELECT c.hash, MIN(c.text) AS text FROM memory_chunks c \
             WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.hash = c.hash \
             AND v.model = $1) GROUP BY c.hash ORDER BY MIN(c.id) LIMIT $2");
        let rows = self.read(missing.bind(model).bind(limit(count))).await?;
        rows.iter()
            .map(|row| Ok((row.text("hash")?, row.text("text")?)))
            .collect()
    }

    async fn put_vectors(
        &self,
        model: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StorageError> {
        let puts: Vec<Statement> = (vectors.iter())
            .map(|(hash, vector)| {
                sql(
                    "INSERT INTO memory_vectors (hash, model, vector) VALUES ($1, $2, $3) \
                     ON CONFLICT (hash, model) DO UPDATE SET vector = excluded.vector",
                )
                .bind(hash)
                .bind(model)
                .bind(vector_bytes(vector))
            })
            .collect();
        self.atomically(move |connection| {
            Box::pin(async move {
                for put in puts {
                    connection.execute(put).await?;
                }
                Ok(())
            })
        })
        .await
    }

    async fn search_vector(
        &self,
        reader: &MemberId,
        model: &str,
        query: &[f32],
        filter: &MemoryFilter,
        count: usize,
    ) -> Result<Vec<MemoryHit>, StorageError> {
        let candidates = sql(concat!(
            "SELECT c.id AS chunk_id, v.vector FROM ",
            chunks!(),
            " JOIN memory_vectors v ON v.hash = c.hash AND v.model = $1 WHERE ",
            readable!(),
            filtered!()
        ));
        let candidates = filter_args(candidates.bind(model).bind(reader.as_str()), filter);
        let rows = self.read(candidates).await?;
        let candidates = (rows.iter())
            .map(|row| Ok((row.integer("chunk_id")?, row.bytes("vector")?)))
            .collect::<Result<Vec<_>, StorageError>>()?;
        let nearest = nearest(query, candidates, count).await?;
        if nearest.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<serde_json::Value> = (nearest.iter())
            .map(|(id, _)| serde_json::json!({ "id": id }))
            .collect();
        let hits = per_dialect!(B::DIALECT, |dialect| format!(
            concat!(
                "SELECT ",
                hit_columns!(),
                " FROM ",
                chunks!(),
                " WHERE ",
                readable!(),
                " AND c.id IN (SELECT CAST(entry->>'id' AS BIGINT) FROM {})"
            ),
            dialect.json_rows("$1")
        ));
        let hits = sql(hits).bind(serde_json::Value::from(ids).to_string());
        let rows = self.read(hits.bind(reader.as_str())).await?;
        let mut hits: Vec<MemoryHit> = Vec::with_capacity(rows.len());
        for (id, score) in nearest {
            if let Some(row) = rows
                .iter()
                .find(|row| row.integer("chunk_id").ok() == Some(id))
            {
                hits.push(hit_from_row(row, Some(score))?);
            }
        }
        Ok(hits)
    }

    async fn status(&self, model: Option<&str>) -> Result<MemoryStatus, StorageError> {
        let status = sql("SELECT (SELECT COUNT(*) FROM memory_sources) AS sources, \
             (SELECT COUNT(*) FROM memory_chunks) AS chunks, \
             (SELECT COUNT(*) FROM memory_vectors WHERE model = $1) AS vectors, \
             (SELECT COUNT(*) FROM memory_chunks c WHERE CAST($1 AS TEXT) IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM memory_vectors v \
             WHERE v.hash = c.hash AND v.model = $1)) AS waiting");
        let row = self.read_optional(status.bind(model)).await?;
        let row = row.ok_or_else(|| StorageError::Database("memory status not read".into()))?;
        let number = |column: &str| row.integer(column).map(|n| u64::try_from(n).unwrap_or(0));
        Ok(MemoryStatus {
            sources: number("sources")?,
            chunks: number("chunks")?,
            vectors: number("vectors")?,
            waiting: number("waiting")?,
        })
    }

    async fn counts_by_kind(&self) -> Result<Vec<KindCounts>, StorageError> {
        let counts = sql(
            "SELECT s.kind, COUNT(DISTINCT s.id) AS sources, COUNT(c.id) AS chunks \
             FROM memory_sources s LEFT JOIN memory_chunks c ON c.source_id = s.id \
             GROUP BY s.kind",
        );
        let rows = self.read(counts).await?;
        let number =
            |row: &B::Row, column: &str| row.integer(column).map(|n| u64::try_from(n).unwrap_or(0));
        let mut counted = Vec::with_capacity(rows.len());
        for row in &rows {
            let kind = MemoryKind::parse(&row.text("kind")?)?;
            counted.push((kind, number(row, "sources")?, number(row, "chunks")?));
        }
        Ok(MemoryKind::ALL
            .into_iter()
            .map(|kind| {
                let found = counted.iter().find(|(of, _, _)| *of == kind);
                let (sources, chunks) =
                    found.map_or((0, 0), |(_, sources, chunks)| (*sources, *chunks));
                KindCounts {
                    kind,
                    sources,
                    chunks,
                }
            })
            .collect())
    }

    async fn chats_behind(&self, after_id: i64) -> Result<ChatsBehind, StorageError> {
        // The rows `chats_after` reads, settled or not.
        let behind = sql("SELECT COUNT(*) AS entries, MAX(id) AS newest_id, \
             MIN(created_at_ms) AS oldest_at_ms FROM messages WHERE id > $1 \
             AND is_chat_text = TRUE AND conversation_key NOT LIKE 'delegation:%'");
        let row = self.read_optional(behind.bind(after_id)).await?;
        let row = row.ok_or_else(|| StorageError::Database("memory's lag not read".into()))?;
        Ok(ChatsBehind {
            entries: u64::try_from(row.integer("entries")?).unwrap_or(0),
            newest_id: row.optional_integer("newest_id")?,
            oldest_at_ms: row.optional_integer("oldest_at_ms")?,
        })
    }
}
