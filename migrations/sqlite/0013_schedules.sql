-- Reminders and scheduled tasks. A schedule is what a member asked for; its next
-- occurrence is `next_due_ms` (NULL once it will not fire again). A firing is one
-- occurrence that happened: claimed by moving `next_due_ms` on from the value it was read
-- at, in the transaction that stores the firing and what it sends, so an occurrence fires
-- once whatever stops hearth and however many hearths share the database.
CREATE TABLE schedules (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    kind                   TEXT    NOT NULL CHECK (kind IN ('reminder', 'task')),
    -- Who it is for, and who set it (a parent may set one for another member).
    member_id              TEXT    NOT NULL,
    set_by                 TEXT    NOT NULL,
    -- The reminder's words, or the task's prompt.
    text                   TEXT    NOT NULL,
    -- A task's profile.
    profile_id             TEXT,
    -- Where it is delivered.
    channel                TEXT    NOT NULL,
    conversation_id        TEXT    NOT NULL,
    -- The member's IANA zone when it was set: every local time of it is in this zone.
    zone                   TEXT    NOT NULL,
    -- A recurrence and the local date and time it starts at (both NULL: once).
    recurrence             TEXT,
    start_local            TEXT,
    next_due_ms            INTEGER,
    status                 TEXT    NOT NULL DEFAULT 'active'
                           CHECK (status IN ('active', 'finished', 'cancelled')),
    escalate_after_minutes INTEGER,
    -- The occurrence (`<schedule>.<due ms>`) whose snooze this one-off schedule is.
    snoozed_from           TEXT,
    -- The tool call that set it: the same call run again finds it instead of a second one.
    once_key               TEXT    UNIQUE,
    version                INTEGER NOT NULL DEFAULT 1,
    created_at_ms          INTEGER NOT NULL,
    updated_at_ms          INTEGER NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_due_ms) WHERE status = 'active';
CREATE INDEX schedules_member ON schedules (member_id, status);
CREATE INDEX schedules_set_by ON schedules (set_by, status);

-- A firing is named by its schedule and occurrence: one firing per occurrence, ever.
CREATE TABLE schedule_firings (
    schedule_id     INTEGER NOT NULL REFERENCES schedules (id),
    due_ms          INTEGER NOT NULL,
    fired_at_ms     INTEGER NOT NULL,
    -- on_time | late (sent after its time, within the grace) | missed (told, not sent)
    timing          TEXT    NOT NULL CHECK (timing IN ('on_time', 'late', 'missed')),
    -- open (waiting for Done or Snooze) | done | snoozed | closed (nothing to answer)
    state           TEXT    NOT NULL CHECK (state IN ('open', 'done', 'snoozed', 'closed')),
    -- When the parents are told it was not acknowledged, while it is open.
    escalate_at_ms  INTEGER,
    escalated_at_ms INTEGER,
    -- A task's turn: the inbox message it started.
    inbox_id        TEXT,
    settled_at_ms   INTEGER,
    PRIMARY KEY (schedule_id, due_ms)
);
CREATE INDEX schedule_firings_escalations ON schedule_firings (escalate_at_ms)
    WHERE state = 'open' AND escalated_at_ms IS NULL AND escalate_at_ms IS NOT NULL;
CREATE INDEX schedule_firings_open ON schedule_firings (schedule_id) WHERE state = 'open';
