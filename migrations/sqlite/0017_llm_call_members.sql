-- Whose message each model call answered, for the family page's usage per member and day.
-- Calls recorded before this migration have none.
ALTER TABLE llm_calls ADD COLUMN member_id TEXT;
CREATE INDEX llm_calls_member_day ON llm_calls (member_id, at_ms);
CREATE INDEX inbox_member_received ON inbox (member_id, received_at_ms);
