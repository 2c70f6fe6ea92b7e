-- Several workers on one database (ports::Coordination): the workers alive, and the
-- leases each holds until it expires. Times are the workers' clocks, in milliseconds.
CREATE TABLE workers (
    id            TEXT   PRIMARY KEY,
    pid           BIGINT NOT NULL,
    host          TEXT   NOT NULL,
    http_address  TEXT,
    started_at_ms BIGINT NOT NULL,
    seen_at_ms    BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);

CREATE TABLE leases (
    name          TEXT   PRIMARY KEY,
    worker_id     TEXT   NOT NULL,
    taken_at_ms   BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX leases_worker ON leases (worker_id);
