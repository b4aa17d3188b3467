-- The desk's own state, kept so that a question waits for its person across restarts.

-- Browser sessions by the SHA-256 of their cookie (the cookie itself is never stored).
CREATE TABLE desk_sessions (
    digest   TEXT PRIMARY KEY,
    person   TEXT NOT NULL,
    until_ms INTEGER NOT NULL
);

-- Conversations, made by the desk, and the session (its digest) each was made for.
CREATE TABLE desk_conversations (
    id             TEXT PRIMARY KEY,
    session_digest TEXT NOT NULL,
    made_ms        INTEGER NOT NULL
);
CREATE INDEX desk_conversations_by_session ON desk_conversations (session_digest);

-- Tasks of a server that wait for the person: followed again after a restart, and answerable
-- from the terminal of the inbox's owner (a person's name, or `session DIGEST` on loopback).
CREATE TABLE desk_waits (
    server       TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    conversation TEXT NOT NULL,
    owner        TEXT NOT NULL,
    asked_ms     INTEGER NOT NULL,
    until_ms     INTEGER NOT NULL,
    PRIMARY KEY (server, task_id)
);
