-- State every instance on this database shares (PostgreSQL only; on SQLite, one process holds
-- it in memory): a token bucket per rate-limited key, and the model-written review summaries
-- with the moment each stops being served.
CREATE TABLE rate_buckets (
    bucket TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    at     TIMESTAMPTZ NOT NULL,
    taken  BOOLEAN NOT NULL
);

CREATE TABLE summary_cache (
    key        TEXT PRIMARY KEY,
    prose      TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX summary_cache_expiry ON summary_cache (expires_at);
