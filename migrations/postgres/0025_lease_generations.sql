-- Leases judged on the database's clock and fenced (ports::Coordination). Expiry times
-- are now hearth_now_ms(), the database's own clock, never a worker's; each lease carries
-- the generation it was taken at, from one sequence, so no generation is ever given twice
-- (a lease handed back and taken again gets a new one).
CREATE FUNCTION hearth_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT $$;

CREATE SEQUENCE lease_generations;

ALTER TABLE leases ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
UPDATE leases SET generation = nextval('lease_generations');
ALTER TABLE leases ALTER COLUMN generation DROP DEFAULT;
