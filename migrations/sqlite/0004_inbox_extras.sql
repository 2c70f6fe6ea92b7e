-- What came with a message beyond its text (the message it replies to, attachments), as
-- JSON; NULL for plain text.
ALTER TABLE inbox ADD COLUMN extras TEXT;
