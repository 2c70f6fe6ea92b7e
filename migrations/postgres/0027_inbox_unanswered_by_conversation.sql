-- A conversation's unanswered messages, read with every message stored while its
-- conversation is held (`Inbox::accept_reading`) and when a conversation is taken: found
-- through its own entries, not by walking every conversation's (`inbox_unanswered`), whose
-- entries of rows answered since stay until vacuum.
CREATE INDEX inbox_unanswered_by_conversation ON inbox (channel, conversation_id, seq)
    WHERE status = 'accepted';
