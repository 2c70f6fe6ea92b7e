-- The confirmation a suspended message waits for is read by its message (GET /inbound/{id}).
CREATE INDEX pending_actions_inbox ON pending_actions (inbox_id, created_at_ms);
