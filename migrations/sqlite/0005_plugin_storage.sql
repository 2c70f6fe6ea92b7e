-- What hearth's plugins keep: the family's shopping lists, plugin calls waiting for a
-- missing parameter (seed 000 §3.6), and external plugins registered over the HTTP API.

-- One row per item of a shared list. `list_key` and `item_key` are the names trimmed
-- and lowercased by hearth (Unicode-aware, unlike SQLite's ASCII-only NOCASE), so
-- "Milk " and "milk" are one item; `name` keeps the spelling first added. `id` only
-- orders the items as first added: AUTOINCREMENT never hands out a smaller one.
CREATE TABLE shopping_items (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    list_key    TEXT    NOT NULL,
    item_key    TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    quantity    INTEGER NOT NULL CHECK (quantity >= 1),
    added_by    TEXT    NOT NULL,
    added_at_ms INTEGER NOT NULL,
    UNIQUE (list_key, item_key)
);

-- At most one waiting call per conversation and member: asking again replaces it.
CREATE TABLE pending_plugin_calls (
    conversation_key TEXT    NOT NULL,
    member_id        TEXT    NOT NULL,
    plugin_id        TEXT    NOT NULL,
    capability_id    TEXT    NOT NULL,
    -- JSON: the parameters resolved so far (an object), the names still missing (an array).
    parameters       TEXT    NOT NULL CHECK (json_type(parameters) = 'object'),
    missing          TEXT    NOT NULL CHECK (json_type(missing) = 'array'),
    question         TEXT    NOT NULL,
    created_at_ms    INTEGER NOT NULL,
    expires_at_ms    INTEGER NOT NULL,
    PRIMARY KEY (conversation_key, member_id)
) WITHOUT ROWID;
-- Housekeeping deletes every expired call.
CREATE INDEX pending_plugin_calls_expiry ON pending_plugin_calls (expires_at_ms);

-- The manifest as the plugin registered it (JSON).
CREATE TABLE registered_plugins (
    plugin_id        TEXT    PRIMARY KEY,
    manifest         TEXT    NOT NULL CHECK (json_valid(manifest)),
    registered_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
