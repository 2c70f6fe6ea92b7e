-- Sign-in codes sent to a member's own chat for the web page, each kept only as its hash
-- (with the member's id). A member has one open code at most: a new one marks the earlier
-- `replaced`, but the rows stay until they expire, so the page can count every code sent in
-- its window (how often a code is sent to a chat). `wrong_tries` counts the wrong codes
-- typed (the code locks at the page's limit); `used_at_ms` spends the right one.
CREATE TABLE sign_in_codes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    member_id     TEXT    NOT NULL,
    code_hash     TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    wrong_tries   INTEGER NOT NULL DEFAULT 0,
    used_at_ms    INTEGER,
    replaced      INTEGER NOT NULL DEFAULT 0 CHECK (replaced IN (0, 1))
);
CREATE UNIQUE INDEX sign_in_codes_open ON sign_in_codes (member_id) WHERE replaced = 0;
CREATE INDEX sign_in_codes_made ON sign_in_codes (member_id, created_at_ms);
CREATE INDEX sign_in_codes_expiry ON sign_in_codes (expires_at_ms);

-- One-time sign-in links (`hearth web-link`), each kept only as its hash; a link opens one
-- session for `member_id`, once (`used_at_ms`), until `expires_at_ms`.
CREATE TABLE sign_in_links (
    link_hash     TEXT    PRIMARY KEY,
    member_id     TEXT    NOT NULL,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    used_at_ms    INTEGER
);
CREATE INDEX sign_in_links_expiry ON sign_in_links (expires_at_ms);

-- The web page's sessions, under their cookie's hash (a copy of the table opens none). `id`
-- is the public name the settings page signs a session out by; `csrf_token` is carried by
-- each form; `signed_in_with` says how: 'telegram', 'matrix' or 'link'.
CREATE TABLE web_sessions (
    cookie_hash    TEXT    PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    member_id      TEXT    NOT NULL,
    csrf_token     TEXT    NOT NULL,
    signed_in_with TEXT    NOT NULL,
    created_at_ms  INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL
);
CREATE INDEX web_sessions_member ON web_sessions (member_id, created_at_ms);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at_ms);

-- Per-member API tokens (`hearth token`), under their hash; each speaks only as `member_id`.
-- A revoked token (`revoked_at_ms`) stays as a record of what was given and opens nothing.
CREATE TABLE member_tokens (
    token_hash    TEXT    PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    member_id     TEXT    NOT NULL,
    label         TEXT,
    created_at_ms INTEGER NOT NULL,
    revoked_at_ms INTEGER
);
