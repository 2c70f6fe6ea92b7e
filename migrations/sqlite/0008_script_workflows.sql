-- Where each member's family-script workflow stands in a conversation (the script
-- offered, selected, its parameters, the last run): one row per conversation and member,
-- replaced at every step, dropped by /cancel or once older than scripts.state_ttl_hours.
CREATE TABLE script_workflows (
    conversation_key TEXT    NOT NULL,
    member_id        TEXT    NOT NULL,
    -- JSON: the workflow state, whose shape the scripts toolset owns.
    state            TEXT    NOT NULL CHECK (json_type(state) = 'object'),
    updated_at_ms    INTEGER NOT NULL,
    PRIMARY KEY (conversation_key, member_id)
) WITHOUT ROWID;
-- Housekeeping deletes every workflow left alone for too long.
CREATE INDEX script_workflows_updated ON script_workflows (updated_at_ms);
