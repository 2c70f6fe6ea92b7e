-- A member's own settings from the web page: their time zone (over `family[].timezone`)
-- and the channel whose own chat hearth prefers for what goes to their own chat. A member
-- of the configuration gets a row for them too (the configuration's other values win).
ALTER TABLE members ADD COLUMN timezone TEXT;
ALTER TABLE members ADD COLUMN preferred_channel TEXT;
