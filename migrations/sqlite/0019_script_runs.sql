-- Family script runs once they ended: the script, who ran it, the values it got, how it
-- ended (done, failed with its error, declined, expired, unknown after a stop) and when;
-- shown to the parents on the web page and pruned by retention like history. `run_key`
-- is the run's tool call, so a replayed call records nothing twice.
CREATE TABLE script_runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key          TEXT    NOT NULL UNIQUE,
    conversation_key TEXT    NOT NULL,
    member_id        TEXT    NOT NULL,
    script           TEXT    NOT NULL,
    run_values       TEXT    NOT NULL,
    outcome          TEXT    NOT NULL
        CHECK (outcome IN ('done', 'failed', 'declined', 'expired', 'unknown')),
    error            TEXT,
    at_ms            INTEGER NOT NULL
);
CREATE INDEX script_runs_newest ON script_runs (at_ms, id);
