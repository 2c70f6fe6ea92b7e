-- The family members who joined by invite, and the links and roles changed in chat
-- (`family:` of the configuration wins where both name a member). A platform account
-- belongs to one member at most.
CREATE TABLE members (
    id               TEXT    PRIMARY KEY,
    name             TEXT,
    role             TEXT    NOT NULL CHECK (role IN ('parent', 'child')),
    telegram_user_id INTEGER UNIQUE,
    matrix_user_id   TEXT    UNIQUE,
    added_by         TEXT,
    added_at_ms      INTEGER NOT NULL
);

-- Invite codes, each kept only as its hash. `purpose` 'join' adds a member with `role` and
-- `name`; 'link' gives `member_id` another platform. A code is used once (`used_at_ms`).
CREATE TABLE invites (
    code_hash     TEXT    PRIMARY KEY,
    purpose       TEXT    NOT NULL CHECK (purpose IN ('join', 'link')),
    role          TEXT    NOT NULL CHECK (role IN ('parent', 'child')),
    name          TEXT,
    member_id     TEXT,
    created_by    TEXT,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    used_at_ms    INTEGER,
    used_by       TEXT
);
CREATE INDEX invites_open ON invites (expires_at_ms) WHERE used_at_ms IS NULL;
