-- The turn journal: the state of a running turn, saved after each LLM round and around
-- each tool call, so a turn resumed after a crash or retried never runs a completed call
-- again. A message's entry goes when its turn ends (answered, given up or suspended), in
-- the statement that ends it.
CREATE TABLE turn_journal (
    inbox_id      TEXT    PRIMARY KEY REFERENCES inbox (id),
    state         TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER inbox_turn_ended_clears_journal
AFTER UPDATE OF status ON inbox
WHEN NEW.status IN ('answered', 'failed', 'suspended')
BEGIN
    DELETE FROM turn_journal WHERE inbox_id = NEW.id;
END;
