-- Durable facts of channel actors (Telegram's update offset, confirmation messages...).
CREATE TABLE channel_state (
    channel       TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    value         TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (channel, key)
) WITHOUT ROWID;
