-- The family as the database has it, for every worker. `version` moves with each change of
-- the members or of the codes that add one, in the change's own transaction (which also
-- takes this row first, so changes of the family are made one after the other); a worker
-- reads it before it authorises a request and reads the members again when it moved. No
-- row yet is version 0.
CREATE TABLE family_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);

-- A `/link` code used from another account of the platform where its member has one
-- already: the account (`telegram:<id>`, `matrix:<id>`) waiting for the member's yes from
-- the account they have.
ALTER TABLE invites ADD COLUMN switch_to TEXT;

-- Wrong sign-in codes typed on the web page: for whom and from which address, counted
-- per member, per address and overall by every worker. Kept for a day.
CREATE TABLE sign_in_failures (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    member_id TEXT    NOT NULL,
    address   TEXT    NOT NULL,
    at_ms     INTEGER NOT NULL
);
CREATE INDEX sign_in_failures_at ON sign_in_failures (at_ms);

-- Wrong invite codes (`/join` in chat, Join on the web page): from which account or
-- address, counted per sender and overall by every worker. Kept for a day.
CREATE TABLE join_failures (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT    NOT NULL,
    at_ms  INTEGER NOT NULL
);
CREATE INDEX join_failures_at ON join_failures (at_ms);

-- A message carrying a code or a sign-in link: its text is kept only until it is
-- delivered (or given up), then replaced in the same write.
ALTER TABLE outbox ADD COLUMN secret INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1));
