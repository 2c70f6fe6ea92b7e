-- The core tables: durable inbox, message history, user profiles, LLM calls, telemetry.
-- Times are milliseconds since the Unix epoch.

CREATE TABLE inbox (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    id                 TEXT    NOT NULL UNIQUE,
    channel            TEXT    NOT NULL,
    conversation_id    TEXT    NOT NULL,
    member_id          TEXT    NOT NULL,
    text               TEXT    NOT NULL,
    platform_event_id  TEXT,
    received_at_ms     INTEGER NOT NULL,
    status             TEXT    NOT NULL DEFAULT 'accepted'
                       CHECK (status IN ('accepted', 'suspended', 'answered', 'failed')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms INTEGER,
    reply              TEXT,
    error              TEXT,
    -- Set only by the UPDATE that answers the message: the turn's history as a JSON
    -- array, moved into `messages` by the trigger below and then cleared.
    turn_messages      TEXT,
    updated_at_ms      INTEGER NOT NULL
);
-- A redelivered platform event is accepted once.
CREATE UNIQUE INDEX inbox_platform_event ON inbox (channel, platform_event_id)
    WHERE platform_event_id IS NOT NULL;
CREATE INDEX inbox_unanswered ON inbox (status, seq) WHERE status = 'accepted';

CREATE TABLE messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_key TEXT    NOT NULL,
    inbox_id         TEXT,
    profile_id       TEXT    NOT NULL,
    role             TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content          TEXT    NOT NULL,
    tool_calls       TEXT,
    tool_call_id     TEXT,
    -- 1 for plain user/assistant text: the rows replayed into prompts.
    is_chat_text     INTEGER NOT NULL,
    created_at_ms    INTEGER NOT NULL
);
CREATE INDEX messages_chat_text ON messages (conversation_key, is_chat_text, id);

-- Answering a message is one statement: the UPDATE that sets status 'answered' carries
-- the turn's history, and this trigger writes it within that statement. So reply,
-- history and status commit together, in one round trip to the database.
CREATE TRIGGER inbox_answered_writes_history
AFTER UPDATE OF status ON inbox
WHEN NEW.status = 'answered' AND NEW.turn_messages IS NOT NULL
BEGIN
    INSERT INTO messages (conversation_key, inbox_id, profile_id, role, content,
                          tool_calls, tool_call_id, is_chat_text, created_at_ms)
    SELECT json_extract(value, '$.conversation_key'), NEW.id,
           json_extract(value, '$.profile_id'), json_extract(value, '$.role'),
           json_extract(value, '$.content'), json_extract(value, '$.tool_calls'),
           json_extract(value, '$.tool_call_id'), json_extract(value, '$.is_chat_text'),
           json_extract(value, '$.created_at_ms')
    FROM json_each(NEW.turn_messages)
    ORDER BY key;
    UPDATE inbox SET turn_messages = NULL WHERE id = NEW.id;
END;

CREATE TABLE user_profiles (
    member_id     TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    value         TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (member_id, key)
);

CREATE TABLE llm_calls (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms            INTEGER NOT NULL,
    llm_name         TEXT    NOT NULL,
    model            TEXT    NOT NULL,
    backend          TEXT    NOT NULL,
    wire             TEXT    NOT NULL,
    profile_id       TEXT,
    conversation_key TEXT,
    attempt          INTEGER NOT NULL,
    outcome          TEXT    NOT NULL,
    input_tokens     INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL,
    latency_ms       INTEGER NOT NULL,
    cost_usd         REAL    NOT NULL
);
CREATE INDEX llm_calls_at ON llm_calls (at_ms);

CREATE TABLE telemetry_events (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms            INTEGER NOT NULL,
    conversation_key TEXT    NOT NULL,
    stage            TEXT    NOT NULL,
    payload          TEXT    NOT NULL
);
CREATE INDEX telemetry_events_conversation ON telemetry_events (conversation_key, id);
