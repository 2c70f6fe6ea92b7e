-- Each stored intents plan has a version: a write names the version it read and is refused
-- when the plan changed meanwhile (cancelled by /cancel), instead of overwriting the cancel.
-- Plans stored before are at version 1.
ALTER TABLE plan_executions ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
