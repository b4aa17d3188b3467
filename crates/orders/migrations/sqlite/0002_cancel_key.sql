-- The idempotency key of the step that cancelled an order (a cancellation asked again under
-- the same key, after its server stopped, finds it done and writes nothing).
ALTER TABLE orders ADD COLUMN cancel_key TEXT;
