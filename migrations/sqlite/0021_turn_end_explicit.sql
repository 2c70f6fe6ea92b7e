-- A turn's end writes its history and clears its journal by explicit statements in the
-- transaction that ends it, as on PostgreSQL (storage/sql/inbox.rs), no longer by
-- triggers of the inbox's status.
DROP TRIGGER inbox_answered_writes_history;
DROP TRIGGER inbox_turn_ended_clears_journal;
