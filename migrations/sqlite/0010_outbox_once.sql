-- A message a running turn says before its answer (an intents plan's `pre`) is stored once
-- under a key naming what it says (the plan step): a retry of the turn after a stop finds it
-- there and does not say it again.
ALTER TABLE outbox ADD COLUMN once_key TEXT;
CREATE UNIQUE INDEX outbox_once_key ON outbox (once_key) WHERE once_key IS NOT NULL;
