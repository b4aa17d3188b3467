-- Who may sign in to the web UI, when the desk's people are kept in its database (a team's
-- desks sharing one PostgreSQL) instead of a people file: a name and its Argon2id hash (a PHC
-- string, as `support-agent people add` writes it).
CREATE TABLE desk_people (
    name TEXT PRIMARY KEY,
    hash TEXT NOT NULL
);
