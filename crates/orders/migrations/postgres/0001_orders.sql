-- Customers, orders and their lines, as in the SQLite schema: money in whole cents (BIGINT,
-- read as i64 on both backends); instants as UTC RFC 3339 text ("YYYY-MM-DDTHH:MM:SSZ"), so
-- text order is time order and both backends return the same strings.
CREATE TABLE customers (
    customer_id TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL,
    tier        TEXT NOT NULL CHECK (tier IN ('GOLD', 'SILVER', 'STANDARD'))
);

CREATE TABLE orders (
    order_id           TEXT PRIMARY KEY,
    status             TEXT NOT NULL
                       CHECK (status IN ('PENDING', 'PROCESSING', 'SHIPPED', 'DELIVERED', 'CANCELLED')),
    customer_id        TEXT NOT NULL REFERENCES customers (customer_id),
    total_cents        BIGINT NOT NULL,
    created_at         TEXT NOT NULL,
    last_updated       TEXT NOT NULL,
    carrier            TEXT,
    tracking_number    TEXT,
    shipped_on         TEXT,
    estimated_delivery TEXT,
    cancellation_note  TEXT
);

CREATE INDEX orders_by_customer ON orders (customer_id, created_at);
CREATE INDEX orders_by_status ON orders (status, created_at);

CREATE TABLE order_items (
    order_id         TEXT NOT NULL REFERENCES orders (order_id) ON DELETE CASCADE,
    line             BIGINT NOT NULL,
    product_id       TEXT NOT NULL,
    product_name     TEXT NOT NULL,
    quantity         BIGINT NOT NULL CHECK (quantity > 0),
    unit_price_cents BIGINT NOT NULL,
    PRIMARY KEY (order_id, line)
);
