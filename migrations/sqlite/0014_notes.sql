-- The family's notes. A note is `family` (every member reads it) or `private` (only its
-- author does). `title_key` is the title trimmed and lowercased by hearth: family notes
-- are unique by it, a private note per author and it.
CREATE TABLE notes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    title         TEXT    NOT NULL,
    title_key     TEXT    NOT NULL,
    content       TEXT    NOT NULL,
    visibility    TEXT    NOT NULL CHECK (visibility IN ('family', 'private')),
    -- Who added it, and who last wrote it.
    author        TEXT    NOT NULL,
    updated_by    TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX notes_family_title ON notes (title_key) WHERE visibility = 'family';
CREATE UNIQUE INDEX notes_private_title ON notes (author, title_key)
    WHERE visibility = 'private';
CREATE INDEX notes_newest ON notes (updated_at_ms, id);

-- The words of titles and contents, for search ranked by bm25. It holds no text of its own
-- (`content='notes'`): the triggers below keep it in step with `notes` in the transaction
-- of every write. Diacritics are kept, so the in-memory adapter matches words the same way.
CREATE VIRTUAL TABLE notes_fts USING fts5 (
    title,
    content,
    content = 'notes',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TRIGGER notes_fts_after_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
END;
CREATE TRIGGER notes_fts_after_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
END;
CREATE TRIGGER notes_fts_after_update AFTER UPDATE OF title, content ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO notes_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
END;
