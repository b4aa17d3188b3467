-- A team's desks on one database: the tables of migrations/postgres/0003_desks.sql, so that the
-- desk's statements are written once (a desk on SQLite has no other desks to tell).

CREATE TABLE desk_bus (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    body    TEXT NOT NULL,
    made_ms INTEGER NOT NULL
);

CREATE TABLE desk_instances (
    id             TEXT PRIMARY KEY,
    alive_until_ms INTEGER NOT NULL
);

ALTER TABLE desk_waits ADD COLUMN desk TEXT;

CREATE TABLE desk_turns (
    conversation TEXT NOT NULL,
    asked        TEXT NOT NULL,
    answered     TEXT NOT NULL
);
CREATE INDEX desk_turns_by_conversation ON desk_turns (conversation);
