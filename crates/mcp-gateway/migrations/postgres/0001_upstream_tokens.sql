-- Each person's own tokens for an upstream that signs people in one by one: sealed
-- (XChaCha20-Poly1305 under the gateway's state keys, the owner and upstream as associated
-- data), so the database alone gives no token away.
CREATE TABLE upstream_tokens (
    owner TEXT NOT NULL,
    upstream TEXT NOT NULL,
    sealed TEXT NOT NULL,
    saved_at BIGINT NOT NULL,
    PRIMARY KEY (owner, upstream)
);
