-- The durable outbox: what hearth sends on a chat platform, stored as "to deliver" in the
-- transaction that produced it and marked delivered once the platform accepted it.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    channel         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    inbox_id        TEXT,
    -- reply | prompt | close, with the confirmation it is about (JSON).
    kind            TEXT    NOT NULL,
    text            TEXT    NOT NULL,
    reply_to_event  TEXT,
    status          TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivered', 'abandoned')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    -- Parts of a long message the platform accepted already.
    parts_delivered INTEGER NOT NULL DEFAULT 0,
    platform_id     TEXT,
    error           TEXT,
    created_at_ms   INTEGER NOT NULL,
    updated_at_ms   INTEGER NOT NULL
);
CREATE INDEX outbox_undelivered ON outbox (channel, id) WHERE status = 'pending';
