-- The intents engine: plan executions (steps, statuses, the step reached, each tool call's
-- idempotency key, in `plan` as JSON) so a plan waiting for the member resumes after a
-- restart; and the records its data source reads from hearth's own database.
CREATE TABLE plan_executions (
    plan_id          TEXT    PRIMARY KEY,
    conversation_key TEXT    NOT NULL,
    member_id        TEXT    NOT NULL,
    profile_id       TEXT    NOT NULL,
    intent_id        TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    current_index    INTEGER NOT NULL,
    plan             TEXT    NOT NULL,
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX plan_executions_open ON plan_executions (conversation_key, member_id, status);

CREATE TABLE intent_records (
    collection TEXT NOT NULL,
    id         TEXT NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (collection, id)
) WITHOUT ROWID;

-- Who answers a confirmation instead of its member, from their own chats (a JSON list of
-- member ids): the parents a child's request is escalated to. '[]' for every other one.
ALTER TABLE pending_actions ADD COLUMN approvers TEXT NOT NULL DEFAULT '[]';
