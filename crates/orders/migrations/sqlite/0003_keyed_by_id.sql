-- Customers, orders and their lines stored in their primary keys (WITHOUT ROWID): a lookup by ID
-- descends one b-tree instead of the key's index and then the table, on the reads and writes
-- every call makes. Same columns and constraints as before; the rows are copied.
--
-- Migrations run with foreign keys enforced, and dropping a table deletes its rows first, so
-- the new tables refer to each other until the old ones are gone (nothing refers to an old
-- table when it is dropped), and the renames then carry the references over.
CREATE TABLE customers_by_id (
    customer_id TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL,
    tier        TEXT NOT NULL CHECK (tier IN ('GOLD', 'SILVER', 'STANDARD'))
) WITHOUT ROWID;

CREATE TABLE orders_by_id (
    order_id           TEXT PRIMARY KEY,
    status             TEXT NOT NULL
                       CHECK (status IN ('PENDING', 'PROCESSING', 'SHIPPED', 'DELIVERED', 'CANCELLED')),
    customer_id        TEXT NOT NULL REFERENCES customers_by_id (customer_id),
    total_cents        INTEGER NOT NULL,
    created_at         TEXT NOT NULL,
    last_updated       TEXT NOT NULL,
    carrier            TEXT,
    tracking_number    TEXT,
    shipped_on         TEXT,
    estimated_delivery TEXT,
    cancellation_note  TEXT,
    cancel_key         TEXT
) WITHOUT ROWID;

CREATE TABLE order_items_by_id (
    order_id         TEXT NOT NULL REFERENCES orders_by_id (order_id) ON DELETE CASCADE,
    line             INTEGER NOT NULL,
    product_id       TEXT NOT NULL,
    product_name     TEXT NOT NULL,
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, line)
) WITHOUT ROWID;

INSERT INTO customers_by_id (customer_id, name, email, tier)
    SELECT customer_id, name, email, tier FROM customers;
INSERT INTO orders_by_id (order_id, status, customer_id, total_cents, created_at, last_updated,
                          carrier, tracking_number, shipped_on, estimated_delivery,
                          cancellation_note, cancel_key)
    SELECT order_id, status, customer_id, total_cents, created_at, last_updated,
           carrier, tracking_number, shipped_on, estimated_delivery,
           cancellation_note, cancel_key
    FROM orders;
INSERT INTO order_items_by_id (order_id, line, product_id, product_name, quantity, unit_price_cents)
    SELECT order_id, line, product_id, product_name, quantity, unit_price_cents FROM order_items;

DROP TABLE order_items;
DROP TABLE orders;
DROP TABLE customers;

ALTER TABLE customers_by_id RENAME TO customers;
ALTER TABLE orders_by_id RENAME TO orders;
ALTER TABLE order_items_by_id RENAME TO order_items;

CREATE INDEX orders_by_customer ON orders (customer_id, created_at);
CREATE INDEX orders_by_status ON orders (status, created_at);
