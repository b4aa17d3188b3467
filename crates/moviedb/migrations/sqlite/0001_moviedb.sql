-- The movie database. Ratings are REAL 0-10; a review or watch-list entry names exactly one
-- movie or show, at most once per user.
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    username      TEXT NOT NULL UNIQUE,
    email         TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('USER', 'ADMIN'))
);

CREATE TABLE people (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL,
    birth_year   INTEGER,
    biography    TEXT,
    photo_url    TEXT,
    country_code TEXT
);

CREATE TABLE movies (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    title        TEXT NOT NULL,
    release_year INTEGER NOT NULL,
    genre        TEXT NOT NULL,
    rating       REAL,
    runtime      INTEGER,
    plot         TEXT,
    poster_url   TEXT,
    tmdb_id      INTEGER
);

CREATE TABLE movie_directors (
    movie_id  INTEGER NOT NULL REFERENCES movies (id) ON DELETE CASCADE,
    person_id INTEGER NOT NULL REFERENCES people (id),
    PRIMARY KEY (movie_id, person_id)
);

CREATE TABLE movie_cast (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    movie_id       INTEGER NOT NULL REFERENCES movies (id) ON DELETE CASCADE,
    person_id      INTEGER NOT NULL REFERENCES people (id),
    character_name TEXT
);

CREATE TABLE tv_shows (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    title      TEXT NOT NULL,
    genre      TEXT NOT NULL,
    rating     REAL,
    poster_url TEXT,
    tmdb_id    INTEGER,
    start_year INTEGER NOT NULL,
    end_year   INTEGER,
    seasons    INTEGER NOT NULL,
    plot       TEXT
);

CREATE TABLE tv_show_creators (
    tv_show_id INTEGER NOT NULL REFERENCES tv_shows (id) ON DELETE CASCADE,
    person_id  INTEGER NOT NULL REFERENCES people (id),
    PRIMARY KEY (tv_show_id, person_id)
);

CREATE TABLE tv_show_cast (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    tv_show_id     INTEGER NOT NULL REFERENCES tv_shows (id) ON DELETE CASCADE,
    person_id      INTEGER NOT NULL REFERENCES people (id),
    character_name TEXT
);

CREATE TABLE episodes (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    tv_show_id     INTEGER NOT NULL REFERENCES tv_shows (id) ON DELETE CASCADE,
    season_number  INTEGER NOT NULL,
    episode_number INTEGER NOT NULL,
    title          TEXT NOT NULL,
    overview       TEXT,
    runtime        INTEGER,
    air_year       INTEGER
);

CREATE TABLE reviews (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    score      INTEGER NOT NULL CHECK (score BETWEEN 1 AND 10),
    comment    TEXT,
    created_at TEXT NOT NULL,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    movie_id   INTEGER REFERENCES movies (id) ON DELETE CASCADE,
    tv_show_id INTEGER REFERENCES tv_shows (id) ON DELETE CASCADE,
    CHECK ((movie_id IS NULL) <> (tv_show_id IS NULL)),
    UNIQUE (user_id, movie_id),
    UNIQUE (user_id, tv_show_id)
);

CREATE TABLE watchlist_items (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    movie_id   INTEGER REFERENCES movies (id) ON DELETE CASCADE,
    tv_show_id INTEGER REFERENCES tv_shows (id) ON DELETE CASCADE,
    status     TEXT NOT NULL CHECK (status IN ('WANT_TO_WATCH', 'WATCHED')),
    CHECK ((movie_id IS NULL) <> (tv_show_id IS NULL)),
    UNIQUE (user_id, movie_id),
    UNIQUE (user_id, tv_show_id)
);

CREATE INDEX reviews_movie ON reviews (movie_id);
CREATE INDEX reviews_tv_show ON reviews (tv_show_id);
CREATE INDEX movie_cast_person ON movie_cast (person_id);
CREATE INDEX movie_directors_person ON movie_directors (person_id);
