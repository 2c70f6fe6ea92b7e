-- Family memory (ports::FamilyMemory): what the family told hearth, as sources cut into
-- chunks a member may search by words and by vectors.

-- One indexed thing: a chat entry (`reference` its `messages.id`), a note (its id), a
-- document (its id). Read by the family, its member alone, or the members listed for its
-- conversation in `memory_conversation_readers`. `indexed_at_ms`: when its chunks were
-- written (a note changed after that is indexed again).
CREATE TABLE memory_sources (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT    NOT NULL CHECK (kind IN ('chat', 'note', 'document')),
    reference        TEXT    NOT NULL,
    title            TEXT    NOT NULL,
    readers          TEXT    NOT NULL CHECK (readers IN ('family', 'member', 'conversation')),
    member_id        TEXT,
    conversation_key TEXT,
    created_at_ms    INTEGER NOT NULL,
    indexed_at_ms    INTEGER NOT NULL,
    UNIQUE (kind, reference),
    CHECK (readers <> 'member' OR member_id IS NOT NULL),
    CHECK (readers <> 'conversation' OR conversation_key IS NOT NULL)
);
CREATE INDEX memory_sources_member ON memory_sources (member_id);

-- A source's texts in order; `folded` as hearth folds them for search (accents and case
-- away), `hash` the SHA-256 of `text` its vectors are kept under.
CREATE TABLE memory_chunks (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id INTEGER NOT NULL REFERENCES memory_sources (id) ON DELETE CASCADE,
    ordinal   INTEGER NOT NULL,
    text      TEXT    NOT NULL,
    folded    TEXT    NOT NULL,
    hash      TEXT    NOT NULL,
    UNIQUE (source_id, ordinal)
);
CREATE INDEX memory_chunks_hash ON memory_chunks (hash);

-- The words of the folded texts, for search ranked by bm25, kept in step with
-- `memory_chunks` by the triggers below in the transaction of every write (a source's
-- chunks deleted with it by the cascade fire them too), as `notes_fts`.
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    folded,
    content = 'memory_chunks',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TRIGGER memory_fts_after_insert AFTER INSERT ON memory_chunks BEGIN
    INSERT INTO memory_fts (rowid, folded) VALUES (new.id, new.folded);
END;
CREATE TRIGGER memory_fts_after_delete AFTER DELETE ON memory_chunks BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, folded) VALUES ('delete', old.id, old.folded);
END;
CREATE TRIGGER memory_fts_after_update AFTER UPDATE OF folded ON memory_chunks BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, folded) VALUES ('delete', old.id, old.folded);
    INSERT INTO memory_fts (rowid, folded) VALUES (new.id, new.folded);
END;

-- The members who have written in a conversation: its `conversation` sources' readers.
CREATE TABLE memory_conversation_readers (
    conversation_key TEXT NOT NULL,
    member_id        TEXT NOT NULL,
    PRIMARY KEY (conversation_key, member_id)
);
CREATE INDEX memory_conversation_readers_member ON memory_conversation_readers (member_id);

-- A text's vector per model, by the text's hash: the same text is embedded once per model.
-- `vector`: little-endian f32s.
CREATE TABLE memory_vectors (
    hash   TEXT NOT NULL,
    model  TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (hash, model)
);

-- Where the indexer stands in `messages`.
CREATE TABLE memory_cursors (
    name     TEXT    PRIMARY KEY,
    position INTEGER NOT NULL
);
