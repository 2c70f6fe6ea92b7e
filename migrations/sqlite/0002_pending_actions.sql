-- Suspended turns: a tool call waiting for the family member's confirmation.
-- The turn's state is stored with it, so the answer resumes it even after a restart.

CREATE TABLE pending_actions (
    id               TEXT    PRIMARY KEY,
    inbox_id         TEXT    NOT NULL REFERENCES inbox (id),
    member_id        TEXT    NOT NULL,
    channel          TEXT    NOT NULL,
    conversation_id  TEXT    NOT NULL,
    profile_id       TEXT    NOT NULL,
    tool_name        TEXT    NOT NULL,
    -- Exactly the arguments shown to the member; the approved call runs these.
    arguments        TEXT    NOT NULL,
    prompt           TEXT    NOT NULL,
    turn_state       TEXT    NOT NULL,
    -- pending: asked; answered: decision recorded; consumed: the turn has resumed with it.
    status           TEXT    NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'answered', 'consumed')),
    decision         TEXT    CHECK (decision IN ('approved', 'denied', 'expired')),
    expires_at_ms    INTEGER NOT NULL,
    created_at_ms    INTEGER NOT NULL,
    answered_at_ms   INTEGER
);
CREATE INDEX pending_actions_open ON pending_actions (status, expires_at_ms)
    WHERE status IN ('pending', 'answered');
