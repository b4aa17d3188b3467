-- Customers, orders and their lines. Money is whole cents; instants are UTC RFC 3339 text
-- ("YYYY-MM-DDTHH:MM:SSZ"), so text order is time order.
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
    total_cents        INTEGER NOT NULL,
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
    line             INTEGER NOT NULL,
    product_id       TEXT NOT NULL,
    product_name     TEXT NOT NULL,
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, line)
);
