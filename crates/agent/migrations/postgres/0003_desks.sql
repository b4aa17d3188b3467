-- A team's desks on one database (migrations/sqlite/0003_desks.sql keeps the same tables).

-- What one desk tells the others (`agent::bus`): a message per row, its id sent by
-- `NOTIFY desk_bus`; rows older than a minute are deleted.
CREATE TABLE desk_bus (
    id      BIGSERIAL PRIMARY KEY,
    body    TEXT NOT NULL,
    made_ms BIGINT NOT NULL
);

-- The desks that live: each renews its row while it runs; a task whose desk's row ran out is
-- taken over by another (`desk_waits.desk`).
CREATE TABLE desk_instances (
    id             TEXT PRIMARY KEY,
    alive_until_ms BIGINT NOT NULL
);

-- Which desk follows a task that waits for the person (none: whichever desk starts next).
ALTER TABLE desk_waits ADD COLUMN desk TEXT;

-- A conversation's turns (the person's message, the reply) as the model reads them back, so
-- that any desk goes on with it.
CREATE TABLE desk_turns (
    conversation TEXT NOT NULL,
    asked        TEXT NOT NULL,
    answered     TEXT NOT NULL,
    rowid        BIGSERIAL NOT NULL
);
CREATE INDEX desk_turns_by_conversation ON desk_turns (conversation, rowid);
