-- The desk's own state on PostgreSQL, as migrations/sqlite/0001_desk.sql keeps it in SQLite.
-- Each table's `rowid` is the order rows were written in, as SQLite's implicit rowid is there,
-- so that the desk's queries are written once for both.

-- Browser sessions by the SHA-256 of their cookie (the cookie itself is never stored).
CREATE TABLE desk_sessions (
    digest   TEXT PRIMARY KEY,
    person   TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    rowid    BIGSERIAL NOT NULL
);

-- Conversations, made by the desk, and the session (its digest) each was made for.
CREATE TABLE desk_conversations (
    id             TEXT PRIMARY KEY,
    session_digest TEXT NOT NULL,
    made_ms        BIGINT NOT NULL,
    rowid          BIGSERIAL NOT NULL
);
CREATE INDEX desk_conversations_by_session ON desk_conversations (session_digest);

-- Tasks of a server that wait for the person: followed again after a restart, and answerable
-- from the terminal of the inbox's owner (a person's name, or `session DIGEST` on loopback).
CREATE TABLE desk_waits (
    server       TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    conversation TEXT NOT NULL,
    owner        TEXT NOT NULL,
    asked_ms     BIGINT NOT NULL,
    until_ms     BIGINT NOT NULL,
    rowid        BIGSERIAL NOT NULL,
    PRIMARY KEY (server, task_id)
);
